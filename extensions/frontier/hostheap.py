"""The host heap: ``(ready_at, sequence, host)`` entries, at most one live
per host; stale entries are skipped lazily and compacted when they outnumber
live ones. Pure: callers pass ``now``."""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class HostHeap:
    """A min-heap of hosts by ready time, with replace and remove."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str]] = []
        self._live: dict[str, tuple[float, int]] = {}
        self._sequence = itertools.count()
        self._ready: list[tuple[Any, int, str]] = []  # due hosts taken off the heap, best first

    def __len__(self) -> int:
        return len(self._live)

    def __contains__(self, host: object) -> bool:
        return host in self._live

    def schedule(self, host: str, ready_at: float) -> None:
        """Make ``host`` due at ``ready_at`` (replacing an earlier entry)."""
        sequence = next(self._sequence)
        self._live[host] = (ready_at, sequence)
        heapq.heappush(self._heap, (ready_at, sequence, host))
        if len(self._heap) > 2 * len(self._live) + 64:
            self._compact()

    def place(self, host: str, ready_at: float) -> None:
        """On the heap at ``ready_at``; off it if never (infinite)."""
        if ready_at < math.inf:
            self.schedule(host, ready_at)
        else:
            self.remove(host)

    def remove(self, host: str) -> None:
        """Forget ``host`` (its entry goes stale)."""
        self._live.pop(host, None)

    def next_time(self) -> float | None:
        """The earliest ready time, None when empty."""
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: float) -> str | None:
        """Remove and return the earliest host due at ``now``, else None."""
        self._drop_stale()
        if not self._heap or self._heap[0][0] > now:
            return None
        _, _, host = heapq.heappop(self._heap)
        del self._live[host]
        return host

    def serve_due(self, now: float, order: Callable[[str], Any], serve: Callable[[str], T | None],
                  ready_at: Callable[[str], float], reschedule: Callable[[str], None],
                  more: Callable[[], bool] = lambda: True) -> T | None:
        """Serve the hosts due at ``now`` best first until ``serve`` gives a result or ``more()`` is false."""
        ready = self._ready
        while (host := self.pop_due(now)) is not None:
            key = order(host)
            if key is not None:
                heapq.heappush(ready, (key, next(self._sequence), host))
        while ready and more():
            host = heapq.heappop(ready)[2]
            if host in self._live:
                continue
            if ready_at(host) > now:
                reschedule(host)
                continue
            result = serve(host)
            if result is not None:
                return result
        return None

    def _drop_stale(self) -> None:
        heap, live = self._heap, self._live
        while heap:
            ready_at, sequence, host = heap[0]
            if live.get(host) == (ready_at, sequence):
                return
            heapq.heappop(heap)

    def _compact(self) -> None:
        self._heap = [(t, s, h) for h, (t, s) in self._live.items()]
        heapq.heapify(self._heap)
