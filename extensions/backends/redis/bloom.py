"""The URL-seen Bloom filter in Redis bitmaps, shared by every crawler process
(``FRONTIER_SEEN_BACKEND = "bloom"``): a false positive is a new URL never
crawled, at the configured rate (layout: docs/reference/redis-layout.md)."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import Any

import mmh3

from redis.crc import REDIS_CLUSTER_HASH_SLOTS

MIN_LAYER = 64  # URLs in a shard's first layer at the least
HEADER_BITS = 64  # the shard's URL count (BITFIELD i64 at offset 0)
MAX_BITS = 1 << 32  # a Redis string holds at most 512 MB
_SEED = 0x6D657263  # mmh3 seed of the Bloom hashes
_EPSILON = 1e-9  # log2(1/p) within this of an integer counts as that integer

@dataclass(frozen=True)
class BloomLayout:
    """Capacity and error rate of a crawl's filter, and the layer sizes they give every shard."""

    capacity: int
    error_rate: float
    kind = "bloom"

    def __post_init__(self) -> None:
        if isinstance(self.capacity, bool) or not isinstance(self.capacity, int) or self.capacity < 1:
            raise ValueError(f"FRONTIER_REDIS_BLOOM_CAPACITY must be an integer >= 1, got {self.capacity!r}")
        if not 0 < self.error_rate < 1:
            raise ValueError(f"FRONTIER_REDIS_BLOOM_ERROR_RATE must be in (0, 1), got {self.error_rate!r}")
        if HEADER_BITS + self.layer(0)[1] > MAX_BITS:
            raise ValueError(f"FRONTIER_REDIS_BLOOM_CAPACITY {self.capacity!r} gives each of the "
                             f"{REDIS_CLUSTER_HASH_SLOTS} shards more than Redis' 512 MB string limit")

    @property
    def first_capacity(self) -> int:
        return max(MIN_LAYER, -(-self.capacity // REDIS_CLUSTER_HASH_SLOTS))

    @property
    def first_error(self) -> float:
        """Layer ``j`` gets ``first_error / 2^j``: the errors add up to less than 0.8 of the rate."""
        return self.error_rate * 0.4

    def args(self) -> tuple[str, str, str]:
        """The ARGV head the row scripts take for this filter (``lua/include/seen.lua``)."""
        return self.kind, str(self.first_capacity), repr(self.first_error)

    def member_args(self, fingerprint: int) -> tuple[int, int, int]:
        """A URL's own ARGV in the row scripts: its probes' hashes."""
        return bloom_hashes(fingerprint)

    def key(self, keys: Any, tag: str) -> str:
        return keys.bloom(tag)

    def layer(self, j: int) -> tuple[int, int, int]:
        """``(capacity, bits, probes)`` of a shard's layer ``j``."""
        capacity, error = self.first_capacity * 2**j, self.first_error / 2**j
        bits = math.ceil(capacity * math.log(1 / error) / math.log(2) ** 2)
        return capacity, bits, math.ceil(math.log(1 / error) / math.log(2) - _EPSILON)

    def describe(self) -> str:
        """How the crawl's meta hash records the layout."""
        return f"bloom {self.capacity} {self.error_rate!r}"


def bloom_hashes(fingerprint: int) -> tuple[int, int, int]:
    """Three 32-bit hashes of a fingerprint for the probes ``h1 + i h2 + i^2 h3``
    (triple hashing; mmh3, since the fingerprint's top bits are shared by a slot)."""
    value = mmh3.hash128(struct.pack("<q", fingerprint), _SEED, signed=False)
    return value & 0xFFFFFFFF, (value >> 32) & 0xFFFFFFFF, (value >> 64) & 0xFFFFFFFF
