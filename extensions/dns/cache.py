"""The resolver's bounded memory: the answer cache and the lookup-time sample."""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import NamedTuple


class CacheEntry(NamedTuple):
    """An answer until ``expires_at``: ``address``, or (negative) ``reason``."""

    expires_at: float
    address: str | None = None
    reason: str | None = None

    @property
    def negative(self) -> bool:
        return self.address is None


def clamp_ttl(ttl: float, minimum: float, maximum: float) -> float:
    """A record's TTL kept inside [minimum, maximum] (DNS_MIN_TTL, DNS_MAX_TTL)."""
    return min(max(ttl, minimum), maximum)


class DnsCache:
    """LRU of at most ``size`` names (0: caches nothing), each an address or
    a negative answer until its TTL runs out on the caller's clock."""

    def __init__(self, size: int):
        if size < 0:
            raise ValueError(f"DNS_CACHE_SIZE={size!r}: must be >= 0")
        self.size = size
        self.entries: OrderedDict[str, CacheEntry] = OrderedDict()
        self.evictions = 0

    def __len__(self) -> int:
        return len(self.entries)

    def get(self, name: str, now: float) -> CacheEntry | None:
        """The live entry for ``name`` (now most recently used), or None."""
        entry = self.entries.get(name)
        if entry is None:
            return None
        if entry.expires_at <= now:
            del self.entries[name]
            return None
        self.entries.move_to_end(name)
        return entry

    def put(self, name: str, entry: CacheEntry) -> None:
        if not self.size:
            return
        self.entries[name] = entry
        self.entries.move_to_end(name)
        while len(self.entries) > self.size:
            self.entries.popitem(last=False)
            self.evictions += 1


class LatencySample:
    """Count and sum of every duration, and the latest ``size`` for percentiles."""

    def __init__(self, size: int = 1024):
        self.size = size
        self.values: list[float] = []
        self.next_slot = 0
        self.count = 0
        self.total = 0.0

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        if len(self.values) < self.size:
            self.values.append(value)
        else:
            self.values[self.next_slot] = value
            self.next_slot = (self.next_slot + 1) % self.size

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def percentile(self, fraction: float) -> float:
        """Nearest-rank percentile of the sample (``fraction`` in (0, 1])."""
        if not self.values:
            return 0.0
        ordered = sorted(self.values)
        return ordered[max(math.ceil(fraction * len(ordered)) - 1, 0)]
