"""Conditional GET for re-visits (RFC 9110 13.1.1, 13.1.3, 15.4.5):
:class:`ConditionalGetMiddleware` (order 800) sends a re-visit's validators
as ``If-None-Match`` and ``If-Modified-Since`` and lets a 304 through."""

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


def clean_etag(value: Any) -> str | None:
    """An entity tag fit to send back, or None."""
    if not isinstance(value, str):
        return None
    value = value.strip(" \t")
    if not value or len(value) > MAX_VALIDATOR_LENGTH:
        return None
    if any(ord(char) < 0x20 or ord(char) == 0x7F or ord(char) > 0xFF for char in value):
        return None
    return value


def clean_last_modified(value: Any) -> str | None:
    """A ``Last-Modified`` value fit to send back (an HTTP date), or None."""
    text = clean_etag(value)  # one header line's text
    return text if text is not None and parsedate_tz(text) is not None else None


def response_validators(headers: Headers, stats: Any) -> tuple[str | None, str | None]:
    """``(etag, last_modified)`` of a response's headers, None where absent or malformed."""
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
