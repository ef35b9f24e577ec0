"""What only the Redis store promises, on real ``redis-server`` processes:
the key layout in a Redis Cluster, round trips per frontier operation,
scrapy-redis' lifetime settings, AOF durability across a Redis crash,
retries when Redis goes away, the backend settings, and whole crawls.

The behaviour every store shares is in ``tests/test_store_conformance.py``.
"""

from __future__ import annotations

import logging
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
from extensions.backends.memory.backend import MemoryStore
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.bloom import BloomLayout
from tests.redis_helpers import RedisBloom, put_cash
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.redis.keys import SCHEMA_VERSION, host_tag
from extensions.backends.sqlite.store import SQLiteStore
from tests.conftest import fetched_urls
from testweb.crawlrun import run_web_crawl
from testweb.redisseen import RedisFingerprintSet
from testweb.redisserver import RedisClusterServers, RedisServer, free_port, unique_prefix
from tests.test_frontier_e2e import repeats_other_than_retries
from tests.test_frontier_support import drain, make_frontier, make_store


def real(url: str) -> Entry:
    fp, host = url_fingerprint(url)
    return Entry(fp, url, host)


def opened(url: str, prefix: str | None = None, **kwargs: Any) -> RedisStore:
    store = RedisStore(url, prefix or unique_prefix(), **kwargs)
    store.open()
    return store


# -- key layout ---------------------------------------------------------------------
def test_a_hosts_keys_share_one_slot_and_hosts_spread_over_every_shard(redis_cluster: RedisClusterServers) -> None:
    store = opened(redis_cluster.url)
    hosts = [f"h{i:03d}.test" for i in range(40)]
    entries = [real(f"http://{host}/{page}") for host in hosts for page in range(3)]
    store.urls.insert_new(entries, 1.0)
    put_cash(store, [(e.fingerprint, 1.0, 0.0, 0) for e in entries])
    store.groups.set_content_group(entries[0].fingerprint, 1, False)
    store.checkpoint()
    keys = store.keys
    for host in hosts:
        tag = host_tag(host)
        slots = {key_slot(key.encode()) for key in (
            keys.urls(tag), keys.host_urls(tag), keys.cash(tag), keys.groups(tag), keys.lease(host))}
        assert len(slots) == 1, host
    client = RedisCluster.from_url(redis_cluster.url)
    holding = {node.name for node in client.get_primaries()
               if any(True for _ in client.scan_iter(match=f"{keys.prefix}:{{*}}:urls", target_nodes=node))}
    assert len(holding) == 3
    client.close()
    store.close()


def test_every_url_row_lives_under_its_hosts_tag(redis_server: RedisServer) -> None:
    store = opened(redis_server.url)
    entries = [real(f"http://{host}.test/x") for host in ("a", "b", "c")]
    store.urls.insert_new(entries, 1.0)
    client = redis.Redis.from_url(redis_server.url)
    for entry in entries:  # one record in the tag's fpmap (fpmap.py)
        assert client.hget(store.keys.urls(host_tag(entry.host)), "N") == b"1"
    client.close()
    assert store.urls.get_many([e.fingerprint for e in entries]) == {e.fingerprint: e for e in entries}
    store.close()


# -- round trips ----------------------------------------------------------------------
@pytest.mark.parametrize("seen", ["exact", "bloom"])
def test_round_trips_per_frontier_operation(tmp_path: Path, seen: str) -> None:
    """Round trips per frontier operation with either URL-seen backend (the
    Bloom filter is tested and set in the row's own script)."""
    store = make_store("redis-bloom" if seen == "bloom" else "redis", tmp_path)
    clock = Clock()
    frontier = make_frontier(store, clock, back_queues=4)

    def trips(action: Any) -> int:
        before = store.round_trips
        action()
        return store.round_trips - before

    # sequence block + insert_new + the new host's listing on the shared heap
    assert trips(lambda: frontier.enqueue_request(Request("http://h0.test/0"))) == 3
    assert trips(lambda: frontier.enqueue_request(Request("http://h0.test/1"))) == 1
    assert trips(lambda: frontier.enqueue_request(Request("http://h0.test/1"))) == 0  # cached
    assert trips(lambda: [frontier.enqueue_request(Request(f"http://h{i % 10}.test/p{i}"))
                          for i in range(100)]) == 100 + 2 * 9  # 9 new hosts
    frontier.seen.cache = type(frontier.seen.cache)(0)
    assert trips(lambda: [frontier.enqueue_request(Request(f"http://h{i % 10}.test/p{i}"))
                          for i in range(100)]) == 100  # known, found in Redis
    fetched: list[Any] = []
    draining = trips(lambda: fetched.extend(drain(frontier, clock)))
    assert len(fetched) == 102
    assert draining <= 102 + 3 * 10  # a take per URL; a lease, its release and a poll per host
    counted_at = frontier.stats.get_value("frontier/urls_counted_at")
    checkpoint = trips(frontier.checkpoint)
    recounted = frontier.stats.get_value("frontier/urls_counted_at") != counted_at
    assert trips(store.checkpoint) == 0
    counting = trips(store.urls.count_by_status)
    # widened delays (other processes'); gauges; memory per URL (INFO included); the
    # crawl-wide stats; URLs by status unless counted lately (gauges.status_gauges)
    assert checkpoint == 4 + (counting if recounted else 0)
    assert store.urls.count_by_status() == {Status.DONE: 102}
    assert frontier.stats.get_value("frontier/redis_known_urls") == 102


def test_buffered_writes_wait_for_the_next_read_or_checkpoint(redis_server: RedisServer) -> None:
    store = opened(redis_server.url)
    before = store.round_trips
    store.hosts.defer_origin("http://a.test", "held", 1.0)
    store.urls.set_status([1], Status.DONE)
    store.set_meta("k", "v")
    assert store.round_trips == before
    assert store.get_meta("k") == "v"  # the read carries the writes
    assert store.round_trips == before + 1
    store.hosts.clear_deferrals()
    store.checkpoint()
    store.checkpoint()  # nothing buffered: no round trip
    assert store.round_trips == before + 2
    store.close()


def test_a_full_buffer_is_sent_without_waiting(redis_server: RedisServer) -> None:
    store = opened(redis_server.url, batch=10)
    before = store.round_trips
    for i in range(25):
        store.hosts.defer_origin(f"http://h{i}.test", "held", 1.0)
    assert store.round_trips == before + 2
    store.close()


# -- lifetime (scrapy-redis conventions) ----------------------------------------------------
def _crawl_keys(url: str, prefix: str) -> list[bytes]:
    client = redis.Redis.from_url(url)
    try:
        return list(client.scan_iter(match=f"{prefix}:*"))
    finally:
        client.close()


def test_without_persist_a_clean_close_deletes_the_crawls_keys_only(redis_server: RedisServer) -> None:
    kept, dropped = unique_prefix(), unique_prefix()
    for prefix, persist in ((kept, True), (dropped, False)):
        store = opened(redis_server.url, prefix, persist=persist)
        store.urls.insert_new([real("http://a.test/")], 1.0)
        store.hosts.defer_origin("http://a.test", "held", 1.0)
        put_cash(store, [(1, 1.0, 0.0, 0)])
        store.close()
    assert _crawl_keys(redis_server.url, dropped) == []
    assert len(_crawl_keys(redis_server.url, kept)) >= 5


def test_flush_on_start_starts_an_empty_crawl(redis_server: RedisServer) -> None:
    prefix = unique_prefix()
    store = opened(redis_server.url, prefix)
    store.urls.insert_new([real("http://a.test/")], 1.0)
    store.hosts.defer_origin("http://a.test", "held", 1.0)
    store.close()
    fresh = opened(redis_server.url, prefix, flush_on_start=True)
    assert fresh.urls.count_by_status() == {} and fresh.hosts.deferrals() == {} and fresh.clean
    fresh.close()


def test_another_schema_under_the_prefix_is_a_clear_error(redis_server: RedisServer) -> None:
    prefix = unique_prefix()
    client = redis.Redis.from_url(redis_server.url)
    client.hset(f"{prefix}:meta", "schema", "99")
    client.close()
    with pytest.raises(FrontierStoreError, match="layout 99.*FRONTIER_REDIS_PREFIX"):
        opened(redis_server.url, prefix)


# A layout-2 URL row (41-byte fixed head, then url, host, referer, extra,
# blob each with a 4-byte length) and cash row (four 8-byte numbers).
_LAYOUT_2_ROW = (b"0" + bytes(8) + (7).to_bytes(8, "big") + bytes(24) + (14).to_bytes(4, "big") + b"http://h.test/"
                 + (6).to_bytes(4, "big") + b"h.test" + b"\xff\xff\xff\xff" * 3)


@pytest.mark.parametrize("layout", ["1", "2", "3", "4", "5", "6", "7", "8", "9", "10"])
def test_a_crawl_written_by_an_earlier_layout_is_refused_naming_how_to_start_over(
    start_web: Any, tmp_path: Path, redis_server: RedisServer, layout: str,
) -> None:
    """Keys of an earlier layout (1: the URL rows were the seen set, finished
    ones kept; 2: URL and cash rows in fixed-width fields; 3: cash rows in
    the buckets of one hash per tag; 4: back queues in sorted sets; 5: every
    row with its host; 6: every row with its zero fields; 7: back-queue lists
    of decimal fingerprints, a Referer by its form; 8: a cash map's first
    bucket a key of its own) are never misread:
    a real crawl on them stops at start, says how to go on, and leaves them
    as they were."""
    prefix = unique_prefix()
    client = redis.Redis.from_url(redis_server.url)
    client.hset(f"{prefix}:meta", mapping={"schema": layout, "seen": "exact", "clean": "1"})
    client.hset(f"{prefix}:{{000001}}:urls", "7", _LAYOUT_2_ROW)
    client.hset(f"{prefix}:{{000001}}:cash", "7", bytes(32))
    before = {key: client.dump(key) for key in client.keys(f"{prefix}:*")}
    web = start_web(hosts=2, pages=2, links=1)
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings={
        "DNS_HOSTS": web.hosts_file, "FRONTIER_BACKEND": "redis", "REDIS_URL": redis_server.url,
        "FRONTIER_REDIS_PREFIX": prefix, "SCHEDULER_PERSIST": True}, timeout=120)
    assert result.returncode != 0
    assert f"written in layout {layout}, this release reads layout 11" in result.log, result.log[-3000:]
    assert "SCHEDULER_FLUSH_ON_START=True" in result.log and "FRONTIER_REDIS_PREFIX" in result.log
    assert not [e for e in web.entries() if e.path != "/robots.txt"]
    assert {key: client.dump(key) for key in client.keys(f"{prefix}:*")} == before
    client.close()


def test_a_crawl_begun_by_the_removed_single_process_frontier_is_refused(redis_server: RedisServer) -> None:
    """Its queued URLs are in request-queue lists and its ledger in the store's
    meta, which the shared frontier does not read: it stops at start, says how
    to go on, and leaves the keys as they were."""
    prefix = unique_prefix()
    client = redis.Redis.from_url(redis_server.url)
    client.hset(f"{prefix}:meta", mapping={"schema": SCHEMA_VERSION, "clean": "1", "aopic": "0.5,0.0,2.0,2.0,0.0"})
    client.rpush(f"{prefix}:queue:front/0", 7)
    before = {key: client.dump(key) for key in client.keys(f"{prefix}:*")}
    with pytest.raises(FrontierStoreError, match="single-process frontier.*SCHEDULER_FLUSH_ON_START.*PREFIX"):
        opened(redis_server.url, prefix)
    assert {key: client.dump(key) for key in client.keys(f"{prefix}:*")} == before
    client.close()


def test_a_cluster_url_with_another_database_is_a_clear_error(redis_cluster: RedisClusterServers) -> None:
    with pytest.raises(FrontierStoreError, match="database 0"):
        opened(redis_cluster.url.replace("/0", "/2"))


def test_a_password_never_reaches_the_message(tmp_path: Path) -> None:
    with pytest.raises(FrontierStoreError) as failure:
        opened(f"redis://crawler:s3cret@127.0.0.1:{free_port()}/0")
    assert "s3cret" not in str(failure.value) and "crawler:***@" in str(failure.value)


# -- durability and outages ---------------------------------------------------------------
def test_a_redis_crash_with_aof_keeps_every_acknowledged_write(redis_aof_server: RedisServer) -> None:
    prefix = unique_prefix()
    store = opened(redis_aof_server.url, prefix)
    entries = [real(f"http://h{i % 5}.test/{i}") for i in range(50)]
    store.urls.insert_new(entries, 1.0)
    store.urls.set_status([entries[0].fingerprint], Status.DONE, 2.0)
    store.hosts.set_crawl_delay("h0.test", 2.0)
    store.set_meta("last", "write")
    store.checkpoint()  # acknowledged; written to the AOF within about a second
    assert redis_aof_server.wait_until_in_aof(b"last") < 2.0
    redis_aof_server.kill()  # SIGKILL: no shutdown save
    store.abandon()
    redis_aof_server.start()
    reopened = opened(redis_aof_server.url, prefix)
    assert not reopened.clean
    assert reopened.urls.count_by_status() == {Status.QUEUED: 49, Status.DONE: 1}
    assert reopened.hosts.crawl_delays() == {"h0.test": 2.0}
    reopened.close()


def test_an_outage_is_retried_with_back_off_and_logged(
    redis_aof_server: RedisServer, caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis goes away; the first retry's warning brings it back (a log
    handler restarts it), and the store carries on where it was."""
    store = opened(redis_aof_server.url, retries=3)

    class RestartOnRetry(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "retry 1 of 3" in record.getMessage() and not redis_aof_server.ping():
                redis_aof_server.start()

    handler = RestartOnRetry()
    logging.getLogger("extensions.backends.redis.connection").addHandler(handler)
    try:
        redis_aof_server.kill()
        store.set_meta("written", "during the outage")
        with caplog.at_level(logging.WARNING, logger="extensions.backends.redis.connection"):
            assert store.get_meta("written") == "during the outage"
    finally:
        logging.getLogger("extensions.backends.redis.connection").removeHandler(handler)
    assert "retry 1 of 3" in caplog.text and redis_aof_server.url.split("/0")[0] in caplog.text
    store.close()


def test_an_outage_longer_than_the_retries_is_a_store_error(
    redis_aof_server: RedisServer, caplog: pytest.LogCaptureFixture,
) -> None:
    store = opened(redis_aof_server.url, retries=2)
    redis_aof_server.kill()
    with caplog.at_level(logging.WARNING, logger="extensions.backends.redis.connection"):
        with pytest.raises(FrontierStoreError, match=str(redis_aof_server.port)):
            store.get_meta("clean")
    assert "retry 2 of 2" in caplog.text
    store.abandon()


# -- settings -------------------------------------------------------------------------------
def _store_of(settings: dict[str, Any]) -> Any:
    return Frontier.from_crawler(get_crawler(Spider, settings)).store


def test_frontier_backend_chooses_the_store(redis_server: RedisServer) -> None:
    assert isinstance(_store_of({}), SQLiteStore)
    assert isinstance(_store_of({"FRONTIER_BACKEND": "memory"}), MemoryStore)
    store = _store_of({"FRONTIER_BACKEND": "redis", "REDIS_URL": redis_server.url,
                       "FRONTIER_REDIS_PREFIX": "crawl7", "SCHEDULER_PERSIST": True,
                       "FRONTIER_REDIS_RETRIES": 2})
    assert isinstance(store, RedisStore)
    assert (store.url, store.keys.prefix, store.persist, store.retries) == (redis_server.url, "crawl7", True, 2)
    assert not _store_of({"FRONTIER_BACKEND": "redis"}).persist  # scrapy-redis' default


@pytest.mark.parametrize(("settings", "named"), [
    ({"FRONTIER_BACKEND": "postgres"}, "FRONTIER_BACKEND"),
    ({"FRONTIER_BACKEND": "redis", "REDIS_URL": "127.0.0.1:6379"}, "REDIS_URL"),
    ({"FRONTIER_BACKEND": "redis", "FRONTIER_REDIS_PREFIX": "a{b}"}, "FRONTIER_REDIS_PREFIX"),
    ({"FRONTIER_BACKEND": "redis", "FRONTIER_REDIS_RETRIES": -1}, "FRONTIER_REDIS_RETRIES"),
])
def test_invalid_backend_settings_fail_at_start_naming_the_setting(settings: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        _store_of(settings)


# -- whole crawls ---------------------------------------------------------------------------
#: the shared Bloom filter for whole crawls: large enough that a false positive
#: (a page of the truth never fetched) is not a realistic outcome
CRAWL_BLOOM = BloomLayout(10_000_000, 1e-6)


@pytest.mark.parametrize(("topology", "seen"), [
    ("single", "exact"), ("cluster", "exact"), ("single", "bloom"), ("cluster", "bloom"),
])
def test_crawl_on_redis_fetches_exactly_the_ground_truth(
    topology: str, seen: str, start_web: Any, tmp_path: Path,
    redis_server: RedisServer, redis_cluster: RedisClusterServers,
) -> None:
    """The exact fingerprint set (the default) or, with
    FRONTIER_SEEN_BACKEND=bloom, the shared filter is the URL-seen test, and
    every finished row is gone at the end."""
    url = redis_cluster.url if topology == "cluster" else redis_server.url
    prefix = unique_prefix()
    layout = CRAWL_BLOOM if seen == "bloom" else FingerprintSetLayout()
    web = start_web(hosts=8, pages=8, links=4, seed=11)
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings={
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 6, "CONCURRENT_REQUESTS": 16,
        "CONTENTSEEN_ENABLED": False,  # the truth follows copies' links
        "FRONTIER_BACKEND": "redis", "REDIS_URL": url, "FRONTIER_REDIS_PREFIX": prefix,
        "SCHEDULER_PERSIST": True, "FRONTIER_SEEN_BACKEND": seen,
        "FRONTIER_REDIS_BLOOM_CAPACITY": CRAWL_BLOOM.capacity,
        "FRONTIER_REDIS_BLOOM_ERROR_RATE": CRAWL_BLOOM.error_rate,
    }, timeout=180)
    assert result.returncode == 0, result.log[-3000:]
    assert result.report["finish_reason"] == "finished"
    truth = web.truth(depth_limit=6, robots_5xx="allow")
    fetched = fetched_urls(web)
    assert set(truth.regular) <= set(fetched) <= set(truth.fetched)
    assert not repeats_other_than_retries(web)
    assert result.stats["frontier/redis_known_urls"] >= len(truth.regular)
    # the memory stat is Redis' growth since the crawl began: exact only on a
    # server of its own (tests/test_redis_bloom.py checks it there); these
    # servers are shared with every other test, whose keys come and go
    assert result.stats["frontier/redis_bytes_per_url"] >= 0
    pages = result.stats["response_received_count"]
    assert 0 < result.stats["frontier/store_round_trips"] < 10 * pages  # a few per page, not per link
    store = opened(url, prefix, seen=layout)
    assert store.clean
    counts = store.urls.count_by_status()
    assert counts.get(Status.QUEUED, 0) == counts.get(Status.INFLIGHT, 0) == 0
    assert counts.get(Status.DONE, 0) + counts.get(Status.FAILED, 0) >= len(truth.regular)
    assert not list(store.scan(store.keys.urls_pattern))  # every row trimmed
    seen_set = RedisBloom(store, layout) if seen == "bloom" else RedisFingerprintSet(store, layout)
    assert seen_set.count() == result.stats["frontier/redis_known_urls"]
    store.close()


def test_unreachable_redis_at_start_stops_the_crawl_with_a_clear_error(start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=2, pages=2, links=1)
    url = f"redis://127.0.0.1:{free_port()}/0"  # nobody listens there
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings={
        "DNS_HOSTS": web.hosts_file, "FRONTIER_BACKEND": "redis", "REDIS_URL": url}, timeout=120)
    assert result.returncode != 0
    assert f"cannot reach Redis at {url}" in result.log
    assert not [e for e in web.entries() if e.path != "/robots.txt"]


