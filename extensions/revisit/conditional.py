"""Conditional GET for re-visits (RFC 9110 sections 13.1.1, 13.1.3 and 15.4.5).

A re-visit request carries the validators of the page's last 200 in its
meta, ``revisit_validators = {"etag": str | None, "last_modified": str | None}``
(put there by the frontier). :class:`ConditionalGetMiddleware`
(downloader middleware, order 800: after every Scrapy middleware that sets
headers, before ``DownloaderStats`` (850) counts the request's bytes and
before ``HttpCacheMiddleware`` (900)) turns them into ``If-None-Match`` and
``If-Modified-Since``, each exactly as the server sent it (the same bytes),
unless the request already has that header. So that the server's answer is
the spider's:

* ``dont_cache`` is set on every request with ``revisit_validators`` (even
  without a usable validator): Scrapy's HTTP cache would otherwise answer
  the re-visit from its copy (``DummyPolicy``) or turn the 304 into the
  cached 200 (``RFC2616Policy``), and the page would never be asked again;
* 304 reaches the spider (when a validator was sent): with ``HTTPERROR_ALLOW_ALL`` (the add-on's
  default) every status does already; otherwise 304 is added to the
  request's ``handle_httpstatus_list`` (starting from the spider's
  ``handle_httpstatus_list`` or ``HTTPERROR_ALLOWED_CODES``, so the statuses
  allowed before still are).

304 is not a redirect: ``RedirectMiddleware`` leaves it alone, and a redirect
of a re-visit keeps the headers on the way to its target (Scrapy copies
them), where the validators of the last 200 came from.

The spider reads a 200's validators with :func:`response_validators`; both
sides use the same test of a validator (:func:`clean_etag`,
:func:`clean_last_modified`): text without control characters, at most
:data:`MAX_VALIDATOR_LENGTH` characters, a ``Last-Modified`` that is an
HTTP date. Anything else is ignored and counted, never sent.

Stats: ``revisit/conditional_requests`` (requests this middleware made
conditional; a retry's copy, which has the headers already, is not counted
again), ``revisit/not_modified`` (304 answers to requests with validators),
``revisit/validators_ignored/<etag|last_modified|not_a_mapping>`` (stored
validators not sent), ``revisit/response_validators_ignored/<etag|last_modified>``
(a response's malformed validators, not put on the item).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from email.utils import parsedate_tz
from typing import TYPE_CHECKING, Any

from scrapy import signals

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response

#: request meta: the validators of the page's last 200, ``{"etag", "last_modified"}``
REVISIT_VALIDATORS = "revisit_validators"
NOT_MODIFIED = 304
#: longest validator kept or sent (real ETags are tens of characters)
MAX_VALIDATOR_LENGTH = 1024

IF_NONE_MATCH, IF_MODIFIED_SINCE = b"If-None-Match", b"If-Modified-Since"
ETAG, LAST_MODIFIED = b"ETag", b"Last-Modified"


def _header_text(value: Any) -> str | None:
    """``value`` as one header line's text, None if it cannot be one:
    not a string, empty, too long, or with ASCII control characters (CR and
    LF would split the request) or characters outside Latin-1 (not bytes a
    server sent; bytes 0x80-0xFF are RFC 9110's obs-text and kept)."""
    if not isinstance(value, str):
        return None
    value = value.strip(" \t")
    if not value or len(value) > MAX_VALIDATOR_LENGTH:
        return None
    if any(ord(char) < 0x20 or ord(char) == 0x7F or ord(char) > 0xFF for char in value):
        return None
    return value


def clean_etag(value: Any) -> str | None:
    """An entity tag fit to send back, or None. Unquoted tags (some servers
    send them) are kept: a browser sends back what it got, and so do we."""
    return _header_text(value)


def clean_last_modified(value: Any) -> str | None:
    """A ``Last-Modified`` value fit to send back, or None; it must be an
    HTTP date (a server ignores an ``If-Modified-Since`` that is not)."""
    text = _header_text(value)
    return text if text is not None and parsedate_tz(text) is not None else None


def response_validators(headers: Headers, stats: Any) -> tuple[str | None, str | None]:
    """``(etag, last_modified)`` of a response's headers, None for one that
    is absent; a malformed one (several different values, too long, control
    characters, a date that is none) is None too, and counted."""
    found: list[str | None] = []
    for name, clean, key in ((ETAG, clean_etag, "etag"), (LAST_MODIFIED, clean_last_modified, "last_modified")):
        values = set(headers.getlist(name))
        if not values:
            found.append(None)
            continue
        # latin-1 maps every byte to one character: the exact bytes come back on encode
        value = clean(values.pop().decode("latin-1")) if len(values) == 1 else None
        if value is None:
            stats.inc_value(f"revisit/response_validators_ignored/{key}")
        found.append(value)
    return found[0], found[1]


class ConditionalGetMiddleware:
    """Sends a re-visit's stored validators; lets its 304 through to the spider."""

    def __init__(self, stats: Any, allow_all: bool, allowed_codes: Sequence[int]) -> None:
        self.stats = stats
        self.allow_all = allow_all
        self.allowed_codes = list(allowed_codes)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ConditionalGetMiddleware:
        settings = crawler.settings
        middleware = cls(crawler.stats, settings.getbool("HTTPERROR_ALLOW_ALL"),
                         [int(code) for code in settings.getlist("HTTPERROR_ALLOWED_CODES")])
        crawler.signals.connect(middleware.spider_opened, signals.spider_opened)
        return middleware

    def spider_opened(self, spider: Spider) -> None:
        """HttpErrorMiddleware prefers the spider's list to the setting; so do we."""
        codes = getattr(spider, "handle_httpstatus_list", None)
        if codes is not None:
            self.allowed_codes = list(codes)

    def process_request(self, request: Request, spider: Spider | None = None) -> None:
        validators = request.meta.get(REVISIT_VALIDATORS)
        if validators is None:
            return
        # a re-visit, with or without validators, must reach the server, not Scrapy's HTTP cache
        request.meta.setdefault("dont_cache", True)
        if not isinstance(validators, Mapping):
            self.stats.inc_value("revisit/validators_ignored/not_a_mapping")
            return
        etag = self._validator(validators, "etag", clean_etag)
        last_modified = self._validator(validators, "last_modified", clean_last_modified)
        if etag is None and last_modified is None:
            return
        added = False
        for header, value in ((IF_NONE_MATCH, etag), (IF_MODIFIED_SINCE, last_modified)):
            if value is not None and header not in request.headers:
                request.headers[header] = value.encode("latin-1")  # the bytes the server sent
                added = True
        if added:
            self.stats.inc_value("revisit/conditional_requests")
        self._let_not_modified_through(request.meta)

    def _validator(self, validators: Mapping[str, Any], key: str, clean: Any) -> str | None:
        value = validators.get(key)
        if value is None:
            return None
        cleaned = clean(value)
        if cleaned is None:
            self.stats.inc_value(f"revisit/validators_ignored/{key}")
        return cleaned

    def _let_not_modified_through(self, meta: dict[str, Any]) -> None:
        """304 past HttpErrorMiddleware, keeping what it let through before."""
        if meta.get("handle_httpstatus_all"):
            return
        codes = meta.get("handle_httpstatus_list")
        if codes is None:
            if self.allow_all:
                return
            codes = self.allowed_codes
        if NOT_MODIFIED not in codes:
            meta["handle_httpstatus_list"] = [*codes, NOT_MODIFIED]

    def process_response(self, request: Request, response: Response, spider: Spider | None = None) -> Response:
        if response.status == NOT_MODIFIED and request.meta.get(REVISIT_VALIDATORS) is not None:
            self.stats.inc_value("revisit/not_modified")
        return response
