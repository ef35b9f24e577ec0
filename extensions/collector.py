"""Python's cyclic garbage collector tuned for a long crawl: at engine start
collect once, freeze the survivors (``GC_FREEZE``) and set ``GC_THRESHOLD``;
restored when the process's last crawl stops. Stats ``gc/*``."""

from __future__ import annotations

import gc
from typing import Any, Sequence

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import StatsCollector

# Crawls of this process that hold the tuning; the thresholds before the
# first, and whether it froze the startup objects.
_ACTIVE: list[CollectorTuning] = []
_SAVED: list[tuple[tuple[int, ...], bool]] = []
_COLLECTIONS = ("gc/collections/0", "gc/collections/1", "gc/collections/2")


def parse_threshold(value: Any) -> tuple[int, int, int]:
    """``GC_THRESHOLD`` as a tuple of three positive integers; ValueError otherwise."""
    items: Sequence[Any] = value.split(",") if isinstance(value, str) else value
    try:
        numbers = tuple(int(item) for item in items)
    except (TypeError, ValueError) as err:
        raise ValueError(f"GC_THRESHOLD must be three positive integers, not {value!r}") from err
    if len(numbers) != 3 or min(numbers) < 1:
        raise ValueError(f"GC_THRESHOLD must be three positive integers, not {value!r}")
    return numbers  # type: ignore[return-value]


class CollectorTuning:
    """Freezes the startup objects, raises the thresholds, counts collections."""

    def __init__(self, stats: StatsCollector, threshold: tuple[int, int, int], freeze: bool) -> None:
        self.stats = stats
        self.threshold = threshold
        self.freeze = freeze

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CollectorTuning:
        settings = crawler.settings
        if not settings.getbool("GC_TUNING_ENABLED"):
            raise NotConfigured("GC_TUNING_ENABLED is False")
        tuning = cls(crawler.stats, parse_threshold(settings.get("GC_THRESHOLD")),
                     settings.getbool("GC_FREEZE"))
        crawler.signals.connect(tuning.engine_started, signal=signals.engine_started)
        crawler.signals.connect(tuning.engine_stopped, signal=signals.engine_stopped)
        return tuning

    def engine_started(self, *_: Any) -> None:
        if not _ACTIVE:
            _SAVED[:] = [(gc.get_threshold(), self.freeze)]
            if self.freeze:
                gc.collect()
                gc.freeze()
        _ACTIVE.append(self)
        gc.set_threshold(*self.threshold)
        gc.callbacks.append(self._count)
        self.stats.set_value("gc/frozen", gc.get_freeze_count())

    def engine_stopped(self, *_: Any) -> None:
        if self not in _ACTIVE:
            return
        _ACTIVE.remove(self)
        gc.callbacks.remove(self._count)
        if not _ACTIVE:
            threshold, froze = _SAVED.pop()
            gc.set_threshold(*threshold)
            if froze:
                gc.unfreeze()

    def _count(self, phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            self.stats.inc_value(_COLLECTIONS[info["generation"]])
            if info["collected"]:
                self.stats.inc_value("gc/collected", info["collected"])
