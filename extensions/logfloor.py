"""Scrapy's per-request debug records not built when no handler would emit them.

Scrapy logs every response and item at ``DEBUG`` and leaves the ``scrapy``
logger at ``NOTSET``, so with ``LOG_LEVEL = "INFO"`` each call still builds
a ``LogRecord`` that every handler drops. :class:`LogLevelFloor` raises the ``scrapy`` logger's level to the lowest
level of the handlers a record of it can reach (the logger's own and its
ancestors', as ``Logger.callHandlers`` walks them) when the engine starts, and
puts the old level back when it stops. A record below that floor was never
emitted by any handler, so nothing a handler shows changes; a handler added
later (after ``engine_started``) at a lower level is not seen. With no handler
at all (``LOG_ENABLED = False`` and nothing installed) nothing changes, as
Python's last-resort handler then decides.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

__all__ = ["LogLevelFloor", "handler_floor"]

LOGGER = "scrapy"


def handler_floor(logger: logging.Logger) -> int | None:
    """The lowest level among the handlers ``logger``'s records reach, or
    None if they reach none."""
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
