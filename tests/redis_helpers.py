"""Test-only helpers over the Redis backend: a frontier composed with the
shared dispatch from plain values, a reader of the URL-seen Bloom filter,
the content-seen sets on connections of their own."""

from __future__ import annotations

import re
import struct
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from extensions.aopic.ledger import AOPICLedger
from extensions.backends.redis.bloom import (
    HEADER_BITS,
    MAX_BITS,
    BloomLayout,
    bloom_hashes,
)
from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.contentseen import (
    MEMBER_BYTES,
    RedisContentSeen,
    RedisContentStore,
    decode_url,
    read_records,
)
from extensions.backends.redis.dispatch import SharedDispatch
from extensions.backends.redis.fpmap import fingerprint_of
from extensions.backends.redis.keys import Keys, glob_escape, host_tag, positions_by, scatter
from extensions.backends.redis.leases import HostLeases
from extensions.backends.redis.ledger import SharedLedger
from extensions.backends.redis.nearindex import RedisNearDuplicateIndex
from extensions.backends.redis.rows import read_varint, tag_of
from extensions.backends.redis.scripts import source
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.tail import MEMBER
from extensions.contentseen.nearindex import (
    DEFAULT_BLOCKS,
    DEFAULT_DISTANCE,
    DEFAULT_MIN_RESEMBLANCE,
    BlockLayout,
)
from extensions.frontier.scheduler import Frontier
from testweb.frontierargs import frontier_arguments

#: add URLs to one shard alone (the row scripts include the same ``bloom_add``). KEYS: shard.
#: ARGV: first capacity, first error, then h1, h2, h3 per URL. Returns 1 (new) or 0 (seen) per URL.
BLOOM_ADD = source("include/bloom") + """
local added = {}
for i = 3, #ARGV, 3 do
  added[#added + 1] = bloom_add(KEYS[1], ARGV[1], ARGV[2], ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
return added
"""


def shared_ledger(ledger: AOPICLedger | None, store: Any) -> AOPICLedger | None:
    """One ledger for every process (as ``RedisBackend.ledger`` gives it)."""
    if ledger is None or isinstance(ledger, SharedLedger):
        return ledger
    return SharedLedger(store, ledger.initial_cash, ledger.tax)


class DistributedFrontier(Frontier):
    """A :class:`Frontier` composed with the shared dispatch from plain
    values; the other keywords as
    :func:`~testweb.frontierargs.frontier_arguments` takes them. A
    host's window is 2 URLs: the rest of its queue goes through its tail."""

    def __init__(self, store: Any, *, lease_ttl: float = 10.0, poll_interval: float = 0.1,
                 max_lateness: float = 1.0, lease_clock: Callable[[], float] | None = None,
                 owner: str | None = None, front_queues: int = 8, back_queues: int = 48,
                 io_thread: bool = False, window: int = 2, **values: Any) -> None:
        dispatch = SharedDispatch(front_queues, back_queues, lease_ttl=lease_ttl, poll_interval=poll_interval,
                                  max_lateness=max_lateness, lease_clock=lease_clock, owner=owner,
                                  io_thread=io_thread, window=window)
        values.pop("queue_buffer", None)  # local back queues only
        values["ledger"] = shared_ledger(values.get("ledger"), store)
        super().__init__(store, dispatch, **frontier_arguments(**values))


class RedisBloom:
    """The shared filter alone as a :class:`~extensions.frontier.store.SeenSet`
    on an open :class:`~extensions.backends.redis.store.RedisStore`."""

    def __init__(self, store: Any, layout: BloomLayout) -> None:
        self.store, self.layout = store, layout

    def add_if_new(self, fingerprints: Sequence[int]) -> list[bool]:
        groups = positions_by(fingerprints, lambda fp: self.store.keys.bloom(tag_of(fp)))
        commands = [("EVAL", BLOOM_ADD, 1, key, *self.layout.args()[1:],
                     *[value for i in indexes for value in bloom_hashes(fingerprints[i])])
                    for key, indexes in groups.items()]
        return scatter(groups, self.store.call(*commands), len(fingerprints))

    def shards(self) -> list[bytes]:
        """Every shard's key (a SCAN)."""
        return list(self.store.scan(bloom_pattern(self.store.keys)))

    def size_bytes(self) -> int:
        """Bytes of every shard's string."""
        return _total(self.store.call(*[("STRLEN", key) for key in self.shards()]))

    def count(self) -> int:
        """URLs added, over every shard."""
        answers = self.store.call(*[("BITFIELD", key, "GET", "i64", 0) for key in self.shards()])
        return _total(answer[0] for answer in answers)


def bloom_pattern(keys: Keys) -> str:
    """Every shard of the URL-seen Bloom filter (a SCAN MATCH pattern)."""
    return f"{glob_escape(keys.prefix)}:{{*}}:bloom"


def shard_bytes(layout: BloomLayout, urls: int) -> int:
    """The length of a shard holding ``urls`` URLs (layers in use, whole)."""
    bits, total, j = HEADER_BITS, 0, 0
    while True:
        capacity, size, _ = layout.layer(j)
        bits += size
        total += capacity
        if urls <= total or bits + layout.layer(j + 1)[1] > MAX_BITS:
            return -(-bits // 8)
        j += 1


def _total(values: Iterable[Any]) -> int:
    return sum(int(value) for value in values)


def bucket_entries(bucket: bytes) -> list[tuple[bytes, bytes]]:
    """Every ``(member, records)`` of one bucket of a packed partition (the exact set's or the documents')."""
    entries, offset = [], 0
    while offset < len(bucket):
        length, start = read_varint(bucket, offset + MEMBER_BYTES)
        entries.append((bucket[offset:offset + MEMBER_BYTES], bucket[start:start + length]))
        offset = start + length
    return entries


def recorded_url(seen: RedisContentSeen, fingerprint: int) -> str | None:
    """The first URL the exact set recorded for ``fingerprint``, without recording anything."""
    found = seen.store.call(read_records(seen.store.keys.exact(fingerprint), fingerprint))[0][0]
    return None if found is None else decode_url(found)


def open_exact(url: str, prefix: str = "web", **options: Any) -> RedisContentSeen:
    """The exact content-seen set on a connection of its own (``options``: :class:`RedisContentStore`'s)."""
    return RedisContentSeen(RedisContentStore(url, prefix, **options))


def open_near(url: str, prefix: str = "web", distance: int = DEFAULT_DISTANCE, blocks: int = DEFAULT_BLOCKS,
              min_resemblance: float = DEFAULT_MIN_RESEMBLANCE, **options: Any) -> RedisNearDuplicateIndex:
    """The near-duplicate index on a connection of its own (``options``: :class:`RedisContentStore`'s)."""
    return RedisNearDuplicateIndex(RedisContentStore(url, prefix, **options), BlockLayout(distance, blocks),
                                   min_resemblance=min_resemblance)


def crawler_process(url: str, prefix: str) -> tuple[DistributedFrontier, RedisContentSeen]:
    """One crawler process: a shared frontier and the content-seen set on one connection."""
    connection = RedisConnection(url)
    frontier = DistributedFrontier(RedisStore(url, prefix, persist=False, connection=connection))
    frontier.open(None)
    seen = RedisContentSeen(RedisContentStore(url, prefix, persist=False, connection=connection))
    return frontier, seen


def map_buckets(client: Any, key: str | bytes) -> dict[tuple[int, int], bytes]:
    """The buckets of one extendible-hash set or map (``lua/include/fpset.lua``: the
    strings ``key:d:p``), by ``(d, p)``."""
    key = key.encode() if isinstance(key, str) else key
    pattern = re.sub(rb"([*?\[\]\\])", rb"\\\1", key) + b":*"
    return {tuple(map(int, name[len(key) + 1:].split(b":"))): client.get(name)  # type: ignore[misc]
            for name in client.scan_iter(match=pattern)}


def back_list(keys: Keys, host: str, level: str) -> str:
    """One list of the host's back queue (a level's, or ``p``: the parked), as
    ``bq_key`` of ``lua/include/backq.lua`` names it."""
    return f"{keys.prefix}:{{{host_tag(host)}}}:bq:{host}:{level}"


def back_lists_pattern(keys: Keys) -> str:
    """Every back-queue list of the crawl (a SCAN MATCH pattern)."""
    return f"{glob_escape(keys.prefix)}:{{*}}:bq:*"


def back_queue_counts(lease: dict[bytes, bytes]) -> dict[bytes, int]:
    """Queue name (``b"0"``, ``b"1"`` ... a level, ``b"p"`` the parked) -> length, from a lease's fields."""
    counts: Counter[bytes] = Counter()
    for field, value in lease.items():
        if field == b"p":
            counts[field] += int(value)
        elif field[:1] in (b"l", b"o") and field[1:].isdigit():
            counts[field[1:]] += len(value) // MEMBER if field[:1] == b"l" else int(value)
    return dict(counts)


def queued_fingerprint(key: str | bytes, item: bytes) -> int:
    """The fingerprint of an item of the back-queue list ``key``: a member, or a parked ``"fingerprint level"``."""
    key = key.encode() if isinstance(key, str) else key
    return int(item.split()[0]) if key.endswith(b":p") else fingerprint_of(key, item)


def queued(leases: HostLeases, host: str) -> list[int]:
    """``host``'s queued fingerprints in taking order (promoted copies included), then its tail's."""
    lease = leases.io.call(("HGETALL", leases.keys.lease(host)))[0]
    levels = sorted((int(name) for name in back_queue_counts(lease) if name != b"p"), reverse=True)
    lists = [back_list(leases.keys, host, name) for name in [*map(str, levels), "p"]]
    found = leases.io.call(*[("LRANGE", key, 0, -1) for key in lists])
    inline = [lease.get(b"l%d" % level, b"") for level in levels] + [b""]
    return [*(queued_fingerprint(key, item) for key, members, items in zip(lists, inline, found)
              for item in [*(members[at:at + MEMBER] for at in range(0, len(members), MEMBER)), *items]),
            *(fingerprint for fingerprint, _ in leases.store.urls.tail_rows([host]))]


_SETTLED, _CREDITED = struct.Struct(">ddq"), struct.Struct(">f")


def put_cash(store: RedisStore, rows: Sequence[tuple[int, float, float, int]]) -> None:
    """Cash rows ``(fingerprint, u, history, visits)`` written as the shared ledger's
    scripts write them (lua/include/cash.lua): ``u`` alone in single precision
    until fetched, then all three; read back as ``(u, history, 0.0, visits)``."""
    store.cash.maps.put([(fp, _SETTLED.pack(u, history, visits) if history or visits else _CREDITED.pack(u))
                         for fp, u, history, visits in rows])
