"""While the engine runs, :class:`LogLevelFloor` raises the ``scrapy`` logger
to the lowest level its handlers emit, so Scrapy's per-request debug records
are not built for nothing (handlers added after ``engine_started`` unseen)."""

from __future__ import annotations

import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

LOGGER = "scrapy"


def handler_floor(logger: logging.Logger) -> int | None:
    """The lowest level of the handlers ``logger``'s records reach (None: none)."""
    levels: list[int] = []
    current: logging.Logger | None = logger
    while current is not None:
        levels.extend(handler.level for handler in current.handlers)
        current = current.parent if current.propagate else None
    return min(levels) if levels else None


class LogLevelFloor:
    """Sets the ``scrapy`` logger's level to its handlers' floor for the crawl."""

    def __init__(self, logger: logging.Logger) -> None:
        self.logger = logger
        self.saved: int | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LogLevelFloor:
        floor = cls(logging.getLogger(LOGGER))
        crawler.signals.connect(floor.engine_started, signal=signals.engine_started)
        crawler.signals.connect(floor.engine_stopped, signal=signals.engine_stopped)
        return floor

    def engine_started(self, *_: Any) -> None:
        level = handler_floor(self.logger)
        if level is None or level <= self.logger.getEffectiveLevel():
            return
        self.saved = self.logger.level
        self.logger.setLevel(level)

    def engine_stopped(self, *_: Any) -> None:
        if self.saved is not None:
            self.logger.setLevel(self.saved)
            self.saved = None
