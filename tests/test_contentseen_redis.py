"""The content-seen sets in Redis (extensions/backends/redis/contentseen.py,
redisnear.py) on real ``redis-server`` processes: the behaviours the SQLite
sets are tested for, run over SQLite, a single Redis and a 3-master cluster;
then what only Redis promises (processes sharing the sets, first writer
wins, key spread, round trips, lifetime, failures, the backend setting);
and several ``scrapy crawl web`` processes catching each other's copies.
"""

from __future__ import annotations

import logging
import random
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.cluster import RedisCluster
from redis.crc import key_slot
from redis.retry import Retry
from scrapy import Spider
from scrapy.utils.test import get_crawler

from crawler.items import PageItem
from extensions.backends.redis.connection import connect
from extensions.backends.redis.contentseen import RedisContentSeen, RedisContentStore
from extensions.backends.redis.nearindex import RedisNearDuplicateIndex
from extensions.backends.redis.store import RedisStore
from extensions.contentseen.exact import ContentSeen, ContentStoreError
from extensions.contentseen.features import content_features
from extensions.contentseen.nearindex import BlockLayout, NearDuplicateIndex
from extensions.contentseen.resemblance import near_features
from extensions.contentseen.simhash import shingle_set, simhash
from extensions.contentseen.text import visible_text
from extensions.pipelines.contentseen import ContentSeenPipeline
from tests.conftest import fetched_urls
from tests.redis_helpers import bucket_entries, map_buckets, open_exact, open_near, recorded_url
from tests.test_contentseen_nearindex import assert_near_is_exact, flip, planted_web
from tests.test_distributed import crawl_settings, crawlers, wait_all
from tests.test_frontier_e2e import fetched_urls_of
from testweb.neardup_truth import exact_resemblance, expected_candidates, split_url
from testweb.redisserver import (
    RedisClusterServers,
    RedisServer,
    free_port,
    unique_prefix,
)


class Sets:
    """Opens one backend's exact set and near index, again after a close."""

    def __init__(self, kind: str, directory: Path, url: str = "") -> None:
        self.kind, self.directory, self.url = kind, directory, url
        self.prefix = unique_prefix()

    def exact(self) -> Any:
        if self.kind == "sqlite":
            return ContentSeen.open(self.directory / "seen.sqlite3")
        return open_exact(self.url, self.prefix)

    def recorded(self, seen: Any, fingerprint: int) -> str | None:
        """The first URL ``seen`` (from :meth:`exact`) recorded for ``fingerprint``, without recording anything."""
        return seen.get(fingerprint) if self.kind == "sqlite" else recorded_url(seen, fingerprint)

    def near(self, **layout: int) -> Any:
        if self.kind == "sqlite":
            return NearDuplicateIndex.open(self.directory / "near.sqlite3", **layout)
        return open_near(self.url, self.prefix, **layout)


@pytest.fixture(params=["sqlite", "redis", "redis-cluster"])
def sets(request: pytest.FixtureRequest, tmp_path: Path) -> Sets:
    if request.param == "sqlite":
        return Sets("sqlite", tmp_path)
    server = request.getfixturevalue("redis_cluster" if request.param == "redis-cluster" else "redis_server")
    return Sets(request.param, tmp_path, server.url)


def fingerprints(count: int, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(64) for _ in range(count)]


# -- the exact set, every backend -------------------------------------------------------
def test_first_url_wins_and_later_urls_are_duplicates(sets: Sets) -> None:
    with sets.exact() as seen:
        assert seen.add_or_get(123, "http://a.test/") == "http://a.test/"
        assert seen.add_or_get(123, "http://b.test/") == "http://a.test/"
        assert seen.duplicate_of(123, "http://c.test/") == "http://a.test/"
        assert seen.duplicate_of(123, "http://a.test/") is None  # the same URL fetched again
        assert seen.duplicate_of(456, "http://d.test/") is None
        assert sets.recorded(seen, 789) is None
        assert seen.stats()["duplicates"] == 2 and seen.stats()["added"] == 2


def test_full_64_bit_range_and_any_url_are_stored(sets: Sets) -> None:
    values = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]
    with sets.exact() as seen:
        for value in values:
            seen.add_or_get(value, f"http://h.test/é/{value}")
    with sets.exact() as seen:
        assert [sets.recorded(seen, value) for value in values] == [f"http://h.test/é/{value}" for value in values]


def test_fingerprints_survive_close_and_reopen(sets: Sets) -> None:
    values = fingerprints(2000)
    with sets.exact() as seen:
        for number, value in enumerate(values):
            seen.add_or_get(value, f"http://h.test/{number}")
    with sets.exact() as seen:
        for number, value in enumerate(values):
            assert seen.duplicate_of(value, "http://mirror.test/") == f"http://h.test/{number}"
        assert seen.stats()["added"] == 0 and seen.stats()["duplicates"] == len(values)


# -- the near-duplicate index, every backend ---------------------------------------------
@pytest.mark.parametrize("reopen", [False, True], ids=["open", "after-reopen"])
def test_near_finds_exactly_the_stored_simhashes_within_distance_3(sets: Sets, reopen: bool) -> None:
    rng = random.Random(3)
    values = planted_web(rng, stored=3000, centres=150)
    index = sets.near()
    for number, value in enumerate(values):
        index.add_or_match(value, f"u{number}")
    if reopen:
        index.close()
        index = sets.near()
    assert_near_is_exact(index, values, rng, queries=500, per_distance=20)
    index.close()


def test_match_is_the_closest_then_earliest(sets: Sets) -> None:
    rng = random.Random(4)
    centre = rng.getrandbits(64)
    with sets.near() as index:
        far = flip(centre, 3, rng)
        index.add_or_match(far, "far")
        index.add_or_match(flip(centre, 1, rng), "close-1")
        index.add_or_match(flip(centre, 1, rng), "close-2")
        assert index.match(centre).url == "close-1"
        assert index.match(centre).distance == 1
        assert index.match(far).url == "far" and index.match(far).distance == 0


def test_distance_3_matches_and_distance_4_does_not(sets: Sets) -> None:
    rng = random.Random(10)
    with sets.near() as index:
        stored = rng.getrandbits(64)
        index.add_or_match(stored, "stored")
        for _ in range(200):
            assert index.match(flip(stored, 3, rng)).distance == 3
            assert index.match(flip(stored, 4, rng)) is None


def test_groups_join_the_closest_match_and_persist(sets: Sets) -> None:
    rng = random.Random(5)
    base = rng.getrandbits(64)
    with sets.near() as index:
        group, near = index.add_or_match(base, "http://a.test/")
        assert near is None
        assert index.add_or_match(flip(base, 2, rng), "http://b.test/") == (group, "http://a.test/")
        assert index.add_or_match(base, "http://mirror.test/") == (group, "http://a.test/")
        other, near = index.add_or_match(flip(base, 20, rng), "http://c.test/")
        assert near is None and other != group
        assert index.stats()["identical"] == 1 and index.stats()["stored"] == 3
    with sets.near() as index:
        assert index.add_or_match(flip(base, 1, rng), "http://d.test/") == (group, "http://a.test/")
        newest, _ = index.add_or_match(rng.getrandbits(64), "http://e.test/")
        assert newest not in (group, other)


def test_a_candidate_must_resemble_to_be_a_near_duplicate_and_sketches_persist(sets: Sets) -> None:
    """Issue 12: a simhash within the distance is only a candidate; the
    estimated shingle resemblance decides, on every backend, after a reopen too."""
    rng = random.Random(6)
    texts = [" ".join(f"w{rng.randrange(5000)}" for _ in range(400)) for _ in range(3)]
    original, unrelated, other = (near_features(text) for text in texts)
    with sets.near() as index:
        group, _ = index.add_or_match(original.simhash, "http://a.test/", original.sketch)
        assert index.add_or_match(original.simhash ^ 1, "http://b.test/", unrelated.sketch)[1] is None
        assert index.stats()["dissimilar"] == 1
    with sets.near() as index:
        assert index.add_or_match(original.simhash ^ 2, "http://c.test/", original.sketch) == (
            group, "http://a.test/")
        found = index.match(original.simhash ^ 4, original.sketch)
        assert found.url == "http://a.test/" and found.resemblance == 1.0
        assert index.match(original.simhash ^ 4, other.sketch) is None
        assert [match.url for match in index.near(original.simhash, unrelated.sketch)] == ["http://b.test/"]


def test_candidates_per_lookup_stay_small(sets: Sets) -> None:
    rng = random.Random(7)
    with sets.near() as index:
        for number in range(3000):
            index.add_or_match(rng.getrandbits(64), f"u{number}")
        before = index.stats()["candidates"]
        for _ in range(500):
            index.match(rng.getrandbits(64))
        assert (index.stats()["candidates"] - before) / 500 <= 10 * expected_candidates(BlockLayout(), 3000) + 0.05


def test_the_index_keeps_its_layout(sets: Sets) -> None:
    sets.near(blocks=5).close()
    with pytest.raises(ContentStoreError, match="blocks"):
        sets.near(blocks=6)


# -- several processes on one Redis --------------------------------------------------------
@pytest.fixture(params=["single", "cluster"])
def redis_url(request: pytest.FixtureRequest) -> str:
    return request.getfixturevalue("redis_cluster" if request.param == "cluster" else "redis_server").url


def test_two_clients_see_each_others_fingerprints_and_the_first_writer_wins(redis_url: str) -> None:
    """Two connections add the same fingerprints at once (threads, so the
    commands interleave on the server): every fingerprint is added once and
    both are told the same first URL."""
    prefix = unique_prefix()
    values = fingerprints(1500, seed=11)
    clients = [open_exact(redis_url, prefix) for _ in range(2)]
    answers: list[dict[int, str]] = [{}, {}]
    start = threading.Barrier(2)

    def add(number: int) -> None:
        order = values[:] if number == 0 else values[::-1]
        start.wait()
        for value in order:
            answers[number][value] = clients[number].add_or_get(value, f"http://client{number}.test/{value}")

    threads = [threading.Thread(target=add, args=(number,)) for number in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers[0] == answers[1]
    added = [client.stats()["added"] for client in clients]
    assert sum(added) == len(values) and all(added), added  # each won some races
    assert sum(client.stats()["duplicates"] for client in clients) == len(values)
    assert recorded_url(clients[1], values[0]) == answers[0][values[0]]
    for client in clients:
        client.close()


def test_a_document_stored_by_one_client_is_matched_by_another(redis_url: str) -> None:
    prefix = unique_prefix()
    rng = random.Random(12)
    base = rng.getrandbits(64)
    with open_near(redis_url, prefix) as first, \
            open_near(redis_url, prefix) as second:
        group, _ = first.add_or_match(base, "http://a.test/")
        assert second.match(base) is None  # still in the first client's pipeline
        first.flush()
        assert second.add_or_match(flip(base, 2, rng), "http://b.test/") == (group, "http://a.test/")
        other, near = second.add_or_match(rng.getrandbits(64), "http://c.test/")
        assert near is None and other != group  # ids come from disjoint blocks


def test_the_table_read_adds_the_simhash_only_for_a_document_to_be_stored(redis_url: str) -> None:
    """add_or_match's table read adds the simhash to every table (one script); match and near
    read only; an identical simhash adds nothing."""
    prefix, rng = unique_prefix(), random.Random(13)
    client = connect(redis_url, 10.0, Retry(NoBackoff(), 0))

    def members(index: RedisNearDuplicateIndex) -> int:
        return sum(len(bucket) // index.geometry.width
                   for table in client.scan_iter(match=f"{prefix}*:near_table*", count=1000)
                   if b":near_table:" in table for bucket in [client.get(table)])

    with open_near(redis_url, prefix) as index:
        tables = len(index.layout.tables)
        base = rng.getrandbits(64)
        index.match(base), index.near(flip(base, 1, rng))
        assert members(index) == 0
        index.add_or_match(base, "http://a.test/")
        index.flush()
        assert members(index) == tables
        index.add_or_match(base, "http://b.test/")  # identical: not stored
        index.add_or_match(flip(base, 2, rng), "http://c.test/")
        index.flush()
        assert members(index) == 2 * tables
    client.close()


def test_the_exact_set_on_redis_is_packed_and_stays_exact_through_bucket_splits(redis_server: Any) -> None:
    """3,000 fingerprints of one partition (one top byte) split its buckets many
    times: every URL is found again under its fingerprint, none under another,
    and a page costs its URL and the member (7 bytes) plus a little framing,
    not a hash field (the layout before: about 20 bytes more a page)."""
    prefix = unique_prefix()
    rng = random.Random(5)
    values = list({0xAB << 56 | rng.getrandbits(56) for _ in range(3000)})
    with RedisContentSeen(RedisContentStore(redis_server.url, prefix)) as seen:
        for number, value in enumerate(values):
            assert seen.add_or_get(value, f"http://h.test/{number:05d}") == f"http://h.test/{number:05d}"
        for number, value in enumerate(values):
            assert seen.add_or_get(value, "http://mirror.test/") == f"http://h.test/{number:05d}"
        assert recorded_url(seen, 0xAC << 56 | values[0] & (1 << 56) - 1) is None  # same member, other partition
        client = redis.Redis.from_url(redis_server.url)
        try:
            key = seen.store.keys.exact(values[0])
            buckets = map_buckets(client, key)
            held = sum(client.memory_usage(name, samples=0) for name in [key, *client.scan_iter(match=key + ":*")]
                       if client.exists(name))
        finally:
            client.close()
    assert len(buckets) >= 16  # split, not one growing value
    assert sum(len(bucket_entries(bucket)) for bucket in buckets.values()) == len(values)
    assert held / len(values) < len("http://h.test/00000") + 7 + 12, held / len(values)


def test_keys_spread_over_the_three_masters_and_no_partition_is_hot(redis_cluster: RedisClusterServers) -> None:
    prefix = unique_prefix()
    store = RedisContentStore(redis_cluster.url, prefix)
    exact, near = RedisContentSeen(store), RedisNearDuplicateIndex(store, BlockLayout())
    rng = random.Random(13)
    for number in range(400):
        exact.add_or_get(rng.getrandbits(64), f"u{number}")
        near.add_or_match(rng.getrandbits(64), f"u{number}")
    near.flush()
    client = RedisCluster.from_url(redis_cluster.url)
    try:
        for kind, entries in (("exact", 400), ("near_docs", 400), ("near_table", 4000)):
            pattern = f"{prefix}:contentseen:{{*}}:{kind}:*"  # the buckets (lua/include/fpset.lua)
            holding = {node.name for node in client.get_primaries()
                       if any(True for _ in client.scan_iter(match=pattern, target_nodes=node))}
            assert len(holding) == 3, kind
            keys = list(client.scan_iter(match=pattern))
            maps: dict[bytes, int] = {}
            for key in keys:
                value = client.get(key)
                size = len(value) // near.geometry.width if kind == "near_table" else len(bucket_entries(value))
                maps[key.rsplit(b":", 2)[0]] = maps.get(key.rsplit(b":", 2)[0], 0) + size
            sizes = list(maps.values())  # packed sets: members of the geometry's width; packed maps: entries
            assert sum(sizes) == entries, kind
            assert max(sizes) <= 10, (kind, max(sizes))  # spread, not one hot key
            for key in keys:  # a key lives in the slot of its hash tag
                tag = key.split(b"{", 1)[1].split(b"}", 1)[0]
                assert key_slot(key) == key_slot(tag)
        # the masters hold about as many bytes of the content-seen sets
        held = [sum(client.memory_usage(key, samples=0) or 0
                    for key in client.scan_iter(match=f"{prefix}:contentseen:*", target_nodes=node))
                for node in client.get_primaries()]
        assert max(held) <= 1.25 * min(held), held
    finally:
        client.close()
    exact.close()
    near.close()


# -- round trips ------------------------------------------------------------------------------
def _item(url: str, body: bytes, content_type: str = "text/html; charset=utf-8") -> PageItem:
    """The item as the spider hands it to the pipelines: its content features as data."""
    mime = content_type.split(";", 1)[0]
    return PageItem(url=url, status=200, content_type=content_type,
                    content_features=content_features(body, "utf-8", mime))


def _pipeline(url: str, prefix: str, **settings: Any) -> ContentSeenPipeline:
    crawler = get_crawler(Spider, {"CONTENTSEEN_BACKEND": "redis", "REDIS_URL": url,
                                   "FRONTIER_REDIS_PREFIX": prefix, "CONTENTSEEN_FLUSH_INTERVAL": 0,
                                   **settings})
    crawler.engine = SimpleNamespace(scheduler=None)  # no frontier: groups are not recorded
    return ContentSeenPipeline.from_crawler(crawler)


def _html(words: list[str]) -> bytes:
    return f"<html><body><p>{' '.join(words)}</p></body></html>".encode()


def _near_copy(words: list[str]) -> list[str]:
    """``words`` with one word changed, within simhash distance 1..3 (as the pipeline sees them)."""
    def value(text_words: list[str]) -> int:
        return simhash(visible_text(_html(text_words), "utf-8"))

    original = value(words)
    for position in range(len(words)):
        edited = words[:position] + ["lantern"] + words[position + 1:]
        if 0 < (value(edited) ^ original).bit_count() <= 3:
            return edited
    raise AssertionError("no one-word edit within distance 3")


def test_round_trips_per_page(redis_url: str) -> None:
    """The table in extensions/backends/redis/contentseen.py's docstring, through the pipeline."""
    pipeline = _pipeline(redis_url, unique_prefix())
    pipeline.sets.store.clock = lambda: 0.0  # one heartbeat at open, none due later
    pipeline.open_spider()
    store = pipeline.sets.store
    rng = random.Random(14)
    vocabulary = ["alpha", "beta", "gamma", "delta", "river", "mountain", "copper", "violet", "orbit", "signal", "amber", "garden"]
    words = [rng.choice(vocabulary) + str(rng.randrange(50)) for _ in range(400)]
    html = _html

    def trips(item: PageItem) -> tuple[int, PageItem]:
        before = store.round_trips
        done = pipeline.process_item(item)
        return store.round_trips - before, done

    assert trips(_item("http://a.test/", html(words)))[0] == 1  # new: candidates ride with the exact test
    count, copy = trips(_item("http://mirror.test/", html(words)))
    # carries a.test's store; + the match's record: the copy joins its original's content group
    assert count == 2 and copy["duplicate_of"] == "http://a.test/"
    count, near = trips(_item("http://b.test/", html(_near_copy(words))))
    assert count == 2 and near["near_duplicate_of"] == "http://a.test/"  # + the match's record
    assert trips(_item("http://a.test/logo.png", b"\x89PNG....", "image/png"))[0] == 1
    assert trips(_item("http://c.test/", html(words[::-1])))[0] == 1
    before = store.round_trips
    pipeline.flush()  # c.test's store
    pipeline.flush()  # nothing buffered
    assert store.round_trips == before + 1
    pipeline.close()


# -- lifetime -------------------------------------------------------------------------------
def _content_keys(url: str, prefix: str) -> list[bytes]:
    client = connect(url, 5.0, Retry(NoBackoff(), 0))
    try:
        return list(client.scan_iter(match=f"{prefix}:contentseen:*"))
    finally:
        client.close()


def test_without_persist_only_the_last_process_deletes_the_keys(redis_url: str) -> None:
    prefix = unique_prefix()
    first = open_exact(redis_url, prefix, persist=False)
    second = open_near(redis_url, prefix, persist=False)
    first.add_or_get(1, "http://a.test/")
    second.add_or_match(2, "http://a.test/")
    first.close()  # another process is alive: the keys stay
    assert second.match(2) is not None
    with open_exact(redis_url, prefix) as third:  # persist: leaves them
        assert recorded_url(third, 1) == "http://a.test/"
    second.close()
    assert _content_keys(redis_url, prefix) == []


def test_an_expired_process_does_not_keep_the_keys(redis_server: RedisServer) -> None:
    """A process killed mid-crawl stops renewing its heartbeat; once its
    entry has expired the last live process deletes the keys."""
    prefix = unique_prefix()
    seen = open_exact(redis_server.url, prefix, persist=False)
    seen.add_or_get(1, "http://a.test/")
    client = redis.Redis.from_url(redis_server.url)
    client.zadd(f"{prefix}:processes", {"killed-process": 1})  # expired in 1970
    seen.close()
    assert client.keys(f"{prefix}:contentseen:*") == []
    client.close()


def test_persisted_keys_stay_and_flush_on_start_deletes_them(redis_url: str) -> None:
    prefix = unique_prefix()
    with open_exact(redis_url, prefix, persist=True) as seen:
        seen.add_or_get(1, "http://a.test/")
    with open_exact(redis_url, prefix) as seen:
        assert recorded_url(seen, 1) == "http://a.test/"
    with open_exact(redis_url, prefix, flush_on_start=True) as seen:
        assert recorded_url(seen, 1) is None
        assert seen.add_or_get(1, "http://b.test/") == "http://b.test/"


def test_the_frontiers_keys_and_the_content_seen_keys_are_deleted_apart(redis_server: RedisServer) -> None:
    """The frontier deletes its ``P:{T}:*`` keys, content-seen its own: with
    SCHEDULER_PERSIST off, a frontier closing first leaves the sets to the
    last content-seen user."""
    prefix = unique_prefix()
    frontier = RedisStore(redis_server.url, prefix, persist=False)
    frontier.open()
    frontier.groups.set_content_group(5, 1, False)
    seen = open_exact(redis_server.url, prefix, persist=False)
    seen.add_or_get(1, "http://a.test/")
    frontier.close()
    assert recorded_url(seen, 1) == "http://a.test/"
    seen.close()
    assert _content_keys(redis_server.url, prefix) == []


# -- failures -------------------------------------------------------------------------------
def test_unreachable_redis_at_open_is_a_clear_error_without_the_password() -> None:
    url = f"redis://crawler:s3cret@127.0.0.1:{free_port()}/0"
    with pytest.raises(ContentStoreError) as failure:
        open_exact(url, unique_prefix())
    message = str(failure.value)
    assert "cannot reach Redis at redis://crawler:***@127.0.0.1" in message and "s3cret" not in message


def test_an_outage_is_retried_with_back_off_and_logged(
    redis_aof_server: RedisServer, caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis goes away mid-crawl; the first retry's warning brings it back
    (a log handler restarts it) and the set carries on."""
    seen = open_exact(redis_aof_server.url, unique_prefix(), retries=3)
    seen.add_or_get(1, "http://a.test/")
    redis_aof_server.wait_until_in_aof(b"http://a.test/")

    class RestartOnRetry(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "retry 1 of 3" in record.getMessage() and not redis_aof_server.ping():
                redis_aof_server.start()

    handler = RestartOnRetry()
    logging.getLogger("extensions.backends.redis.connection").addHandler(handler)
    try:
        redis_aof_server.kill()
        with caplog.at_level(logging.WARNING, logger="extensions.backends.redis.connection"):
            assert seen.duplicate_of(1, "http://mirror.test/") == "http://a.test/"
    finally:
        logging.getLogger("extensions.backends.redis.connection").removeHandler(handler)
    assert "retry 1 of 3" in caplog.text
    seen.close()


def test_an_outage_longer_than_the_retries_is_a_store_error(redis_aof_server: RedisServer) -> None:
    seen = open_exact(redis_aof_server.url, unique_prefix(), retries=1)
    redis_aof_server.kill()
    with pytest.raises(ContentStoreError, match=str(redis_aof_server.port)):
        seen.add_or_get(1, "http://a.test/")
    redis_aof_server.start()


# -- the backend setting ------------------------------------------------------------------------
@pytest.mark.parametrize(("settings", "backend"), [
    ({}, "sqlite"),
    ({"FRONTIER_BACKEND": "redis"}, "redis"),
    ({"FRONTIER_BACKEND": "redis", "CONTENTSEEN_BACKEND": "sqlite"}, "sqlite"),
    ({"CONTENTSEEN_BACKEND": "redis"}, "redis"),
    ({"FRONTIER_BACKEND": "memory", "CONTENTSEEN_BACKEND": "auto"}, "sqlite"),
])
def test_contentseen_backend_chooses_where_the_sets_live(settings: dict[str, Any], backend: str) -> None:
    pipeline = ContentSeenPipeline.from_crawler(get_crawler(Spider, settings))
    assert (pipeline.sets.store is not None) == (backend == "redis")
    pipeline.close()


def test_the_redis_sets_follow_the_frontiers_redis_settings(redis_server: RedisServer) -> None:
    pipeline = _pipeline(redis_server.url, "crawl7", SCHEDULER_PERSIST=True, FRONTIER_REDIS_RETRIES=2)
    assert (pipeline.sets.store.url, pipeline.sets.store.keys.prefix) == (redis_server.url, "crawl7")
    assert pipeline.sets.store.persist and pipeline.sets.store.retries == 2
    assert not _pipeline(redis_server.url, "crawl7").sets.store.persist  # scrapy-redis' default


@pytest.mark.parametrize(("settings", "named"), [
    ({"CONTENTSEEN_BACKEND": "postgres"}, "CONTENTSEEN_BACKEND"),
    ({"CONTENTSEEN_BACKEND": "redis", "REDIS_URL": "127.0.0.1:6379"}, "REDIS_URL"),
    ({"CONTENTSEEN_BACKEND": "redis", "FRONTIER_REDIS_PREFIX": "a{b}"}, "FRONTIER_REDIS_PREFIX"),
])
def test_invalid_backend_settings_fail_at_start_naming_the_setting(settings: dict[str, Any], named: str) -> None:
    with pytest.raises(ValueError, match=named):
        ContentSeenPipeline.from_crawler(get_crawler(Spider, settings))


# -- several scrapy crawl processes -------------------------------------------------------------
E2E_WEB = {"hosts": 10, "pages": 8, "links": 4, "seed": 5}


def _items(results: list[Any]) -> list[dict[str, Any]]:
    return [item for result in results for item in result.items]


@pytest.fixture(scope="module", params=["single", "cluster"])
def shared_sets_crawl(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Three ``scrapy crawl web`` processes on one Redis (or cluster) crawl the test web
    (phase 1); then two more, on the same crawl, are seeded with the copies
    of pages phase 1 fetched (the mirror's tree pages), so every copy they
    fetch was first seen by another process (phase 2)."""
    from testweb import WebConfig, start_testweb

    server = request.getfixturevalue("redis_cluster" if request.param == "cluster" else "redis_server")
    tmp = tmp_path_factory.mktemp(f"shared-sets-{request.param}")
    prefix = unique_prefix()
    with start_testweb(WebConfig(**E2E_WEB), tmp / "web") as web:
        settings = crawl_settings(web, server.url, prefix, CONTENTSEEN_ENABLED=True)
        with crawlers(tmp / "phase1", str(web.seeds_file), settings, 3) as procs:
            phase1 = wait_all(procs, tmp / "phase1")
        entries_before = len(web.entries())
        truth = web.truth(depth_limit=settings["DEPTH_LIMIT"])
        fetched = set(fetched_urls(web))
        # a pair of a page and its copy of which phase 1 fetched one only
        pairs = {copy: original for copy, original in truth.duplicates.items()
                 if copy.endswith(tuple(f"/p/{n}.html" for n in range(4)))}
        seeds = {}
        for copy, original in pairs.items():
            if (copy in fetched) != (original in fetched):
                unfetched, first = (original, copy) if copy in fetched else (copy, original)
                seeds[unfetched] = first
        with crawlers(tmp / "phase2", ",".join(seeds), settings, 2) as procs:
            phase2 = wait_all(procs, tmp / "phase2")
        phase2_fetched = fetched_urls_of(web, [e for e in web.entries()[entries_before:]
                                               if e.path != "/robots.txt"])
        yield SimpleNamespace(web=web, truth=truth, phase1=phase1, phase2=phase2, seeds=seeds,
                              phase1_fetched=fetched, phase2_fetched=phase2_fetched,
                              url=server.url, prefix=prefix)


def test_every_process_of_both_phases_finishes(shared_sets_crawl: Any) -> None:
    for result in shared_sets_crawl.phase1 + shared_sets_crawl.phase2:
        assert result.returncode == 0, result.log[-3000:]
        assert result.report["finish_reason"] == "finished"


def test_one_verdict_per_content_across_processes(shared_sets_crawl: Any) -> None:
    """Over every item of every process: each fingerprint has exactly one
    original, every other page with it is marked a duplicate of that
    original, and the processes' duplicate counts add up to the copies."""
    results = shared_sets_crawl.phase1 + shared_sets_crawl.phase2
    by_fingerprint: dict[str, list[dict[str, Any]]] = {}
    for item in _items(results):
        if item.get("fingerprint"):
            by_fingerprint.setdefault(item["fingerprint"], []).append(item)
    copies = 0
    for fingerprint, items in by_fingerprint.items():
        originals = {item["url"] for item in items if not item.get("duplicate_of")}
        assert len(originals) == 1, (fingerprint, [item["url"] for item in items])
        marked = [item["duplicate_of"] for item in items if item.get("duplicate_of")]
        assert set(marked) <= originals, (fingerprint, marked)
        copies += len(marked)
    assert copies > 0
    assert sum(result.stats.get("contentseen/duplicates", 0) for result in results) == copies
    store = RedisStore(shared_sets_crawl.url, shared_sets_crawl.prefix)
    store.open()
    totals = store.call(("HGETALL", store.keys.stats))[0]
    store.close()
    assert int(totals[b"contentseen/duplicates"]) == copies  # the crawl's stats, summed in Redis


def test_the_mirror_root_and_its_original_get_one_verdict(shared_sets_crawl: Any) -> None:
    crawl = shared_sets_crawl
    mirror_root = crawl.web.url("mirror0.test", "/")
    original = crawl.truth.duplicates[mirror_root]
    items = {item["url"]: item for item in _items(crawl.phase1)}
    verdicts = {items[mirror_root].get("duplicate_of"), items[original].get("duplicate_of")}
    assert verdicts in ({None, original}, {None, mirror_root})
    if items[mirror_root].get("duplicate_of"):  # the usual order: the seed h0001.test first
        assert [url for url in crawl.phase1_fetched if "mirror0.test" in url] == [mirror_root]


def test_copies_first_seen_by_other_processes_are_caught_and_their_links_not_followed(
        shared_sets_crawl: Any) -> None:
    """Phase 2's seeds are copies of pages only phase 1's processes fetched:
    each is marked a duplicate of its ground-truth original, and nothing it
    links is fetched (its children in the copied tree are new URLs)."""
    crawl = shared_sets_crawl
    assert len(crawl.seeds) >= 3, crawl.seeds
    items = {item["url"]: item for item in _items(crawl.phase2)}
    assert {url: items[url].get("duplicate_of") for url in crawl.seeds} == crawl.seeds
    assert crawl.phase2_fetched == set(crawl.seeds)
    assert sum(result.stats.get("contentseen/duplicates", 0) for result in crawl.phase2) == len(crawl.seeds)
    assert sum(result.stats.get("links/not_followed_duplicate", 0) for result in crawl.phase2) > 0


def test_near_duplicates_are_found_with_the_sets_in_redis(shared_sets_crawl: Any) -> None:
    """The test web's designed near-duplicates are found, and no flag any
    process made joins two pages whose 3-shingle resemblance is under 0.5
    (issue 12); the trap's tiny pages are not judged, and counted."""
    crawl = shared_sets_crawl
    items = {item["url"]: item for item in _items(crawl.phase1)}
    expected = {url for url in crawl.truth.near_duplicates if url in items}
    found = {url for url, item in items.items() if item.get("near_duplicate_of")}
    assert expected, "the test web has near-duplicate pages"
    assert len(expected & found) >= 0.95 * len(expected), sorted(expected - found)
    assert sum(result.stats.get("contentseen/near_too_short", 0) for result in crawl.phase1) > 0

    def shingles(url: str) -> Any:
        return shingle_set(visible_text(crawl.web.model.page(*split_url(url)).body, "utf-8"))

    for url, item in items.items():
        if item.get("near_duplicate_of"):
            assert exact_resemblance(shingles(url), shingles(item["near_duplicate_of"])) >= 0.5, url
