"""The exact URL-seen set of the Redis store (extensions/backends/redis/fpset.py)
on real ``redis-server`` processes: exact against a Python set through
thousands of bucket splits, fingerprints a bit apart kept apart, the
buckets' invariants, a tag's set in its rows' slot on a cluster, and the
memory per URL Redis itself reports. Whole crawls over it:
``tests/test_redis_store.py``, ``tests/test_store_conformance.py``,
``tests/test_distributed*.py``."""

from __future__ import annotations

import random
from typing import Any

import pytest
import redis
from redis.crc import key_slot

from extensions.backends.redis.fpset import FingerprintSetLayout, member
from extensions.backends.redis.rows import tag_of
from extensions.backends.redis.store import RedisStore
from tests.redis_helpers import map_buckets
from testweb.redisseen import RedisFingerprintSet
from testweb.redisserver import RedisClusterServers, RedisServer, unique_prefix


def opened(url: str, layout: FingerprintSetLayout) -> RedisStore:
    store = RedisStore(url, unique_prefix(), seen=layout)
    store.open()
    return store


def fingerprints(rng: random.Random, tags: int, count: int) -> list[int]:
    """``count`` random fingerprints over ``tags`` host tags."""
    tag_values = [rng.getrandbits(24) for _ in range(tags)]
    return [(rng.choice(tag_values) << 40) | rng.getrandbits(40) for _ in range(count)]




@pytest.mark.parametrize("topology", ["single", "cluster"])
def test_the_set_is_exact_through_splits(topology: str, redis_server: RedisServer,
                                         redis_cluster: RedisClusterServers) -> None:
    """Buckets of 8 members: 6,000 URLs of 3 tags split them hundreds of
    times; every answer is a Python set's, fingerprints one bit apart (at the
    top, middle and bottom of the member) stay apart."""
    url = redis_cluster.url if topology == "cluster" else redis_server.url
    store = opened(url, FingerprintSetLayout(bucket=8))
    seen_set = RedisFingerprintSet(store, store.seen)
    rng = random.Random(7)
    fps = fingerprints(rng, 3, 6000)
    batch = fps[:3000] + rng.sample(fps[:3000], 500) + fps[3000:]  # repeats, within and across calls
    truth: set[int] = set()
    answers = []
    for start in range(0, len(batch), 700):
        chunk = batch[start:start + 700]
        answers += seen_set.add_if_new(chunk)
    for fp, new in zip(batch, answers):
        assert new == (fp not in truth), hex(fp)
        truth.add(fp)
    neighbours = [fps[0] ^ (1 << bit) for bit in (0, 20, 39)]
    assert seen_set.add_if_new(neighbours) == [n not in truth for n in neighbours]
    assert seen_set.add_if_new(neighbours) == [False, False, False]
    assert seen_set.count() == len(truth | set(neighbours))
    store.close()


def test_buckets_cover_their_prefixes_sorted_and_bounded(redis_server: RedisServer) -> None:
    store = opened(redis_server.url, FingerprintSetLayout(bucket=16))
    seen_set = RedisFingerprintSet(store, store.seen)
    rng = random.Random(3)
    fps = fingerprints(rng, 1, 4000)
    seen_set.add_if_new(fps)
    client = redis.Redis.from_url(redis_server.url)
    key = store.keys.seen(tag_of(fps[0]))
    table = map_buckets(client, key)
    depth = int(client.hget(key, "D"))
    assert depth == max(d for d, _ in table) and depth >= 8  # 4,000 / 16 members: 250+ buckets
    covered = 0.0
    for (d, prefix), value in table.items():
        members = [value[i:i + 5] for i in range(0, len(value), 5)]
        assert members == sorted(members) and len(members) <= 16
        assert all(int.from_bytes(m, "big") >> (40 - d) == prefix for m in members)
        covered += 2.0 ** -d
    assert covered == 1.0  # the buckets partition the member space
    assert sorted(m for value in table.values() for m in (value[i:i + 5] for i in range(0, len(value), 5))) == \
        sorted({member(fp) for fp in fps})
    client.close()
    store.close()


def test_a_tags_set_lives_in_the_slot_of_its_rows(redis_cluster: RedisClusterServers) -> None:
    store = opened(redis_cluster.url, FingerprintSetLayout())
    for tag in ("000000", "abcdef", "ffffff"):
        assert key_slot(store.keys.seen(tag).encode()) == key_slot(store.keys.urls(tag).encode())
    store.close()


def test_memory_per_url_is_under_eight_bytes(redis_server: RedisServer) -> None:
    """Redis' own MEMORY USAGE of the sets: 30,000 URLs over 100 hosts (300
    a host) at the default bucket size cost under 8 bytes a URL (members are 5)."""
    store = opened(redis_server.url, FingerprintSetLayout())
    seen_set = RedisFingerprintSet(store, store.seen)
    fps = fingerprints(random.Random(5), 100, 30_000)
    for start in range(0, len(fps), 5000):
        seen_set.add_if_new(fps[start:start + 5000])
    per_url = seen_set.size_bytes() / seen_set.count()
    assert 5 <= per_url < 8, per_url
    store.close()


@pytest.mark.parametrize("width", [5, 6, 8, 9, 11])
def test_members_of_any_width_are_kept_sorted_bytewise_and_exact(redis_server: RedisServer, width: int) -> None:
    """fpset_add_width (the near-duplicate tables' members are 6 to 11
    bytes) orders members by their bytes as Python does, through splits,
    and answers new/seen exactly, members sharing long prefixes included."""
    from extensions.backends.redis.scripts import source

    client = redis.Redis.from_url(redis_server.url)
    rng = random.Random(width)
    shared = [rng.randbytes(width - 1) for _ in range(3)]  # members one byte apart
    members = [rng.randbytes(width) for _ in range(1500)] + [p + bytes([b]) for p in shared for b in (0, 1, 255)]
    members += members[:200]  # repeats: seen
    script = source("include/fpset") + """
      local out = {}
      for i = 2, #ARGV do out[#out + 1] = fpset_add_width(KEYS[1], ARGV[1], ARGV[i], %d) end
      return out
    """ % width
    added = [a for start in range(0, len(members), 300)
             for a in client.eval(script, 1, "width-test", 16, *members[start:start + 300])]
    seen: set[bytes] = set()
    assert added == [0 if m in seen or seen.add(m) else 1 for m in members]  # type: ignore[func-returns-value]
    table = map_buckets(client, b"width-test")
    for value in table.values():
        found = [value[i:i + width] for i in range(0, len(value), width)]
        assert found == sorted(found)
    assert sorted(m for value in table.values() for m in (value[i:i + width] for i in range(0, len(value), width))) == \
        sorted(seen)
    client.delete("width-test", *(f"width-test:{d}:{p}" for d, p in table))
    client.close()
