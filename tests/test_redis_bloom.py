"""The URL-seen Bloom filter in Redis bitmaps (extensions/backends/redis/bloom.py)
and the row trimming it allows, on real ``redis-server`` processes: the
false-positive rate against the configured one, two stores sharing the
filter, shards in their hosts' slots over three masters, trimmed rows
still counted, the layout fixed per crawl, the settings, and memory per URL
measured against exact rows.

The store-wide contract (the conformance suite) also runs in Bloom mode:
``tests/test_store_conformance.py``; whole crawls in
``tests/test_redis_store.py`` and ``tests/test_distributed*.py``.
"""

from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.cluster import RedisCluster
from redis.crc import key_slot
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.scheduler import Frontier
from extensions.frontier.store import Entry, FrontierStoreError, Status
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.bloom import BloomLayout
from tests.redis_helpers import RedisBloom, bloom_pattern, shard_bytes
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.redis.keys import host_tag
from extensions.backends.redis.rows import tag_of
from testweb.redisserver import RedisClusterServers, RedisServer, unique_prefix
from tests.test_frontier_support import drain, make_frontier

SMALL = BloomLayout(1_000, 0.01)  # first layers of 64 URLs: shards grow by layers


def real(url: str) -> Entry:
    fp, host = url_fingerprint(url)
    return Entry(fp, url, host)


def opened(url: str, prefix: str | None = None, bloom: BloomLayout | None = SMALL, **kwargs: Any) -> RedisStore:
    store = RedisStore(url, prefix or unique_prefix(), seen=bloom, **kwargs)
    store.open()
    return store


def signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def add_all(bloom: RedisBloom, fingerprints: list[int]) -> list[bool]:
    return [new for start in range(0, len(fingerprints), 5000)
            for new in bloom.add_if_new(fingerprints[start:start + 5000])]


# -- the filter ---------------------------------------------------------------------
def test_false_positives_stay_within_the_configured_rate(redis_server: RedisServer) -> None:
    """100,000 fingerprints of 50 hosts (2,000 per shard: five layers deep),
    then 100,000 others: none of the first is new again, and the others
    taken for seen are at most the configured 1% and not far below it (a
    filter much larger than needed would waste the memory it is for)."""
    rng = random.Random(7)
    tags = [rng.getrandbits(24) for _ in range(50)]
    pool: set[int] = set()
    while len(pool) < 200_000:
        pool.add(signed(rng.choice(tags) << 40 | rng.getrandbits(40)))
    inserted, others = list(pool)[:100_000], list(pool)[100_000:]
    bloom = RedisBloom(opened(redis_server.url), SMALL)
    assert add_all(bloom, inserted).count(False) < SMALL.error_rate * len(inserted)
    assert not any(add_all(bloom, inserted))  # no false negatives
    rate = add_all(bloom, others).count(False) / len(others)
    assert SMALL.error_rate / 2 < rate <= SMALL.error_rate
    assert len(bloom.shards()) == 50
    full_layers = 1.44 * math.log2(2.5 / SMALL.error_rate) / 8  # bytes per URL
    assert bloom.size_bytes() / bloom.count() < 2 * full_layers  # at most one layer not yet full


def test_a_shard_is_as_long_as_its_layers(redis_server: RedisServer) -> None:
    """The Lua layer arithmetic is the one BloomLayout documents."""
    store = opened(redis_server.url)
    bloom = RedisBloom(store, SMALL)
    rng = random.Random(3)
    fingerprints = list({signed(0xABCDEF << 40 | rng.getrandbits(40)) for _ in range(5000)})
    added = sum(add_all(bloom, fingerprints))
    assert bloom.count() == added  # the shard's header counts its URLs
    (shard,) = bloom.shards()
    length = store.call(("STRLEN", shard))[0]
    current = SMALL.layer(6)[1] // 8  # 64 x (2^6 - 1) < 5,000 <= 64 x (2^7 - 1): seven layers
    assert shard_bytes(SMALL, added) - current < length <= shard_bytes(SMALL, added)


@pytest.mark.parametrize("topology", ["single", "cluster"])
def test_two_stores_on_one_prefix_share_the_filter(
    topology: str, redis_server: RedisServer, redis_cluster: RedisClusterServers,
) -> None:
    url = redis_cluster.url if topology == "cluster" else redis_server.url
    prefix = unique_prefix()
    first, second = opened(url, prefix), opened(url, prefix)
    entries = [real(f"http://h{i % 7}.test/{i}") for i in range(100)]
    assert first.urls.insert_new(entries[:50], 1.0) == [True] * 50
    assert second.urls.insert_new(entries, 2.0) == [False] * 50 + [True] * 50
    first.urls.set_status([e.fingerprint for e in entries[:50]], Status.DONE, 3.0)
    first.checkpoint()
    assert second.urls.get_many([e.fingerprint for e in entries[:50]]) == {}  # trimmed
    assert second.urls.insert_new(entries, 4.0) == [False] * 100  # still seen
    assert first.urls.insert_new([real("http://h1.test/new")], 5.0) == [True]
    assert second.urls.count_by_status() == {Status.DONE: 50, Status.QUEUED: 51}
    first.close()
    second.close()


def test_shards_sit_in_their_hosts_slots_and_spread_over_the_masters(redis_cluster: RedisClusterServers) -> None:
    store = opened(redis_cluster.url)
    hosts = [f"h{i:03d}.test" for i in range(60)]
    store.urls.insert_new([real(f"http://{host}/{page}") for host in hosts for page in range(3)], 1.0)
    for host in hosts:
        tag = host_tag(host)
        assert key_slot(store.keys.bloom(tag).encode()) == key_slot(store.keys.urls(tag).encode()), host
    client = RedisCluster.from_url(redis_cluster.url)
    holding = {node.name for node in client.get_primaries()
               if any(True for _ in client.scan_iter(match=bloom_pattern(store.keys), target_nodes=node))}
    client.close()
    assert len(holding) == 3
    store.close()


# -- trimming -----------------------------------------------------------------------
def test_finished_rows_go_and_are_counted_by_status(redis_server: RedisServer) -> None:
    store = opened(redis_server.url)
    entries = [real(f"http://one.test/{i}") for i in range(10)]
    fps = [e.fingerprint for e in entries]
    store.urls.insert_new(entries, 1.0)
    store.urls.set_status(fps[:6], Status.INFLIGHT)
    store.urls.set_status(fps[:3], Status.DONE, 2.0, only_from=Status.INFLIGHT)
    store.urls.set_status(fps[3:4], Status.FAILED, 2.0)
    store.urls.set_status(fps[6:7], Status.EXCLUDED)
    store.urls.set_status(fps[7:8], Status.DONE, only_from=Status.INFLIGHT)  # queued: stays
    store.checkpoint()
    client = redis.Redis.from_url(redis_server.url)
    assert client.hget(store.keys.urls(tag_of(fps[0])), "N") == b"5"  # 2 in flight, 3 queued (fpmap.py)
    client.close()
    assert store.urls.count_by_status() == {Status.DONE: 3, Status.FAILED: 1, Status.EXCLUDED: 1,
                                       Status.INFLIGHT: 2, Status.QUEUED: 3}
    assert store.urls.count_host(fps[0], "one.test") == 10  # the host budget counts every URL
    assert store.urls.insert_new(entries, 3.0) == [False] * 10
    store.urls.requeue(entries[0], 4.0)  # dont_filter: a finished URL comes back
    assert store.urls.status_of(fps[0]) == Status.QUEUED
    store.close()


# -- the layout is the crawl's -----------------------------------------------------------
@pytest.mark.parametrize(("first", "then", "named"), [
    (None, SMALL, "FRONTIER_SEEN_BACKEND"),
    (SMALL, None, "FRONTIER_SEEN_BACKEND"),
    (SMALL, BloomLayout(2_000_000, 0.01), "FRONTIER_REDIS_BLOOM_CAPACITY"),
])
def test_a_crawl_keeps_the_url_seen_backend_it_began_with(
    redis_server: RedisServer, first: BloomLayout | None, then: BloomLayout | None, named: str,
) -> None:
    prefix = unique_prefix()
    opened(redis_server.url, prefix, first).close()
    with pytest.raises(FrontierStoreError, match=named):
        opened(redis_server.url, prefix, then)


# -- settings -------------------------------------------------------------------------
def _frontier(url: str, **settings: Any) -> Frontier:
    return Frontier.from_crawler(get_crawler(Spider, {"FRONTIER_BACKEND": "redis", "REDIS_URL": url, **settings}))


def _bloom_frontier(settings: dict[str, Any]) -> Frontier:
    return _frontier("redis://127.0.0.1:1/0", **{"FRONTIER_SEEN_BACKEND": "bloom", **settings})


def test_bloom_on_redis_is_the_shared_filter_not_the_in_process_one(redis_server: RedisServer) -> None:
    frontier = _frontier(redis_server.url, FRONTIER_SEEN_BACKEND="bloom", FRONTIER_REDIS_BLOOM_CAPACITY=5000,
                         FRONTIER_REDIS_BLOOM_ERROR_RATE=0.0001)
    assert frontier.store.seen == BloomLayout(5000, 0.0001)
    assert frontier.bloom is None
    assert _frontier(redis_server.url).store.seen == FingerprintSetLayout()  # exact: the fingerprint set


@pytest.mark.parametrize(("settings", "named"), [
    ({"FRONTIER_REDIS_BLOOM_CAPACITY": 0}, "FRONTIER_REDIS_BLOOM_CAPACITY"),
    ({"FRONTIER_REDIS_BLOOM_CAPACITY": "many"}, "FRONTIER_REDIS_BLOOM_CAPACITY"),
    ({"FRONTIER_REDIS_BLOOM_CAPACITY": 10**14}, "FRONTIER_REDIS_BLOOM_CAPACITY"),
    ({"FRONTIER_REDIS_BLOOM_ERROR_RATE": 0}, "FRONTIER_REDIS_BLOOM_ERROR_RATE"),
    ({"FRONTIER_REDIS_BLOOM_ERROR_RATE": 1.5}, "FRONTIER_REDIS_BLOOM_ERROR_RATE"),
    ({"FRONTIER_REDIS_BLOOM_ERROR_RATE": "low"}, "FRONTIER_REDIS_BLOOM_ERROR_RATE"),
    ({"FRONTIER_SEEN_BACKEND": "cuckoo"}, "FRONTIER_SEEN_BACKEND"),
])
def test_invalid_bloom_settings_fail_at_start_naming_the_setting(settings: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        _bloom_frontier(settings)


# -- memory per URL -----------------------------------------------------------------------
def _crawl(url: str, prefix: str, bloom: BloomLayout | None, urls: int) -> dict[str, Any]:
    """``urls`` URLs of 100 hosts enqueued and fetched by one frontier; its stats."""
    clock = Clock()
    frontier = make_frontier(RedisStore(url, prefix, seen=bloom), clock, back_queues=16)
    for i in range(urls):
        frontier.enqueue_request(Request(f"http://h{i % 100}.test/section/page-{i}.html"))
    assert len(drain(frontier, clock)) == urls
    frontier.checkpoint()
    stats = dict(frontier.stats.values)
    frontier.close("finished")
    return stats


def _memory_per_url(directory: Path, bloom: BloomLayout | None) -> dict[str, Any]:
    """A crawl of 5,000 URLs on a Redis of its own (nothing else in its
    memory), after a small one under another prefix: a fresh Redis also
    counts, at the first use of each command, its latency statistics."""
    with RedisServer(directory) as server:
        _crawl(server.url, "warm-up", bloom, 100)
        return _crawl(server.url, "web", bloom, 5000)


def test_bloom_mode_takes_less_redis_memory_per_url_than_exact_rows(tmp_path: Path) -> None:
    exact = _memory_per_url(tmp_path / "exact", None)
    bloom = _memory_per_url(tmp_path / "bloom", BloomLayout(1_000_000, 0.001))
    assert exact["frontier/redis_known_urls"] == 5000
    assert bloom["frontier/redis_known_urls"] >= 4990  # a false positive is not known
    assert exact["frontier/redis_bytes_per_url"] > 30  # the rows, kept (packed: fpmap.py)
    assert bloom["frontier/redis_bytes_per_url"] < exact["frontier/redis_bytes_per_url"] / 3
    assert bloom["frontier/redis_memory_bytes"] < exact["frontier/redis_memory_bytes"] / 3
