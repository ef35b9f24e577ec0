"""The crawl's stats collector (``STATS_CLASS``): Scrapy's
``MemoryStatsCollector`` without the per-call ``__getattribute__`` wrapper
of Scrapy 2.19; a ``spider`` argument is still warned about inline."""

from __future__ import annotations

import warnings
from typing import Any

from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.statscollectors import MemoryStatsCollector


def _warn_spider_argument(method: str) -> None:
    warnings.warn(
        f"Passing a 'spider' argument to StatsCollector.{method}() is deprecated and "
        "the argument will be removed in a future Scrapy version.",
        category=ScrapyDeprecationWarning, stacklevel=3)


class DirectStatsCollector(MemoryStatsCollector):
    """``MemoryStatsCollector`` without the per-call method wrapper."""

    __getattribute__ = object.__getattribute__

    def get_value(self, key: str, default: Any = None, spider: Any = None) -> Any:
        if spider is not None:
            _warn_spider_argument("get_value")
        return self._stats.get(key, default)

    def get_stats(self, spider: Any = None) -> dict[str, Any]:
        if spider is not None:
            _warn_spider_argument("get_stats")
        return self._stats

    def set_value(self, key: str, value: Any, spider: Any = None) -> None:
        if spider is not None:
            _warn_spider_argument("set_value")
        self._stats[key] = value

    def inc_value(self, key: str, count: int = 1, start: int = 0, spider: Any = None) -> None:
        if spider is not None:
            _warn_spider_argument("inc_value")
        stats = self._stats
        stats[key] = stats.setdefault(key, start) + count

    def max_value(self, key: str, value: Any, spider: Any = None) -> None:
        if spider is not None:
            _warn_spider_argument("max_value")
        stats = self._stats
        stats[key] = max(stats.setdefault(key, value), value)

    def min_value(self, key: str, value: Any, spider: Any = None) -> None:
        if spider is not None:
            _warn_spider_argument("min_value")
        stats = self._stats
        stats[key] = min(stats.setdefault(key, value), value)
