"""Host yield as an item pipeline: a host's share of the crawl follows what it yields.

After the content-seen test and before the link scheduler, it judges each
page (:mod:`extensions.frontier.hostyield`) and keeps its host's yield over
the last ``HOST_YIELD_WINDOW`` pages. The item's internal ``credit_share``
is that yield (AOPIC passes on only that share of the page's cash); once it
falls below ``HOST_YIELD_THRESHOLD`` the host is stopped:
``origin_deferred(origin, "low-yield")`` for each of its origins, for this
run. Pages that say nothing about the host's content (a 304, a 1xx/3xx, an
unjudged 2xx) are not counted. State is per process, in memory.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured

from extensions import defaults
from extensions.defaults import checked
from extensions.frontier.holds import origin_of
from extensions.frontier.hostyield import HostYield, PageKind
from extensions.signals import origin_deferred

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

REASON = "low-yield"


def page_kind(item: Mapping[str, Any]) -> PageKind | None:
    """What the page brought (None: it says nothing about its host's content)."""
    if item.get("not_modified"):
        return None
    status = int(item.get("status") or 0)
    if status >= 400:
        return PageKind.ERROR
    if not 200 <= status < 300 or not item.get("fingerprint"):
        return None
    if item.get("duplicate_of") or item.get("near_duplicate_of"):
        return PageKind.OLD
    return PageKind.NEW


class HostYieldPipeline:
    """Keeps each host's yield; sets ``credit_share``; stops low-yield hosts."""

    def __init__(self, tracker: HostYield, stats: Any, send: Callable[..., Any]) -> None:
        self.tracker, self.stats, self.send = tracker, stats, send
        self.deferred: set[str] = set()  # origins deferred for low yield

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HostYieldPipeline:
        settings = crawler.settings
        if not settings.getbool("HOST_YIELD_ENABLED", defaults.HOST_YIELD_ENABLED):
            raise NotConfigured
        number = lambda name, kind: checked(settings, name, lambda _: True, "a number", kind)  # noqa: E731
        tracker = HostYield(number("HOST_YIELD_WINDOW", int), number("HOST_YIELD_THRESHOLD", float),
                            number("HOST_YIELD_MAX_HOSTS", int))  # HostYield checks the values
        return cls(tracker, crawler.stats, crawler.signals.send_catch_log)

    def process_item(self, item: Any) -> Any:
        adapter = ItemAdapter(item)
        kind = page_kind(adapter)
        url = adapter.get("final_url") or adapter.get("url")
        if kind is None or not url:
            return item
        host = (urlsplit(url).hostname or "").lower()
        reading = self.tracker.record(host, kind)
        self.stats.inc_value(f"hostyield/{'errors' if kind is PageKind.ERROR else kind.value}")
        try:
            adapter["credit_share"] = reading.share
        except KeyError:  # an item class without the field: nothing to pass on
            pass
        if reading.stopped:
            self._defer(origin_of(url), host, reading.share, reading.stopped_now)
        return item

    def _defer(self, origin: str, host: str, share: float, now: bool) -> None:
        if now:
            self.stats.inc_value("hostyield/stopped_hosts")
            logger.info("Stopping %s: %.0f%% of its last %d pages brought new content (HOST_YIELD_THRESHOLD %.0f%%)",
                        host, 100 * share, self.tracker.window, 100 * self.tracker.threshold)
        if origin in self.deferred:
            return
        self.deferred.add(origin)
        self.send(origin_deferred, origin=origin, reason=REASON)
