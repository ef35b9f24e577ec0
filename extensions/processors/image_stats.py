"""Image statistics: format and dimensions read from the file header.

A processing module for ``image/*``: GIF, PNG and JPEG dimensions from their
headers, without decoding; anything else, truncated or corrupt yields
``{"format": None}`` and counts ``images/unparsed``. Never raises.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any


if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["ImageStats", "image_dimensions"]

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Start-of-frame markers: C0-CF except DHT (C4), JPG (C8) and DAC (CC).
_JPEG_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
# Markers without a length field: TEM, RST0-7, SOI.
_JPEG_STANDALONE = frozenset({0x01, 0xD8, *range(0xD0, 0xD8)})


def image_dimensions(body: bytes) -> tuple[str, int, int] | None:
    """``(format, width, height)`` of a GIF, PNG or JPEG; None if unreadable."""
    try:
        if body[:6] in (b"GIF87a", b"GIF89a"):
            return _gif(body)
        if body[:8] == _PNG_SIGNATURE:
            return _png(body)
        if body[:2] == b"\xff\xd8":
            return _jpeg(body)
    except (struct.error, IndexError, ValueError):
        return None
    return None


def _checked(fmt: str, width: int, height: int) -> tuple[str, int, int] | None:
    return (fmt, width, height) if width > 0 and height > 0 else None


def _gif(body: bytes) -> tuple[str, int, int] | None:
    # Logical screen descriptor right after the 6-byte signature.
    width, height = struct.unpack_from("<HH", body, 6)
    return _checked("gif", width, height)


def _png(body: bytes) -> tuple[str, int, int] | None:
    # The first chunk must be IHDR: length (4), type (4), width (4), height (4).
    if body[12:16] != b"IHDR":
        return None
    width, height = struct.unpack_from(">II", body, 16)
    return _checked("png", width, height)


def _jpeg(body: bytes) -> tuple[str, int, int] | None:
    """Walk the marker segments (0xFF fill bytes, marker, big-endian length
    counting itself) after SOI up to the first start-of-frame; None at SOS or EOI."""
    position, size = 2, len(body)
    while position < size:
        if body[position] != 0xFF:
            return None
        while position < size and body[position] == 0xFF:
            position += 1
        if position >= size:
            return None
        marker = body[position]
        position += 1
        if marker in _JPEG_STANDALONE:
            continue
        if marker in (0xD9, 0xDA) or marker == 0x00:
            return None
        (length,) = struct.unpack_from(">H", body, position)
        if length < 2:
            return None
        if marker in _JPEG_SOF:
            # length (2), sample precision (1), height (2), width (2)
            height, width = struct.unpack_from(">HH", body, position + 3)
            return _checked("jpeg", width, height)
        position += length
    return None


class ImageStats:
    """Returns ``{"image": {"format", "width", "height", "bytes"}}``."""

    def __init__(self, stats: Any = None) -> None:
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ImageStats:
        return cls(stats=crawler.stats)

    def process(self, response: Response) -> dict[str, Any]:
        body = response.body
        found = image_dimensions(body)
        if found is None:
            if self.stats is not None:
                self.stats.inc_value("images/unparsed")
            return {"image": {"format": None, "bytes": len(body)}}
        fmt, width, height = found
        return {"image": {"format": fmt, "width": width, "height": height, "bytes": len(body)}}
