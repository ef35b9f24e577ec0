"""Scrapy's meta-refresh redirects, after a look at the undecoded bytes.

w3lib follows only a ``<meta>`` whose attributes spell ``refresh``, so a
response whose first :data:`SCAN_BYTES` bytes lack those letters cannot
declare one: :class:`MetaRefreshMiddleware` returns it as it is (sparing
the decoding) and hands every other response to Scrapy's middleware, with
the same settings and redirects, at its place (580).
"""

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
    """Whether every ASCII character of a document in ``encoding`` is its
    own byte and nothing in between disappears when decoding (UTF-8, Latin
    and Windows code pages, Shift_JIS, GB18030...; not UTF-16, UTF-7 or
    ISO-2022). False for an unknown encoding."""
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
    """False only if ``response`` surely declares no meta refresh that
    Scrapy's middleware would follow (module docstring)."""
    if not spells_ascii_as_bytes(response.encoding):
        return True
    return response.body[:SCAN_BYTES].lower().find(b"refresh") >= 0


class MetaRefreshMiddleware(ScrapyMetaRefreshMiddleware):
    """Scrapy's middleware, skipped for a response whose bytes rule a refresh out."""

    def process_response(self, request: Request, response: Response) -> Request | Response:  # type: ignore[override]
        if isinstance(response, HtmlResponse) and not may_declare_refresh(response):
            return response
        return super().process_response(request, response)
