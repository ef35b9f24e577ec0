"""Host-local signed 64-bit URL fingerprints (Mercator): MurmurHash3 of the
host in the high 24 bits, of the URL key (or a project's fingerprinter,
:func:`use_fingerprinter`) in the low 40, so a host's URLs sit together."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from typing import Any

import mmh3
from scrapy import Request
from scrapy.utils.misc import load_object
from scrapy.utils.request import RequestFingerprinter

from extensions.contentseen.fingerprint import to_signed64
from extensions.urls.canonical import canonicalize, url_key
from extensions.urls.split import host_of

HOST_BITS = 24
URL_BITS = 40
_URL_MASK = (1 << URL_BITS) - 1
_HOST_MASK = (1 << HOST_BITS) - 1
#: canonical URLs whose fingerprint is kept (the links of the pages in flight, and then some)
FINGERPRINT_CACHE_SIZE = 4096
#: the project's request fingerprinter when it is not Scrapy's default; None: the canonical URL's key
_project: Any = None


class FingerprinterError(Exception):
    """The project's ``REQUEST_FINGERPRINTER_CLASS`` failed on a request."""


def use_fingerprinter(fingerprinter: Any, fingerprinter_class: Any = None) -> None:
    """Key URLs by ``fingerprinter`` (None or Scrapy's default: the canonical URL), process-wide."""
    global _project
    if fingerprinter_class is not None and load_object(fingerprinter_class) is RequestFingerprinter:
        fingerprinter = None
    _project = fingerprinter
    canonical_fingerprint.cache_clear()


def use_project_fingerprinter(settings: Any) -> None:
    """:func:`use_fingerprinter` with the project's class, for a command that reads a crawl."""
    from scrapy import Spider  # noqa: PLC0415 - a command's, not a crawl's
    from scrapy.crawler import Crawler  # noqa: PLC0415
    from scrapy.utils.misc import build_from_crawler  # noqa: PLC0415

    cls = load_object(settings["REQUEST_FINGERPRINTER_CLASS"])
    use_fingerprinter(None if cls is RequestFingerprinter else build_from_crawler(cls, Crawler(Spider, settings)))


def _project_low_bits(request: Request) -> int:
    """The first 40 bits of the project's fingerprint of ``request``."""
    try:
        digest = _project.fingerprint(request)
    except Exception as err:
        raise FingerprinterError(f"REQUEST_FINGERPRINTER_CLASS failed on {request.url}: {err!r}") from err
    return int.from_bytes(digest[:5], "big") & _URL_MASK


def host_hash(host: str) -> int:
    """The 24 high bits every fingerprint of ``host`` shares."""
    return mmh3.hash(host, 0x5EED, signed=False) & _HOST_MASK


def fingerprint(key: str, host: str) -> int:
    """The signed 64-bit fingerprint of a URL's key (:func:`url_key`)."""
    return _with_host(host, mmh3.hash64(key, 0x1F, signed=False)[0] & _URL_MASK)


def _with_host(host: str, low: int) -> int:
    return to_signed64((host_hash(host) << URL_BITS) | low)


def url_fingerprint(url: str, method: str = "GET", body: bytes = b"",
                    request: Request | None = None) -> tuple[int, str]:
    """``(fingerprint, host)`` of a URL as requested; ValueError (no host) or FingerprinterError."""
    # a project's fingerprinter sees every request, a host-less one too, as with Scrapy's scheduler
    low = _project_low_bits(request) if _project is not None and request is not None else None
    canonical = canonicalize(url)
    host = host_of(canonical)
    if _project is not None:
        if low is None:
            low = _project_low_bits(Request(canonical, method=method, body=body))
        return _with_host(host, low), host
    if method != "GET" or body:
        key = f"{method} {url_key(canonical)} {hashlib.sha1(body).hexdigest()}"  # noqa: S324
        return fingerprint(key, host), host
    return canonical_fingerprint(canonical), host  # a new link's: cached by the link recorder


def default_fingerprint(url: str) -> int:
    """The fingerprint of a GET of ``url`` without a project's fingerprinter."""
    canonical = canonicalize(url)
    if _project is None:
        return canonical_fingerprint(canonical)  # the link recorder's, cached
    return fingerprint(url_key(canonical), host_of(canonical))


@lru_cache(maxsize=FINGERPRINT_CACHE_SIZE)
def canonical_fingerprint(canonical_url: str) -> int:
    """:func:`url_fingerprint` of a GET of an already canonical URL, cached."""
    if _project is not None:
        return _with_host(host_of(canonical_url), _project_low_bits(Request(canonical_url)))
    return fingerprint(url_key(canonical_url), host_of(canonical_url))
