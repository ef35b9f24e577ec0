"""The frontier's gauges: stats set (not counted) at checkpoints and close."""

from __future__ import annotations

from typing import Any

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.urlseen import BloomSeen
from extensions.store.base import FrontierStore

#: Stats that measure the whole crawl, not this process: several processes
#: sharing a frontier each report the same value, so they are not summed.
CRAWL_WIDE_STATS = frozenset({"frontier/redis_memory_bytes", "frontier/redis_known_urls",
                              "frontier/redis_bytes_per_url"})


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


def update_gauges(stats: Any, store: FrontierStore, *, back_queues: int, queued: int, inflight: int,
                  bloom: BloomSeen | None, ledger: AOPICLedger | None) -> None:
    """Queue sizes, the URL-seen cache's hit rate, the ledger's totals."""
    stats.set_value("frontier/back_queues", back_queues)
    stats.set_value("frontier/hosts", store.hosts.host_count())
    stats.set_value("frontier/queued", queued)
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
    memory_gauges(stats, store)


def memory_gauges(stats: Any, store: FrontierStore) -> None:
    """Memory per URL of a store that reports it (Redis: the crawl's, over
    every process; see CRAWL_WIDE_STATS). At checkpoints and close only."""
    report = store.memory_usage()
    if report is None:
        return
    used, known = report
    stats.set_value("frontier/redis_memory_bytes", used)
    stats.set_value("frontier/redis_known_urls", known)
    if known:
        stats.set_value("frontier/redis_bytes_per_url", round(used / known, 1))
