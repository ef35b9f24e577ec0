"""Host yield as an item pipeline: a host's share of the crawl follows what it yields.

A host's yield, the share of new pages among its last ``HOST_YIELD_WINDOW``,
becomes the item's ``credit_share`` (AOPIC passes on that share of its cash);
below ``HOST_YIELD_THRESHOLD`` its origins are deferred for this run."""

from __future__ import annotations

import logging
from collections import OrderedDict
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from itemadapter import ItemAdapter
from scrapy.exceptions import NotConfigured

from extensions import defaults
from extensions.defaults import checked
from extensions.frontier.holds import LOW_YIELD, origin_of
from extensions.signals import origin_deferred
from extensions.urls.split import host_of

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class PageKind(Enum):
    """What one fetched page brought."""

    NEW = "new"
    OLD = "old"  # an exact or near duplicate
    ERROR = "error"  # a 4xx or 5xx answer


@dataclass(frozen=True, slots=True)
class Reading:
    """A host's yield after one of its pages."""

    share: float  # new pages among the window's (the credit share)
    stopped: bool  # the host is stopped for the run
    stopped_now: bool = False  # this page stopped it


class _Host:
    """One host's window: the last ``window`` pages as bits (1: new), newest lowest."""

    __slots__ = ("bits", "error_run", "stopped")

    def __init__(self, window: int) -> None:
        self.bits = (1 << window) - 1  # the imaginary new pages
        self.error_run = 0
        self.stopped = False


class HostYield:
    """Per-host windows of page kinds, their yield, and the stop rule."""

    def __init__(self, window: int, threshold: float, max_hosts: int = 65536) -> None:
        if window < 1:
            raise ValueError(f"HOST_YIELD_WINDOW must be >= 1, got {window!r}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"HOST_YIELD_THRESHOLD must be in 0..1, got {threshold!r}")
        if max_hosts < 1:
            raise ValueError(f"HOST_YIELD_MAX_HOSTS must be >= 1, got {max_hosts!r}")
        self.window, self.threshold, self.max_hosts = window, threshold, max_hosts
        self.mask = (1 << window) - 1
        self.hosts: OrderedDict[str, _Host] = OrderedDict()

    def record(self, host: str, kind: PageKind) -> Reading:
        """Add one page of ``host``; the host's yield and stop state after it."""
        state = self._state(host)
        if kind is PageKind.ERROR:
            state.error_run += 1
            if state.error_run >= self.window:
                state.bits = 0
        else:
            state.error_run = 0
            state.bits = ((state.bits << 1) | (kind is PageKind.NEW)) & self.mask
        share = state.bits.bit_count() / self.window
        if state.stopped or share >= self.threshold:
            return Reading(share, state.stopped)
        state.stopped = True
        return Reading(share, True, stopped_now=True)

    def share(self, host: str) -> float:
        """``host``'s yield now (1.0 for a host without pages)."""
        state = self.hosts.get(host)
        return 1.0 if state is None else state.bits.bit_count() / self.window

    def _state(self, host: str) -> _Host:
        state = self.hosts.pop(host, None)
        if state is None:
            state = _Host(self.window)
            if len(self.hosts) >= self.max_hosts:
                self.hosts.popitem(last=False)
        self.hosts[host] = state
        return state


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
        host = host_of(url)  # (urlsplit(url).hostname or "").lower()
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
        self.send(origin_deferred, origin=origin, reason=LOW_YIELD)
