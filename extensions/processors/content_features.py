"""The content-seen test's data, computed in the spider (the item's
``content_features``, judged and removed by the content-seen pipeline)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.exceptions import NotConfigured

from extensions import defaults
from extensions.contentseen.features import ContentFeatures, content_features, wants_text
from extensions.contentseen.fingerprint import MODES
from extensions.processors.parsedpage import parsed_page

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

#: Types parsed as HTML by the processors too (text/plain is not).
HTML_TYPES = ("text/html", "application/xhtml+xml")


class ContentFeatureExtractor:
    """Fingerprint and near-duplicate features of a response, as item data."""

    def __init__(self, mode: str, max_text_bytes: int, near: bool) -> None:
        if mode not in MODES:
            raise ValueError(f"CONTENTSEEN_MODE must be one of {MODES}, not {mode!r}")
        self.mode = mode
        self.max_text_bytes = max_text_bytes
        self.near = near

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentFeatureExtractor:
        settings = crawler.settings
        if not settings.getbool("CONTENTSEEN_ENABLED", defaults.CONTENTSEEN_ENABLED):
            raise NotConfigured("CONTENTSEEN_ENABLED is off")
        return cls(settings.get("CONTENTSEEN_MODE", defaults.CONTENTSEEN_MODE),
                   settings.getint("CONTENTSEEN_MAX_TEXT_BYTES", defaults.CONTENTSEEN_MAX_TEXT_BYTES),
                   settings.getbool("CONTENTSEEN_NEAR_ENABLED", defaults.CONTENTSEEN_NEAR_ENABLED))

    def extract(self, response: Response, mime: str) -> ContentFeatures:
        """The features of ``response`` (``mime``: lower-case, no parameters)."""
        text = None
        if mime in HTML_TYPES and wants_text(mime, self.mode, self.near):
            text = parsed_page(response, self.max_text_bytes, text=True).text
        return content_features(response.body, getattr(response, "encoding", None), mime, mode=self.mode,
                                max_text_bytes=self.max_text_bytes, near=self.near, text=text)
