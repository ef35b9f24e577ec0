"""Scrapy's meta-refresh middleware (same settings, same place, 580), skipped
for responses whose first :data:`SCAN_BYTES` bytes cannot spell ``refresh``."""

from __future__ import annotations

import codecs
from functools import lru_cache

from scrapy import Request
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware as ScrapyMetaRefreshMiddleware
from scrapy.http import HtmlResponse, Response

#: Bytes searched: 4096 characters of at most 4 bytes each (Scrapy reads 4096 characters).
SCAN_BYTES = 4 * 4096
# Bytes some encodings drop between characters (ESC ( B in ISO-2022-JP,
# shift-out and shift-in): with them, "ref\x0fresh" could decode to "refresh".
_DROPPED = (b"\x1b(B", b"\x0e", b"\x0f")
_ASCII = bytes(range(128))


@lru_cache(maxsize=64)
def spells_ascii_as_bytes(encoding: str) -> bool:
    """Whether each ASCII character is its own byte in ``encoding`` and decoding
    drops nothing (UTF-8, Latin, Shift_JIS; not UTF-16, UTF-7, ISO-2022, unknown)."""
    try:
        codec = codecs.lookup(encoding).name
    except LookupError:
        return False
    if codec == "utf-7":  # "+AHI-" decodes to "r"
        return False
    try:
        if _ASCII.decode(codec) != _ASCII.decode("ascii"):
            return False
    except UnicodeDecodeError:
        return False
    return all((b"a" + dropped + b"b").decode(codec, "replace") != "ab" for dropped in _DROPPED)


def may_declare_refresh(response: HtmlResponse) -> bool:
    """False only if ``response`` surely declares no meta refresh Scrapy would follow."""
    if not spells_ascii_as_bytes(response.encoding):
        return True
    return response.body[:SCAN_BYTES].lower().find(b"refresh") >= 0


class MetaRefreshMiddleware(ScrapyMetaRefreshMiddleware):
    """Scrapy's middleware, skipped for a response whose bytes rule a refresh out."""

    def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        if isinstance(response, HtmlResponse) and not may_declare_refresh(response):
            return response
        return super().process_response(request, response)
