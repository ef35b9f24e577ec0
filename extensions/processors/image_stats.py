"""Image statistics (``image/*``): GIF, PNG and JPEG format and dimensions
from the header; otherwise ``{"format": None}`` and ``images/unparsed``.
Never raises."""

from __future__ import annotations

from io import BytesIO
from typing import TYPE_CHECKING, Any

from PIL import GifImagePlugin, JpegImagePlugin, PngImagePlugin

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

#: signature -> (format, Pillow's reader of its header); each reads only what it must
_FORMATS = {
    b"GIF87a": ("gif", GifImagePlugin.GifImageFile),
    b"GIF89a": ("gif", GifImagePlugin.GifImageFile),
    b"\x89PNG\r\n\x1a\n": ("png", PngImagePlugin.PngImageFile),
    b"\xff\xd8": ("jpeg", JpegImagePlugin.JpegImageFile),
}


def image_dimensions(body: bytes) -> tuple[str, int, int] | None:
    """``(format, width, height)`` of a GIF, PNG or JPEG; None if unreadable."""
    for signature, (fmt, reader) in _FORMATS.items():
        if body.startswith(signature):
            try:
                with reader(BytesIO(body)) as image:  # the header only: no decoding, no size limit
                    width, height = image.size
            except Exception:  # noqa: BLE001 - a truncated or corrupt header, whatever Pillow says
                return None
            return (fmt, width, height) if width > 0 and height > 0 else None
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
