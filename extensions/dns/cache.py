"""The resolver's bounded memory: the answer cache and the lookup-time sample."""

from __future__ import annotations

import math
from collections import deque
from typing import NamedTuple

from scrapy.utils.datatypes import LocalCache


class CacheEntry(NamedTuple):
    """An answer until ``expires_at``: ``address``, or (negative, no address) ``reason``."""

    expires_at: float
    address: str | None = None
    reason: str | None = None


class DnsCache(LocalCache[str, CacheEntry]):
    """LRU of at most ``size`` names (0: caches nothing), each an address or
    a negative answer until its TTL runs out on the caller's clock."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"DNS_CACHE_SIZE={size!r}: must be >= 0")
        super().__init__(size)

    def live(self, name: str, now: float) -> CacheEntry | None:
        """The live entry for ``name`` (now most recently used), or None."""
        entry = self.get(name)
        if entry is None:
            return None
        if entry.expires_at <= now:
            del self[name]
            return None
        self.move_to_end(name)
        return entry

    def put(self, name: str, entry: CacheEntry) -> None:
        self[name] = entry  # the least recently used name goes first when full
        if name in self:
            self.move_to_end(name)


class LatencySample:
    """Count and sum of every duration, and the latest ``size`` for percentiles."""

    def __init__(self, size: int = 1024) -> None:
        self.values: deque[float] = deque(maxlen=size)
        self.count = 0
        self.total = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        self.values.append(value)

    def percentile(self, fraction: float) -> float:
        """Nearest-rank percentile of the sample (``fraction`` in (0, 1])."""
        if not self.values:
            return 0.0
        ordered = sorted(self.values)
        return ordered[max(math.ceil(fraction * len(ordered)) - 1, 0)]
