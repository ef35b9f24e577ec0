"""Canonical URLs and link resolution: :func:`canonicalize` (normalised only
where RFC 3986 6.2.2 says two spellings are one URI; :class:`InvalidURL` for
URLs no crawler can fetch), :func:`url_key` (the URL-seen identity) and
:func:`resolve` (an ``href`` made absolute)."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from ipaddress import IPv6Address
from urllib.parse import urljoin, urlparse, urlsplit, urlunparse, uses_netloc, uses_relative

from w3lib.url import canonicalize_url, safe_url_string

__all__ = ["InvalidURL", "Resolver", "canonicalize", "resolve", "url_key"]

#: Distinct URLs whose canonical form is kept (about 300 bytes each).
CACHE_SIZE = 16384
#: Distinct (scheme, host, directory, href) whose resolution is kept (about 300 bytes each).
RESOLVE_CACHE_SIZE = 4096

_DEFAULT_PORTS = {"http": 80, "https": 443}
# RFC 3986 reg-name characters after w3lib; anything else cannot be looked up in the DNS
_REG_NAME = re.compile(r"[a-z0-9._~!$&'()*+,;=%-]+")
# browsers strip C0 controls and space around an href and drop tab/CR/LF in it (WHATWG URL)
_STRIP = "".join(map(chr, range(0x21)))
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
# For http(s), browsers read a backslash before the query as a slash.
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")
_BEFORE_QUERY = re.compile(r"[^?#]*")
# a reference with a non-empty authority (urlsplit's reading): "http://h...", "//h..."
_HAS_NETLOC = re.compile(r"(?:[a-zA-Z][a-zA-Z0-9+.-]*:)?//[^/?#]")
# an absolute path alone (no query, params, fragment; with no "/." no dot segment either)
_PLAIN_PATH = re.compile(r"/[^?#;]*")
# a relative path alone, no scheme (no ":"), not starting with a dot segment
_PLAIN_RELATIVE = re.compile(r"[^/?#;:.][^?#;:]*")


class InvalidURL(ValueError):
    """A URL that cannot be canonicalised, hence not crawled."""


def canonicalize(url: str, encoding: str | None = None) -> str:
    """The canonical form of an absolute URL (idempotent); :class:`InvalidURL` if none."""
    # ASCII encodes alike in every ASCII-compatible encoding: one cache entry for both callers
    if encoding in _ASCII_COMPATIBLE and url.isascii():
        encoding = None
    return _canonicalize(url, encoding)


#: encodings in which ASCII text has its ASCII bytes (Scrapy's names for the usual ones)
_ASCII_COMPATIBLE = frozenset({"utf-8", "utf8", "ascii", "cp1252", "windows-1252", "latin-1", "latin1",
                               "iso-8859-1", "iso8859-1"})


@lru_cache(maxsize=CACHE_SIZE)
def _canonicalize(url: str, encoding: str | None) -> str:
    try:
        safe = safe_url_string(url.strip(), encoding=encoding or "utf-8")
        parts = urlsplit(safe)
        port = parts.port  # ValueError for a port out of range or not a number
    except (ValueError, UnicodeError) as err:
        raise InvalidURL(f"cannot canonicalise {url!r}: {err}") from err
    scheme, netloc = parts.scheme.lower(), parts.netloc
    if not scheme:
        raise InvalidURL(f"no scheme in {url!r}")
    host = parts.hostname
    if not host:
        raise InvalidURL(f"no host in {url!r}")
    ipv6 = not _REG_NAME.fullmatch(host)
    if ipv6 and not _is_ipv6(host, netloc):
        raise InvalidURL(f"invalid host {host!r} in {url!r}")
    netloc = _clean_netloc(netloc, scheme, port)
    if ipv6:  # one spelling per address: "[::0:1]" is "[::1]"
        netloc = netloc.replace(f"[{host}]", f"[{IPv6Address(host).compressed}]")
    path = _remove_dot_segments(parts.path) or "/"
    if "%" in path:
        path = _ESCAPE.sub(_upper_escape, path)
    query = parts.query
    if "%" in query:
        query = _ESCAPE.sub(_upper_escape, query)
    return f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"


_ESCAPE = re.compile(r"%[0-9a-f][0-9a-fA-F]|%[0-9A-F][a-f]")


def url_key(canonical: str) -> str:
    """The URL-seen identity of a :func:`canonicalize` result."""
    if "?" not in canonical and "%" not in canonical and ";" not in canonical:
        return canonical
    return _url_key(canonical)


@lru_cache(maxsize=CACHE_SIZE)
def _url_key(canonical: str) -> str:
    key = canonicalize_url(canonical)
    if "%" not in key:  # no escape to change: w3lib's form is its own (tests/test_canonical.py)
        return key
    # "%a%41" -> "%aA", itself an escape the next pass changes: repeat until stable
    for _ in range(3):
        again = canonicalize_url(key)
        if again == key:
            break
        key = again
    return key


def _upper_escape(match: re.Match[str]) -> str:
    return match.group().upper()


def _clean_netloc(netloc: str, scheme: str, port: int | None) -> str:
    """``netloc`` without the scheme's default port or an empty userinfo
    (``http://:@h/`` is ``http://h/``, ``http://u:@h/`` is ``http://u@h/``)."""
    userinfo, at, hostport = netloc.rpartition("@")
    hostport = hostport.lower()
    if port is not None and _DEFAULT_PORTS.get(scheme) == port or hostport.endswith(":"):
        hostport = hostport.rpartition(":")[0]
    if at and (userinfo.endswith(":") or not userinfo):
        userinfo = userinfo[:-1]
    return f"{userinfo}@{hostport}" if userinfo else hostport


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, ``.`` and ``..`` also when percent-encoded
    (``%2e``): what servers and browsers resolve them to."""
    if "." not in path and "%2" not in path.lower():
        return path
    segments = path.split("/")
    return "/" + "/".join(_without_dots(segments[1:] if path.startswith("/") else segments,
                                        lambda segment: segment.lower().replace("%2e", ".")))


def _without_dots(segments: list[str], dots: Callable[[str], str] = str) -> list[str]:
    """``segments`` with ``.`` and ``..`` (as ``dots`` spells them) applied;
    a trailing dot segment leaves a directory (an empty last segment)."""
    resolved: list[str] = []
    for segment in segments:
        spelled = dots(segment)
        if spelled == "..":
            if resolved:
                resolved.pop()
        elif spelled != ".":
            resolved.append(segment)
    if segments and dots(segments[-1]) in (".", ".."):
        resolved.append("")
    return resolved


def _is_ipv6(host: str, netloc: str) -> bool:
    """A bracketed IPv6 literal (urlsplit's hostname drops the brackets)."""
    if "[" not in netloc:
        return False
    try:
        IPv6Address(host)
    except ValueError:
        return False
    return True


def resolve(base: str, href: str) -> str:
    """``href`` made absolute against ``base`` (not canonical); :class:`InvalidURL` if unparsable."""
    return Resolver(base).resolve(href)


class Resolver:
    """:func:`resolve` against one base, parsed once."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._error: ValueError | None = None
        try:
            parts = urlparse(base)
        except ValueError as err:  # raised per reference, as urljoin would
            self._error = err
            return
        base_segments = parts.path.split("/")
        if base_segments[-1] != "":  # the last segment is not a directory
            del base_segments[-1]
        self._scheme, self._netloc = parts.scheme, parts.netloc
        self._http = parts.scheme in ("http", "https")
        self._origin = f"{parts.scheme}://{parts.netloc}" if self._http and parts.netloc else None
        self._base_dir = "/".join(base_segments)  # split("/") gives the segments back
        # the base's directory as urljoin merges a relative path into it (no
        # empty segments inside, dot segments applied); None if it has dot segments
        merged = base_segments + ["x"]
        merged[1:-1] = filter(None, merged[1:-1])
        plain = self._origin is not None and "." not in merged and ".." not in merged
        self._directory = self._origin + "/".join(merged[:-1]) + "/" if plain else None

    def resolve(self, href: str) -> str:
        """``href`` made absolute against the base (see :func:`resolve`)."""
        base = self.base
        href = _clean_href(base, href)
        if not base:
            return href
        if not href:
            return base
        if self._error is not None:
            raise InvalidURL(f"cannot resolve {href!r} against {base!r}: {self._error}") from self._error
        if self._origin is not None and "/." not in href and "//" not in href:
            # what urljoin makes of a plain path, without parsing it
            if _PLAIN_PATH.fullmatch(href):
                return self._origin + href
            if self._directory is not None and _PLAIN_RELATIVE.fullmatch(href):
                return self._directory + href
        try:
            if self._http and _HAS_NETLOC.match(href):
                # a host of its own: neither the base's host nor its directory is read
                # (one cache entry per link, not per link and page host)
                joined = _join(self._scheme, "", None, href)
            else:
                # an absolute path never reads the directory
                joined = _join(self._scheme, self._netloc, None if href[0] == "/" else self._base_dir, href)
            return urljoin(base, href) if joined is None else joined
        except ValueError as err:
            raise InvalidURL(f"cannot resolve {href!r} against {base!r}: {err}") from err


@lru_cache(maxsize=RESOLVE_CACHE_SIZE)
def _join(bscheme: str, bnetloc: str, base_dir: str | None, url: str) -> str | None:
    """``urljoin(base, url)`` (CPython 3.11's algorithm); None where it would read the
    base's path, params or query (left to ``urljoin``)."""
    scheme, netloc, path, params, query, fragment = urlparse(url, bscheme)
    if scheme != bscheme or scheme not in uses_relative:
        return url
    if scheme in uses_netloc:
        if netloc:
            return urlunparse((scheme, netloc, path, params, query, fragment))
        netloc = bnetloc
    if not path and not params:
        return None
    if path[:1] == "/":  # RFC 3986: an absolute path ignores the base's
        segments = path.split("/")
    else:
        segments = base_dir.split("/") + path.split("/")
        # no empty segments inside: they would double slashes on joining
        segments[1:-1] = filter(None, segments[1:-1])
    return urlunparse((scheme, netloc, "/".join(_without_dots(segments)) or "/", params, query, fragment))


def _clean_href(base: str, href: str) -> str:
    """``href`` after the browsers' clean-up (:func:`resolve`)."""
    href = href.strip(_STRIP)
    if "\t" in href or "\n" in href or "\r" in href:
        href = href.translate(_TAB_NEWLINE)
    if "\\" in href:
        href = _backslashes_to_slashes(base, href)
    return href


def _backslashes_to_slashes(base: str, href: str) -> str:
    scheme = _SCHEME.match(href)
    effective = scheme.group() if scheme else base[:6]
    if not effective.lower().startswith(("http:", "https:")):
        return href
    end = _BEFORE_QUERY.match(href).end()
    return href[:end].replace("\\", "/") + href[end:]


def strip_params(url: str, names: frozenset[str]) -> str:
    """``url`` without the query arguments ``names`` (any case) and ``;jsessionid=...``."""
    base, question, query = url.partition("?")
    semicolon = base.find(";")
    if semicolon >= 0 and base[semicolon + 1:].lower().startswith(tuple(names)):
        base = base[:semicolon]
    if not question:
        return base
    kept = [arg for arg in query.split("&")
            if arg and arg.partition("=")[0].lower() not in names]
    return f"{base}?{'&'.join(kept)}" if kept else base
