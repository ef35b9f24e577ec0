"""Prioritisers: map a request to a front-queue level, 0 (lowest) .. K-1.

As Mercator's prioritiser, a small pure class (no Scrapy) behind the
``FRONTIER_PRIORITIZER`` setting: built with ``levels=K`` and asked
``level(priority, depth, meta)`` for each new URL.
"""

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
    """Shallow URLs and high Scrapy priorities go to higher levels.

    ``level = clamp(top - depth // depth_step + priority // priority_step)``
    with ``top = levels - 1``: seeds (depth 0, priority 0) get the top level,
    each ``depth_step`` of depth costs a level, and each ``priority_step`` of
    ``request.priority`` buys one (Scrapy's redirect middleware adds +2 and
    its retry middleware -1, so those move a level with the default step 1).
    """

    def __init__(self, levels: int = 8, depth_step: int = 1, priority_step: int = 1) -> None:
        if levels < 1 or depth_step < 1 or priority_step < 1:
            raise ValueError(
                f"DepthPrioritizer needs levels, depth_step, priority_step >= 1; got "
                f"{levels!r}, {depth_step!r}, {priority_step!r}"
            )
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
    """AOPIC: URLs with more cash go to higher levels (the default).

    ``level = clamp(levels // 2 + floor(log2(cash / mean)) + priority // priority_step)``
    where ``mean`` is the average cash per known page: a page with the mean
    sits in the middle, each doubling buys a level, no cash is the bottom.
    The frontier passes ``aopic_cash`` and ``aopic_mean`` in ``meta``; a URL
    the ledger does not know (a redirect target) and a crawl without AOPIC
    get the :class:`DepthPrioritizer`'s level.
    """

    def __init__(self, levels: int = 8, priority_step: int = 1) -> None:
        if levels < 1 or priority_step < 1:
            raise ValueError(f"CashPrioritizer needs levels, priority_step >= 1; got {levels!r}, {priority_step!r}")
        self.levels = levels
        self.priority_step = priority_step
        self.fallback = DepthPrioritizer(levels)

    def level(self, priority: int, depth: int, meta: Mapping[str, Any]) -> int:
        cash = meta.get("aopic_cash")
        if cash is None:
            return self.fallback.level(priority, depth, meta)
        return self.cash_level(cash, meta.get("aopic_mean") or 1.0, priority)

    def cash_level(self, cash: float, mean: float, priority: int = 0) -> int:
        """:meth:`level` of a URL with ``cash`` (not None) and a ``mean``
        (not 0), without a meta mapping (AOPIC's credit step asks twice per link)."""
        if cash <= 0:  # fetched and not credited since (a revisit)
            return 0
        raw = self.levels // 2 + math.floor(math.log2(cash / mean)) + priority // self.priority_step
        return min(self.levels - 1, max(0, raw))
