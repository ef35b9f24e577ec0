"""A measuring extension for bench.gc_cost: the cyclic collector's time and
collections per generation during a crawl (``gc.callbacks``), written as
JSON to ``GC_PROBE_FILE`` when the spider closes. Not part of the product."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler


class GcProbe:
    """Sums the collector's seconds and counts its collections per generation."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.seconds = [0.0, 0.0, 0.0]
        self.collections = [0, 0, 0]
        self.started = 0.0
        gc.callbacks.append(self._observe)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GcProbe:
        probe = cls(Path(crawler.settings["GC_PROBE_FILE"]))
        crawler.signals.connect(probe.spider_closed, signal=signals.spider_closed)
        return probe

    def _observe(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.started = time.perf_counter()
            return
        generation = info["generation"]
        self.seconds[generation] += time.perf_counter() - self.started
        self.collections[generation] += 1

    def spider_closed(self, *_: Any) -> None:
        gc.callbacks.remove(self._observe)
        self.path.write_text(json.dumps({"seconds": self.seconds, "collections": self.collections,
                                         "tracked": len(gc.get_objects()), "frozen": gc.get_freeze_count()}))
