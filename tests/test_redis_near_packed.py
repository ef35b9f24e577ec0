"""The Redis near-duplicate index's packed layout: table members decode to
their simhashes for every layout, a partition holding many more documents
than a bucket still finds each one, and keys of the previous layout are
refused with a message naming the way out."""

from __future__ import annotations

import random
import struct

import pytest
import redis

from extensions.backends.redis.contentseen import (
    ContentKeys,
    RedisContentSeen,
    RedisContentStore,
    pack64,
)
from extensions.backends.redis.nearindex import (
    TABLE_BUCKET,
    RedisNearDuplicateIndex,
    TableGeometry,
    pack_record,
    pack_sketch,
    unpack_records,
)
from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.nearindex import BlockLayout
from extensions.contentseen.resemblance import SKETCH_SIZE, near_features
from testweb.redisserver import RedisServer, unique_prefix
from tests.redis_helpers import open_near


@pytest.mark.parametrize(("distance", "blocks"), [(3, 5), (2, 8), (4, 5), (2, 4), (3, 6), (5, 8)])
def test_every_tables_member_gives_back_its_simhash(distance: int, blocks: int) -> None:
    geometry = TableGeometry(BlockLayout(distance, blocks))
    rng = random.Random(distance * 100 + blocks)
    for value in [0, (1 << 64) - 1, *(rng.getrandbits(64) for _ in range(300))]:
        for table, (partition, top, rest) in enumerate(geometry.located(value)):
            assert top < 1 << 24
            member = geometry.member(top, rest)
            assert len(member) == geometry.width
            assert geometry.simhashes(table, partition, top, member + member) == [value, value]


def test_records_round_trip_and_sketches_take_less_room() -> None:
    rng = random.Random(3)
    sketch = near_features(" ".join(f"w{rng.randrange(5000)}" for _ in range(600))).sketch
    assert len(sketch) == 4 * SKETCH_SIZE
    assert len(pack_sketch(sketch)) <= 0.85 * len(sketch)
    same = struct.pack(">3I", 9, 9, 9)
    records = [(1, 1, b"", b""), (2**40, 7, bytes(range(256)), "http://é.test/".encode()),
               (3, 2, sketch, b"u"), (4, 4, sketch[:4], b""), (5, 5, same, b"v"), (6, 6, b"abcde", b""),
               (7, 1, struct.pack(">2I", 0, 2**32 - 1), b"w")]
    assert unpack_records(b"".join(pack_record(*record) for record in records)) == records


def test_a_partition_past_many_buckets_finds_every_document(redis_server: RedisServer) -> None:
    """Documents sharing table 0's partition split its set into buckets: each
    is still found at distance 0, and a near copy at distance 2."""
    prefix = unique_prefix()
    rng = random.Random(5)
    # table 0 keys blocks 0 (bits 0-12) and 1: its partition is block 0's top 8 bits
    values = [rng.getrandbits(64) & ~(0xFF << 5) | 0xA5 << 5 for _ in range(TABLE_BUCKET * 6)]
    with open_near(redis_server.url, prefix) as index:
        groups = {value: index.add_or_match(value, f"http://a.test/{number}")[0] for number, value in enumerate(values)}
        index.flush()
        client = redis.Redis.from_url(redis_server.url)
        try:
            key = ContentKeys(prefix).near_table(0, 0xA5)
            buckets = {field: value for field, value in client.hgetall(key).items() if field != b"D"}
            assert len(buckets) >= 6  # split
            assert sum(len(value) for value in buckets.values()) == len(values) * index.geometry.width
        finally:
            client.close()
        for number, value in enumerate(values):
            found = index.match(value)
            assert found is not None and found.distance == 0 and found.url == f"http://a.test/{number}"
            near = value ^ (1 << rng.randrange(13, 64)) ^ (1 << rng.randrange(13, 64))
            found = index.match(near)
            assert found is not None and found.group_id == groups[value], number


def test_a_record_keeps_the_content_fingerprint_and_a_match_reads_the_url(redis_server: RedisServer) -> None:
    prefix = unique_prefix()
    store = RedisContentStore(redis_server.url, prefix)
    exact, index = RedisContentSeen(store), RedisNearDuplicateIndex(store, BlockLayout())
    sketch = near_features(" ".join(f"w{number}" for number in range(300))).sketch
    url, fingerprint, simhash = "http://a.test/original-page", 0x1234_5678_9ABC_DEF0, 0x0F0F_F0F0_AAAA_5555
    assert exact.add_or_get(fingerprint, url) == url
    group, near_of = index.run(index.add_or_match_steps(simhash, url, sketch, None, fingerprint))
    assert near_of is None
    index.flush()
    client = redis.Redis.from_url(redis_server.url)
    try:
        record = client.hget(store.keys.near_doc(simhash), pack64(simhash))
    finally:
        client.close()
    assert url.encode() not in record and pack64(fingerprint) in record
    trips = index.counters["round_trips"]
    found = index.match(simhash ^ 0b101, sketch)
    assert found is not None and (found.url, found.group_id, found.distance) == (url, group, 2)
    assert index.counters["round_trips"] == trips + 3  # candidates, records, the URL
    found = index.run(index.match_steps(simhash ^ 0b101, sketch, named=False))  # an exact copy's group only
    assert found is not None and (found.url, found.group_id) == (fingerprint, group)
    assert index.counters["round_trips"] == trips + 5
    assert index.add_or_match(simhash ^ 0b11, "http://b.test/copy", sketch) == (group, url)
    exact.close()
    index.close()


def test_keys_of_the_previous_layout_are_refused(redis_server: RedisServer) -> None:
    prefix = unique_prefix()
    client = redis.Redis.from_url(redis_server.url)
    try:
        client.hset(ContentKeys(prefix).meta, mapping={"schema": "2", "distance": "3", "blocks": "5"})
    finally:
        client.close()
    with pytest.raises(ContentStoreError, match=r"written in layout 2, this release reads layout 3 only.*"
                                                r"SCHEDULER_FLUSH_ON_START"):
        open_near(redis_server.url, prefix)
