"""Prioritisers (``FRONTIER_PRIORITIZER``): a request to a front-queue level 0..levels-1."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Protocol


class Prioritizer(Protocol):
    """What the frontier asks of a prioritiser."""

    levels: int

    def level(self, priority: int, depth: int, meta: Mapping[str, Any]) -> int:
        """The front queue of a URL: 0 (served least often) .. levels-1."""


class DepthPrioritizer:
    """Shallow URLs and high Scrapy priorities go to higher levels:
    ``level = clamp(levels - 1 - depth // depth_step + priority // priority_step)``."""

    def __init__(self, levels: int = 8, depth_step: int = 1, priority_step: int = 1) -> None:
        self.levels = levels
        self.depth_step = depth_step
        self.priority_step = priority_step

    def level(self, priority: int, depth: int, meta: Mapping[str, Any]) -> int:
        top = self.levels - 1
        raw = top - depth // self.depth_step + priority // self.priority_step
        return min(top, max(0, raw))


class FlatPrioritizer:
    """Every URL in one level: a plain FIFO frontier (breadth-first)."""

    def __init__(self, levels: int = 8) -> None:
        self.levels = levels

    def level(self, priority: int, depth: int, meta: Mapping[str, Any]) -> int:
        return self.levels - 1


class CashPrioritizer:
    """AOPIC (the default): ``clamp(levels // 2 + floor(log2(cash / mean)) +
    priority // priority_step)``; no cash is level 0, no ``aopic_cash`` meta the
    depth level."""

    def __init__(self, levels: int = 8, priority_step: int = 1) -> None:
        self.levels = levels
        self.priority_step = priority_step
        self.fallback = DepthPrioritizer(levels)

    def level(self, priority: int, depth: int, meta: Mapping[str, Any]) -> int:
        cash = meta.get("aopic_cash")
        if cash is None:
            return self.fallback.level(priority, depth, meta)
        if cash <= 0:  # fetched and not credited since (a revisit)
            return 0
        mean = meta.get("aopic_mean") or 1.0
        raw = self.levels // 2 + math.floor(math.log2(cash / mean)) + priority // self.priority_step
        return min(self.levels - 1, max(0, raw))
