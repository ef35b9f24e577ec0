"""Prioritisers: map a request to a front-queue level, 0 (lowest) .. K-1.

Mercator's prioritiser assigns each URL an integer priority between 1 and K
and appends it to that front queue. A prioritiser here is a small pure class
behind the ``FRONTIER_PRIORITIZER`` setting: built with ``levels=K`` and
asked ``level(priority, depth, meta)`` for each new URL. It never imports
Scrapy, so a later AOPIC prioritiser (cash in ``meta``) is a drop-in.
"""

from __future__ import annotations

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
