"""An item pipeline after the trap filter that announces each page's outlinks
(``page_outlinks``) for the WARC ``metadata`` records; needs ``WARC_DIR`` and
``WARC_OUTLINKS``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.exceptions import NotConfigured

from extensions.signals import page_outlinks
from extensions.backends.settings import flag_setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.signalmanager import SignalManager


class OutlinksAnnouncer:
    """Send ``page_outlinks`` for every item with ``links``."""

    def __init__(self, signals: SignalManager) -> None:
        self.signals = signals

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        if not crawler.settings.get("WARC_DIR") or not flag_setting(crawler.settings, "WARC_OUTLINKS"):
            raise NotConfigured
        return cls(crawler.signals)

    def process_item(self, item: Any) -> Any:
        links = item.get("links")
        if links is not None:
            self.signals.send_catch_log(page_outlinks, url=item.get("final_url") or item["url"], links=list(links),
                                        via=item.get("referer"), depth=int(item.get("depth") or 0))
        return item
