"""The Redis store's packed values per fingerprint (extensions/backends/redis/fpmap.py:
URL rows in fpmaps, AOPIC's cash rows in hashmaps) on real ``redis-server``
processes: exact against a Python dict through bucket splits and
overwrites, signed fingerprints mapped to the members Python computes, a
tag's map in its rows' slot on a cluster, every cash bucket a listpack (a
small map's in its directory), and fewer bytes per value than a hash field each. Whole crawls over it: the
AOPIC tests on Redis, ``tests/test_store_conformance.py``."""

from __future__ import annotations

import random

import pytest
import redis
from redis.crc import key_slot

from extensions.backends.redis.fpmap import records
from extensions.backends.redis.fpset import member
from extensions.backends.redis.rows import CASH_BUCKET_FIELDS, tag_of
from extensions.backends.redis.scripts import source
from extensions.backends.redis.store import RedisStore
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.store import Entry
from testweb.redisserver import RedisClusterServers, RedisServer, unique_prefix
from tests.redis_helpers import put_cash
from tests.aopic_helpers import cash_sums


def opened(url: str) -> RedisStore:
    store = RedisStore(url, unique_prefix())
    store.open()
    return store


def signed_fingerprints(rng: random.Random, tags: int, count: int) -> list[int]:
    """``count`` random signed 64-bit fingerprints over ``tags`` host tags, with the extremes."""
    tag_values = [rng.getrandbits(24) for _ in range(tags)]
    found = [((rng.choice(tag_values) << 40) | rng.getrandbits(40)) - (1 << 63) for _ in range(count)]
    return [*found, -(1 << 63), (1 << 63) - 1, -1, 0, 1]


def test_the_lua_member_of_a_decimal_fingerprint_is_pythons(redis_server: RedisServer) -> None:
    """Scripts get fingerprints in decimal (back-queue members, ARGV) and
    find their records by the same 5-byte member fpset.py computes."""
    client = redis.Redis.from_url(redis_server.url)
    edges = [0, 1, -1, 2**63 - 1, -2**63, 10**12 - 1, 10**12, -10**12, 2**40 - 1, 2**40, -2**40,
             2**53 + 1, -(2**53 + 1), 999_999_999_999_999_999, -999_999_999_999_999_999]
    fps = signed_fingerprints(random.Random(3), 50, 500) + edges + edges  # twice: the script's memo
    members = client.eval(source("include/fpmap") + """
      local out = {}
      for i = 1, #ARGV do out[i] = fp_member(ARGV[i]) end
      return out
    """, 0, *fps)
    assert members == [member(fp) for fp in fps]
    client.close()


@pytest.mark.parametrize("topology", ["single", "cluster"])
def test_cash_rows_read_back_exactly_through_splits_and_overwrites(
        topology: str, redis_server: RedisServer, redis_cluster: RedisClusterServers) -> None:
    url = redis_server.url if topology == "single" else redis_cluster.url
    store = opened(url)
    rng = random.Random(7)
    fps = signed_fingerprints(rng, 5, 3000)
    expected: dict[int, tuple[float, float, float, int]] = {}
    for round_ in range(3):
        chosen = rng.sample(fps, 1500)
        rows = [(fp, rng.random(), 0.0 if round_ == 0 else rng.random(), round_ + 1) for fp in chosen]
        put_cash(store, rows)
        expected.update({fp: (u, history, 0.0, visits) for fp, u, history, visits in rows})
    assert store.cash.get_cash(fps) == expected
    assert store.cash.cash_count() == len(expected)
    totals = cash_sums(store)
    assert totals == pytest.approx(tuple(sum(row[i] for row in expected.values()) for i in range(3)))
    keys = list(store.scan(store.keys.cash_pattern))
    assert len(keys) == len({tag_of(fp) for fp in expected})
    buckets = list(store.scan(store.keys.cash_pattern + ":*"))
    assert len(buckets) > len(keys)  # the tags' maps split
    for key in keys + buckets:  # a tag's map sits in the slot of its URL rows
        tag = key.decode().split("{")[1].split("}")[0]
        assert key_slot(key) == key_slot(store.keys.urls(tag).encode())
    if topology == "single":  # every bucket a listpack (a value found by Redis), the count exact
        client = redis.Redis.from_url(redis_server.url)
        assert {client.object("encoding", key) for key in buckets} == {b"listpack"}
        assert max(client.hlen(key) for key in buckets) <= CASH_BUCKET_FIELDS + 1  # split past it, '' kept
        in_directories = sum(len(field) == 5 for key in keys for field in client.hkeys(key))  # maps never split
        assert sum(client.hlen(key) - 1 for key in buckets) + in_directories == sum(
            int(client.hget(key, "N")) for key in keys)
        client.close()
    store.delete_crawl()
    store.close()


def test_a_small_cash_map_is_one_key_until_its_first_split(redis_server: RedisServer) -> None:
    """A tag's first cash rows sit in its directory hash beside N (one key
    a host of few URLs: a second key cost about 90 bytes a host); past
    CASH_BUCKET_FIELDS rows the directory splits into bucket keys and keeps
    only D and N; every row reads back exactly before and after."""
    store = opened(redis_server.url)
    client = redis.Redis.from_url(redis_server.url)
    fps = signed_fingerprints(random.Random(13), 1, 400)[:400]
    key = store.keys.cash(tag_of(fps[0]))
    small = fps[:CASH_BUCKET_FIELDS]
    put_cash(store, [(fp, i + 0.5, 0.0, 0) for i, fp in enumerate(small)])
    store.checkpoint()
    assert list(store.scan(key + ":*")) == []
    assert client.hlen(key) == len(small) + 1 and client.hget(key, "N") == str(len(small)).encode()
    assert client.object("encoding", key) == b"listpack"
    assert store.cash.get_cash(small) == {fp: (i + 0.5, 0.0, 0.0, 0) for i, fp in enumerate(small)}
    assert dict(store.cash.maps.items()).keys() == set(small)
    put_cash(store, [(fp, i + 0.25, 1.0, 1) for i, fp in enumerate(fps)])
    store.checkpoint()
    buckets = list(store.scan(key + ":*"))
    assert len(buckets) >= 2
    assert sorted(client.hkeys(key)) == [b"D", b"N"]
    assert store.cash.get_cash(fps) == {fp: (i + 0.25, 1.0, 0.0, 1) for i, fp in enumerate(fps)}
    assert store.cash.cash_count() == len(fps) and dict(store.cash.maps.items()).keys() == set(fps)
    client.close()
    store.delete_crawl()
    store.close()


def test_a_cash_row_costs_far_less_than_a_hash_field_each(redis_server: RedisServer) -> None:
    """The memory Redis itself reports for 20,000 never-fetched cash rows of
    one tag as the ledger's scripts write them (settled at mark 0: 4 bytes
    each; its directory and every bucket): under 22 bytes a row (a hash
    field each took over 80)."""
    store = opened(redis_server.url)
    rng = random.Random(11)
    fps = signed_fingerprints(rng, 1, 20_000)[:20_000]
    for start in range(0, len(fps), 1000):
        put_cash(store, [(fp, 1.0 / (i + 1), 0.0, 0) for i, fp in enumerate(fps[start:start + 1000])])
    store.checkpoint()
    key = store.keys.cash(tag_of(fps[0]))
    keys = [key, *store.scan(key + ":*")]
    size = sum(store.call(*[("MEMORY", "USAGE", k, "SAMPLES", "0") for k in keys]))
    assert size / len(fps) < 22, size / len(fps)
    assert {len(value) for value in store.cash.maps.get(fps[:100]).values()} == {4}
    store.delete_crawl()
    store.close()


def test_a_content_group_costs_its_varint_and_member_not_a_hash_field(redis_server: RedisServer) -> None:
    """20,000 pages' content groups of one tag, read back exactly, cost
    what Redis reports as under 12 bytes a page (a decimal field and a
    "group,duplicate" value in a hash of that many fields took about 100)."""
    store = opened(redis_server.url)
    rng = random.Random(12)
    fps = signed_fingerprints(rng, 1, 20_000)[:20_000]
    groups = {fp: (rng.randrange(1 << 20), bool(rng.getrandbits(1))) for fp in fps}
    for fp, (group, duplicate) in groups.items():
        store.groups.set_content_group(fp, group, duplicate)
    store.checkpoint()
    assert all(store.groups.content_group(fp) == group for fp, (group, _) in list(groups.items())[:500])
    key = store.keys.groups(tag_of(fps[0]))
    size = sum(store.call(*[("MEMORY", "USAGE", k, "SAMPLES", "0") for k in [key, *store.scan(key + ":*")]]))
    assert size / len(fps) < 12, size / len(fps)
    with pytest.raises(ValueError, match="document id"):
        store.groups.set_content_group(fps[0], -1, False)
    store.delete_crawl()
    store.close()


def test_a_queued_url_row_costs_little_more_than_its_url_and_referer(redis_server: RedisServer) -> None:
    """5,000 queued URLs of one host, each with a Referer of another host:
    the tag's packed rows take, by Redis' own count, under 60 bytes a row
    beyond the URL's path and the Referer (its host, numbers, fetch time,
    record and bucket; a hash field each took over 150), and read back
    exactly."""
    store = opened(redis_server.url)
    entries = []
    for i in range(5000):
        url = f"http://www.example.test/section-{i % 50}/page-{i}.html"
        fingerprint, host = url_fingerprint(url)
        entries.append(Entry(fingerprint, url, host, level=i % 3, depth=2,
                             referer=f"http://other.test/list-{i // 40}.html"))
    for start in range(0, len(entries), 500):
        assert all(store.urls.insert_new(entries[start:start + 500], 1.0))
    store.checkpoint()
    key = store.keys.urls(tag_of(entries[0].fingerprint))
    size = sum(store.call(*[("MEMORY", "USAGE", k, "SAMPLES", "0") for k in [key, *store.scan(key + ":*")]]))
    text = sum(len(e.url) - len("http://www.example.test") + len(e.referer or "") for e in entries)
    assert (size - text) / len(entries) < 60, (size - text) / len(entries)
    assert store.urls.get_many([e.fingerprint for e in entries]) == {e.fingerprint: e for e in entries}
    store.delete_crawl()
    store.close()


def test_reading_every_row_survives_another_process_deleting_a_tags_map(redis_server: RedisServer) -> None:
    """A scan of the URL rows (``count_by_status``, the census) reads each
    tag's host field ``H`` in the round trip that reads its buckets: a
    map deleted by another process meanwhile (its last row gone) leaves the
    rows as they were read, not an error that stops the crawl (it was read a
    round trip later and found missing)."""
    store = opened(redis_server.url)
    entries = []
    for host in ("one.example.test", "two.example.test", "three.example.test"):
        for i in range(3):
            url = f"http://{host}/page-{i}.html"
            fingerprint, found = url_fingerprint(url)
            entries.append(Entry(fingerprint, url, found))
    assert all(store.urls.insert_new(entries, 1.0))
    store.checkpoint()
    rows = store.urls.rows.items()
    first_fp, _ = next(rows)
    first_key = store.keys.urls(tag_of(first_fp))
    other = redis.Redis.from_url(redis_server.url)
    for entry in entries:  # every other tag's map goes, as its last row's deletion takes it
        key = store.keys.urls(tag_of(entry.fingerprint))
        if key != first_key:
            other.delete(key, *other.scan_iter(match=key + ":*"))
    read = [first_fp] + [fp for fp, _ in rows]
    assert set(read) <= {entry.fingerprint for entry in entries} and len(read) == len(set(read))
    other.close()
    store.delete_crawl()
    store.close()
