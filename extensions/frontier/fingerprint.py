"""Host-local 64-bit URL fingerprints (Mercator's URL-seen trick).

``hash(host)`` in the high 24 bits, ``hash(url_key)`` in the low 40
(MurmurHash3), signed to fit SQLite's INTEGER PRIMARY KEY: one host's URLs
sit together in the URL table's B-tree. Pure: no Scrapy.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

import mmh3

from extensions.urls.canonical import canonicalize, url_key
from extensions.urls.split import host_of

HOST_BITS = 24
URL_BITS = 40
_URL_MASK = (1 << URL_BITS) - 1
_HOST_MASK = (1 << HOST_BITS) - 1
#: canonical URLs whose fingerprint is kept (the links of the pages in flight, and then some)
FINGERPRINT_CACHE_SIZE = 4096


def to_signed64(value: int) -> int:
    """An unsigned 64-bit value as SQLite's signed INTEGER."""
    return value - (1 << 64) if value >= (1 << 63) else value


def host_hash(host: str) -> int:
    """The 24 high bits every fingerprint of ``host`` shares."""
    return mmh3.hash(host, 0x5EED, signed=False) & _HOST_MASK


def fingerprint(key: str, host: str) -> int:
    """The signed 64-bit fingerprint of a URL's key (:func:`url_key`)."""
    low = mmh3.hash64(key, 0x1F, signed=False)[0] & _URL_MASK
    return to_signed64((host_hash(host) << URL_BITS) | low)


def url_fingerprint(url: str, method: str = "GET", body: bytes = b"") -> tuple[int, str]:
    """``(fingerprint, host)`` of a URL as requested. The host is the lower
    case host name of the canonical URL. A method other than GET or a body
    makes a different fingerprint (a POST is not its URL's GET)."""
    canonical = canonicalize(url)
    host = host_of(canonical)
    if method != "GET" or body:
        key = f"{method} {url_key(canonical)} {hashlib.sha1(body).hexdigest()}"  # noqa: S324
        return fingerprint(key, host), host
    return canonical_fingerprint(canonical), host  # a new link's: cached by the link recorder


@lru_cache(maxsize=FINGERPRINT_CACHE_SIZE)
def canonical_fingerprint(canonical_url: str) -> int:
    """:func:`url_fingerprint` of a GET of an already canonical URL (an extracted
    link), cached: a site's navigation links recur on each page."""
    return fingerprint(url_key(canonical_url), host_of(canonical_url))
