"""Every ``HEAP_TRIM_INTERVAL`` seconds :class:`HeapTrim` calls glibc's
``malloc_trim(0)``, so memory a crawl freed goes back to the kernel. Not
configured without glibc or with ``HEAP_TRIM_ENABLED`` off. Stats ``heap/*``."""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.statscollectors import StatsCollector
from twisted.internet import task

from extensions.defaults import checked

_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    try:
        function = ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None
    function.argtypes, function.restype = [ctypes.c_size_t], ctypes.c_int
    return function


def resident_bytes() -> int:
    """This process's resident set now (``/proc/self/statm``), 0 where unknown."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, IndexError, ValueError):
        return 0


class HeapTrim:
    """Calls ``trim`` every ``interval`` seconds while the engine runs."""

    def __init__(self, stats: StatsCollector, trim: Callable[[int], int], interval: float,
                 resident: Callable[[], int] = resident_bytes) -> None:
        self.stats, self.trim, self.interval, self.resident = stats, trim, interval, resident
        self.loop: task.LoopingCall | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HeapTrim:
        settings = crawler.settings
        if not settings.getbool("HEAP_TRIM_ENABLED"):
            raise NotConfigured
        interval = checked(settings, "HEAP_TRIM_INTERVAL", lambda value: value > 0, "a number of seconds > 0")
        trim = malloc_trim()
        if trim is None:
            raise NotConfigured
        heap = cls(crawler.stats, trim, interval)
        crawler.signals.connect(heap.engine_started, signal=signals.engine_started)
        crawler.signals.connect(heap.engine_stopped, signal=signals.engine_stopped)
        return heap

    def engine_started(self, *_: Any) -> None:
        self.loop = task.LoopingCall(self.trim_now)
        self.loop.start(self.interval, now=False)

    def engine_stopped(self, *_: Any) -> None:
        if self.loop is not None and self.loop.running:
            self.loop.stop()
        self.loop = None

    def trim_now(self) -> int:
        """One trim; the bytes the resident set shrank by."""
        before = self.resident()
        self.trim(0)
        released = max(0, before - self.resident())
        self.stats.inc_value("heap/trims")
        self.stats.inc_value("heap/released_bytes", released)
        return released
