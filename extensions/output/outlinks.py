"""An item pipeline that announces each page's outlinks (signal
``page_outlinks``), for the WARC writer's ``metadata`` records.

Placed after the trap filter (800) and before ``LinkScheduler`` (900), which
consumes the item's ``links``: the links announced are those the frontier
gets. Off (``NotConfigured``) unless ``WARC_DIR`` is set and
``WARC_OUTLINKS`` is on; an item without ``links`` (a 304, an error page, or
``LINKS_IN_ITEMS`` off) announces nothing.
"""

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
