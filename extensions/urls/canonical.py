"""Canonical URLs and link resolution: one spelling per document.

Mercator's URL-seen test only works if the same document always has the same
URL string. :func:`canonicalize` is w3lib's ``canonicalize_url`` (query
arguments sorted, percent-escapes normalised, non-ASCII encoded, IDN host to
punycode, dot segments resolved, fragment dropped, lower-case host) plus what
it leaves out: the default port is removed (``:80`` for http, ``:443`` for
https), an empty userinfo (``http://:@h/``) is removed, and URLs no crawler
can fetch (no scheme, no host, a bad port, a host that is not a host name)
raise :class:`InvalidURL` instead of passing through.

:func:`resolve` turns an ``href`` into an absolute URL: ``urljoin`` (RFC 3986
section 5.2) after the whitespace clean-up browsers do. :class:`Resolver`
does the same for the links of one page, splitting the page's base once.
Results of both are cached (a site's navigation links repeat on every
page). Pure: no Scrapy.
"""

from __future__ import annotations

import re
from functools import lru_cache
from ipaddress import IPv6Address
from urllib.parse import urljoin, urlparse, urlsplit, urlunparse, uses_netloc, uses_relative

from w3lib.url import canonicalize_url

__all__ = ["InvalidURL", "Resolver", "canonicalize", "host_of", "resolve"]

#: Distinct URLs whose canonical form is kept (about 300 bytes each).
CACHE_SIZE = 16384
#: Distinct (scheme, host, directory, href) whose resolution is kept (about 300 bytes each).
RESOLVE_CACHE_SIZE = 4096

_DEFAULT_PORTS = {"http": 80, "https": 443}
# A registered name after w3lib (lower-case, punycode, percent-escaped):
# RFC 3986 reg-name characters only. Anything else (a space, a non-ASCII
# label IDNA refused, a stray bracket) cannot be looked up in the DNS.
_REG_NAME = re.compile(r"[a-z0-9._~!$&'()*+,;=%-]+")
# Browsers strip C0 controls and space around an href and drop tab/CR/LF
# anywhere in it (WHATWG URL parser, "basic URL parser" steps 1-3).
_STRIP = "".join(map(chr, range(0x21)))
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
# For http(s), browsers read a backslash before the query as a slash.
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:")
_BEFORE_QUERY = re.compile(r"[^?#]*")


class InvalidURL(ValueError):
    """A URL that cannot be canonicalised, hence not crawled."""


def canonicalize(url: str, encoding: str | None = None) -> str:
    """The canonical form of an absolute URL; :class:`InvalidURL` if none.

    ``encoding`` is the page's, for non-ASCII query strings (what a browser
    sends); the path is always UTF-8. Idempotent: a canonical URL is its own
    canonical form.
    """
    # An ASCII URL encodes the same in every ASCII-compatible encoding: one
    # cache entry for the link extractor's call (the page's encoding) and the
    # frontier's (none) on the same URL, so the second is a cache hit.
    if encoding in _ASCII_COMPATIBLE and url.isascii():
        encoding = None
    return _canonicalize(url, encoding)


#: encodings in which ASCII text has its ASCII bytes (Scrapy's names for the usual ones)
_ASCII_COMPATIBLE = frozenset({"utf-8", "utf8", "ascii", "cp1252", "windows-1252", "latin-1", "latin1",
                               "iso-8859-1", "iso8859-1"})


@lru_cache(maxsize=CACHE_SIZE)
def _canonicalize(url: str, encoding: str | None) -> str:
    try:
        canonical = canonicalize_url(url, encoding=encoding)
        if "%" in canonical:
            # w3lib decodes "%41" to "A" but leaves a stray "%a" before it:
            # "%a%41" -> "%aA", itself an escape that the next pass upper-cases.
            # Repeat until stable (bounded: each pass only shortens escapes).
            for _ in range(3):
                again = canonicalize_url(canonical)
                if again == canonical:
                    break
                canonical = again
        parts = urlsplit(canonical)
        port = parts.port  # ValueError for a port out of range or not a number
    except (ValueError, UnicodeError) as err:
        raise InvalidURL(f"cannot canonicalise {url!r}: {err}") from err
    scheme, netloc = parts.scheme, parts.netloc
    if not scheme:
        raise InvalidURL(f"no scheme in {url!r}")
    host = parts.hostname
    if not host:
        raise InvalidURL(f"no host in {url!r}")
    if not _REG_NAME.fullmatch(host) and not _is_ipv6(host, netloc):
        raise InvalidURL(f"invalid host {host!r} in {url!r}")
    clean = netloc
    if port is not None and _DEFAULT_PORTS.get(scheme) == port:
        clean = clean.rpartition(":")[0]
    if "@" in clean:  # "http://:@h/" is "http://h/", "http://u:@h/" is "http://u@h/"
        userinfo, _, hostport = clean.rpartition("@")
        if userinfo.endswith(":") or not userinfo:
            userinfo = userinfo[:-1]
            clean = f"{userinfo}@{hostport}" if userinfo else hostport
    if clean is netloc and canonical.startswith(scheme):
        return canonical
    # netloc follows "scheme://" in a URL with a host; the rest is kept as is.
    return f"{scheme}://{clean}{canonical[len(scheme) + 3 + len(netloc):]}"


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
    """``href`` made absolute against ``base`` (RFC 3986 section 5.2).

    First, as browsers do (HTML attributes often carry them): surrounding
    C0 controls and spaces are stripped, tabs/newlines inside removed, and
    for http(s) backslashes before the query read as slashes. The result is
    not canonical: pass it to :func:`canonicalize`. :class:`InvalidURL` if
    the reference cannot be parsed (a broken IPv6 literal).
    """
    href = _clean_href(base, href)
    try:
        return urljoin(base, href)
    except ValueError as err:
        raise InvalidURL(f"cannot resolve {href!r} against {base!r}: {err}") from err


class Resolver:
    """:func:`resolve` against one base, for the links of one page.

    Parses the base once and runs the rest of ``urljoin``'s algorithm
    (CPython's, step for step) per reference, so ``Resolver(base).resolve(href)
    == resolve(base, href)`` for every ``href``, raising where it raises.
    """

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
        self._base_dir = "/".join(base_segments)  # split("/") gives the segments back

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
        try:
            # an absolute path or a network-path reference never reads the directory
            joined = _join(self._scheme, self._netloc, None if href[0] == "/" else self._base_dir, href)
            return urljoin(base, href) if joined is None else joined
        except ValueError as err:
            raise InvalidURL(f"cannot resolve {href!r} against {base!r}: {err}") from err


@lru_cache(maxsize=RESOLVE_CACHE_SIZE)
def _join(bscheme: str, bnetloc: str, base_dir: str | None, url: str) -> str | None:
    """``urljoin(base, url)`` for a base with this scheme, netloc and
    directory (CPython 3.11's algorithm); None where the result would read the
    rest of the base (its path, params or query: a reference with neither
    path nor params), which :class:`Resolver` leaves to ``urljoin``.
    ``base_dir`` None: ``url`` starts with "/", which never reads it."""
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
    resolved: list[str] = []
    for segment in segments:
        if segment == "..":
            if resolved:
                resolved.pop()
        elif segment != ".":
            resolved.append(segment)
    if segments[-1] in (".", ".."):  # a relative directory keeps its slash
        resolved.append("")
    return urlunparse((scheme, netloc, "/".join(resolved) or "/", params, query, fragment))


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


def host_of(url: str) -> str:
    """The lower-case host of ``url`` without port or brackets ('' if none)."""
    return urlsplit(url).hostname or ""


#: Query arguments that only carry a session: stripping them keeps one URL
#: per page instead of one per visit (the session-id crawler trap).
SESSION_PARAMS = ("jsessionid", "phpsessid", "aspsessionid", "sessionid", "session_id", "sessid", "sid")


def strip_params(url: str, names: frozenset[str]) -> str:
    """``url`` without the query arguments named in ``names`` (compared case-
    insensitively) and without a ``;jsessionid=...`` path parameter."""
    base, question, query = url.partition("?")
    semicolon = base.find(";")
    if semicolon >= 0 and base[semicolon + 1:].lower().startswith(tuple(names)):
        base = base[:semicolon]
    if not question:
        return base
    kept = [arg for arg in query.split("&")
            if arg and arg.partition("=")[0].lower() not in names]
    return f"{base}?{'&'.join(kept)}" if kept else base
