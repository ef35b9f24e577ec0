"""The host heap: each schedulable back queue's host and its earliest fetch time.

Entries are ``(ready_at, sequence, host)``: ties break by insertion order
and hosts are never compared. A host has at most one live entry;
rescheduling leaves a stale entry, skipped lazily and compacted away when
stale entries outnumber live ones. Pure: callers pass ``now``.
"""

from __future__ import annotations

import heapq
import itertools
import math


class HostHeap:
    """A min-heap of hosts by ready time, with replace and remove."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str]] = []
        self._live: dict[str, tuple[float, int]] = {}
        self._sequence = itertools.count()

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

    def ready_at(self, host: str) -> float | None:
        """When ``host`` is due, None if not scheduled."""
        entry = self._live.get(host)
        return None if entry is None else entry[0]

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
