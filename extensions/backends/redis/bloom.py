"""The URL-seen Bloom filter in Redis bitmaps, shared by every crawler process.

``FRONTIER_SEEN_BACKEND = "bloom"`` with ``FRONTIER_BACKEND = "redis"``
makes this filter the URL-seen test instead of the URL rows (the exact
set), so that a URL's row can go once the URL is finished
(:mod:`extensions.backends.redis.store` trims it). A false positive is a new URL
taken for seen and never crawled, at the configured rate.

Shards. There is one bitmap per Redis Cluster *slot* in use,
``P:{bloom-N}:bloom``, ``bloom-N`` being the first such tag that hashes to
the slot of the host tag ``{T}`` (:func:`shard_tag`). So the shard a URL
is tested in lives in the same slot as its host's URL rows and back queue,
and the test-and-set runs inside the very script that inserts the row
(``bloom_add`` of ``lua/include/bloom.lua``, in the store's and the shared
frontier's scripts): one round trip, atomic with the insert, on a single Redis as on a
cluster, whose masters share the shards as they share the slots. A shard per
*fingerprint* hash would need a second command per URL, in another slot.

Layers (a scalable Bloom filter, Almeida et al. 2007). A slot holds the
URLs of the hosts hashed to it, and hosts' sizes follow a power law, so a
shard cannot be sized in advance: each starts with a layer for
``FRONTIER_REDIS_BLOOM_CAPACITY / 16384`` URLs (at least
:data:`MIN_LAYER`) at error 0.4 x ``FRONTIER_REDIS_BLOOM_ERROR_RATE``;
when a layer is full the next one, twice as large at half the error, is
appended to the same string. The errors add up to less than the configured
rate whatever the growth; a URL is tested in every full layer (``GETBIT``
until a 0, about two per layer for a new URL) and test-and-set in the
current one (one ``BITFIELD SET``: all old bits 1 means seen). Layer ``j`` for
``c`` URLs at error ``p`` has ``ceil(c ln(1/p) / ln(2)^2)`` bits and
``ceil(log2(1/p))`` probes, placed by triple hashing of three 32-bit parts
of the fingerprint's mmh3 hash (:func:`bloom_hashes`). Memory: about
``1.44 log2(2.5/p)`` bits per URL in full layers (2 bytes at p = 0.001),
more while the last layer fills. A shard's first 64 bits count its URLs;
it stops growing before Redis' 512 MB string limit (2^32 bits) and then
keeps filling its last layer, the error rising in that slot only.

The layout (capacity and error rate) is fixed when the crawl's keys are
created; :class:`BloomLayout` is recorded in the crawl's meta hash.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import mmh3

from extensions.backends.redis.rows import tag_of
from extensions.backends.redis.scripts import lua
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

MIN_LAYER = 64  # URLs in a shard's first layer at the least
HEADER_BITS = 64  # the shard's URL count (BITFIELD i64 at offset 0)
MAX_BITS = 1 << 32  # a Redis string holds at most 512 MB
_SEED = 0x6D657263  # mmh3 seed of the Bloom hashes
_EPSILON = 1e-9  # log2(1/p) within this of an integer counts as that integer

#: Add URLs to one shard; its ``bloom_add`` (``lua/include/bloom.lua``) is
#: called by the row scripts too. The layer arithmetic is :meth:`BloomLayout.layer`'s.
BLOOM_ADD = lua("bloom_add")


@dataclass(frozen=True)
class BloomLayout:
    """Capacity and error rate of a crawl's filter, and the layer sizes they
    give every shard (see the module docstring)."""

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
        """Layer ``j`` gets ``first_error / 2^j``, so the layers' errors add
        up to less than 0.8 of the rate: small layers measure about 10%
        above the formula, and the rest is margin."""
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

    def shard_bytes(self, urls: int) -> int:
        """The length of a shard holding ``urls`` URLs (layers in use, whole)."""
        bits, total, j = HEADER_BITS, 0, 0
        while True:
            capacity, size, _ = self.layer(j)
            bits += size
            total += capacity
            if urls <= total or bits + self.layer(j + 1)[1] > MAX_BITS:
                return -(-bits // 8)
            j += 1

    def describe(self) -> str:
        """How the crawl's meta hash records the layout."""
        return f"bloom {self.capacity} {self.error_rate!r}"


def bloom_hashes(fingerprint: int) -> tuple[int, int, int]:
    """Three 32-bit hashes of a fingerprint for the probes ``h1 + i h2 + i^2
    h3`` (triple hashing: with two, a small layer of ``m`` bits has only
    ``m^2`` probe patterns, and two URLs of a shard sharing one were seen at
    a thousand shards of 20 URLs). The fingerprint's own top bits are its
    host's hash, shared by a whole slot, hence mmh3."""
    value = mmh3.hash128(struct.pack("<q", fingerprint), _SEED, signed=False)
    return value & 0xFFFFFFFF, (value >> 32) & 0xFFFFFFFF, (value >> 64) & 0xFFFFFFFF


@cache
def _slot_tags() -> tuple[str, ...]:
    """For every slot, the first ``bloom-N`` that hashes to it (about 150,000
    CRC16s, once per process)."""
    tags: list[str | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
    missing, number = REDIS_CLUSTER_HASH_SLOTS, 0
    while missing:
        slot = key_slot(b"bloom-%d" % number)
        if tags[slot] is None:
            tags[slot] = f"bloom-{number}"
            missing -= 1
        number += 1
    return tuple(tags)  # type: ignore[arg-type]


def shard_tag(host_tag: str) -> str:
    """The hash tag of the Bloom shard in the slot of ``host_tag``."""
    return _slot_tags()[key_slot(host_tag.encode())]


class RedisBloom:
    """The shared filter as a :class:`~extensions.frontier.store.SeenSet`, on an
    open :class:`~extensions.backends.redis.store.RedisStore` (whose pipeline it
    uses). The store's own scripts test and set URLs together with their
    rows; this is the filter alone, for inspection, tests and callers that
    have only fingerprints."""

    def __init__(self, store: Any, layout: BloomLayout) -> None:
        self.store, self.layout = store, layout

    def add_if_new(self, fingerprints: Sequence[int]) -> list[bool]:
        groups: dict[str, list[int]] = {}
        for index, fp in enumerate(fingerprints):
            groups.setdefault(self.store.keys.bloom(tag_of(fp)), []).append(index)
        commands = []
        for key, indexes in groups.items():
            args = [value for i in indexes for value in bloom_hashes(fingerprints[i])]
            commands.append(("EVAL", BLOOM_ADD, 1, key, *self.layout.args()[1:], *args))
        new = [False] * len(fingerprints)
        for indexes, answer in zip(groups.values(), self.store.call(*commands)):
            for i, flag in zip(indexes, answer):
                new[i] = bool(flag)
        return new

    def shards(self) -> list[bytes]:
        """Every shard's key (a SCAN)."""
        return list(self.store.scan(self.store.keys.bloom_pattern))

    def size_bytes(self) -> int:
        """Bytes of every shard's string (a SCAN: for reports, not per page)."""
        return _total(self.store.call(*[("STRLEN", key) for key in self.shards()]))

    def count(self) -> int:
        """URLs added, over every shard."""
        answers = self.store.call(*[("BITFIELD", key, "GET", "i64", 0) for key in self.shards()])
        return _total(answer[0] for answer in answers)


def _total(values: Iterable[Any]) -> int:
    return sum(int(value) for value in values)
