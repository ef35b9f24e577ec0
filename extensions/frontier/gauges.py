"""The frontier's gauges: stats set (not counted) at checkpoints and close."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from extensions.frontier.store import HELD_META, FrontierStore, Status

if TYPE_CHECKING:
    from extensions.frontier.scheduler import Frontier

#: ``frontier/urls/<status>``: URLs in the store by status, counted at checkpoints.
URL_STATUS_STATS = tuple(f"frontier/urls/{status.name.lower()}" for status in Status)

#: Stats of the whole crawl, not this process: processes sharing a frontier
#: each report the same value, so they are not summed.
CRAWL_WIDE_STATS = frozenset({"frontier/redis_memory_bytes", "frontier/redis_known_urls",
                              "frontier/redis_bytes_per_url", "frontier/hosts", *URL_STATUS_STATS,
                              "frontier/urls_counted_at", "frontier/urls_count_seconds"})

#: Counting URLs by status scans the URL table: redone only once this many
#: times the last count's duration has passed (~1% of the time).
STATUS_COUNT_SPACING = 100.0


class DictStats:
    """Stats for a frontier driven without a crawler."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = self.values.get(key, start) + count

    def set_value(self, key: str, value: Any) -> None:
        self.values[key] = value

    def get_value(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


def update_gauges(frontier: Frontier) -> None:
    """Queue sizes, held origins, cache hit rate, ledger totals, store memory, URLs by status."""
    stats, store, dispatch, held = frontier.stats, frontier.store, frontier.dispatch, frontier.holds.held
    inflight, bloom, ledger = len(frontier.inflight), frontier.bloom, frontier.ledger
    stats.set_value("frontier/back_queues", len(dispatch.hosts_in_use()))
    stats.set_value("frontier/held_origins", len(held))
    if not store.round_trips:  # an embedded store: the held origins for `scrapy crawlstatus`
        written = json.dumps({origin: hold.reason for origin, hold in held.items()}, sort_keys=True)
        if store.get_meta(HELD_META) != written:
            store.set_meta(HELD_META, written)
    stats.set_value("frontier/hosts", store.hosts.host_count())
    stats.set_value("frontier/queued", len(dispatch))
    for level, count in dispatch.queued_by_level().items():
        stats.set_value(f"frontier/level/{level}", count)
    stats.set_value("frontier/inflight", inflight)
    hits = stats.get_value("frontier/seen_cache_hit", 0)
    lookups = hits + stats.get_value("frontier/seen_cache_miss", 0)
    if lookups:
        stats.set_value("frontier/seen_cache_hit_rate", round(hits / lookups, 4))
    if bloom is not None:
        stats.set_value("frontier/bloom_size", bloom.size_bytes())
    if store.round_trips:  # a networked store (Redis); 0 for an embedded one
        stats.set_value("frontier/store_round_trips", store.round_trips)
    if ledger is not None:
        stats.set_value("aopic/lambda_cash", round(ledger.lambda_cash, 6))
        stats.set_value("aopic/pages_with_cash", ledger.rows)
    if (memory := store.memory_usage()) is not None:
        used, known = memory
        stats.set_value("frontier/redis_memory_bytes", used)
        stats.set_value("frontier/redis_known_urls", known)
        if known:
            stats.set_value("frontier/redis_bytes_per_url", round(used / known, 1))
    # an idle frontier (the end of a crawl) is counted whatever the spacing:
    # the last figures are the ones the report and the metrics keep
    status_gauges(stats, store, force=not len(dispatch) and not inflight)


def status_gauges(stats: Any, store: FrontierStore, clock: Callable[[], float] = time.time,
                  force: bool = False) -> None:
    """``frontier/urls/<status>``, skipped while the last count is recent for its cost."""
    started = clock()
    counted_at = stats.get_value("frontier/urls_counted_at")
    if not force and counted_at is not None and \
            started - counted_at < STATUS_COUNT_SPACING * stats.get_value("frontier/urls_count_seconds", 0.0):
        return
    counts = store.urls.count_by_status()
    finished = clock()
    for status, key in zip(Status, URL_STATUS_STATS):
        stats.set_value(key, counts.get(status, 0))
    stats.set_value("frontier/urls_counted_at", round(finished, 3))
    stats.set_value("frontier/urls_count_seconds", round(finished - started, 6))
