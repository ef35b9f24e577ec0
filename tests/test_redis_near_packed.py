"""The Redis near-duplicate index's packed layout: table members decode to
their simhashes for every layout, a partition holding many more documents
than a bucket still finds each one, and keys of the previous layout are
refused with a message naming the way out."""

from __future__ import annotations

import random

import pytest
import redis

from extensions.backends.redis.contentseen import ContentKeys
from extensions.backends.redis.nearindex import (
    TABLE_BUCKET,
    RedisNearDuplicateIndex,
    TableGeometry,
    pack_record,
    unpack_records,
)
from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.nearindex import BlockLayout
from testweb.redisserver import RedisServer, unique_prefix


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


def test_records_round_trip() -> None:
    records = [(1, 1, b"", b""), (2**40, 7, bytes(range(256)), "http://é.test/".encode())]
    assert unpack_records(b"".join(pack_record(*record) for record in records)) == records


def test_a_partition_past_many_buckets_finds_every_document(redis_server: RedisServer) -> None:
    """Documents sharing table 0's partition split its set into buckets: each
    is still found at distance 0, and a near copy at distance 2."""
    prefix = unique_prefix()
    rng = random.Random(5)
    # table 0 keys blocks 0 (bits 0-12) and 1: its partition is block 0's top 8 bits
    values = [rng.getrandbits(64) & ~(0xFF << 5) | 0xA5 << 5 for _ in range(TABLE_BUCKET * 6)]
    with RedisNearDuplicateIndex.open(redis_server.url, prefix) as index:
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


def test_keys_of_the_previous_layout_are_refused(redis_server: RedisServer) -> None:
    prefix = unique_prefix()
    client = redis.Redis.from_url(redis_server.url)
    try:
        client.hset(ContentKeys(prefix).meta, mapping={"schema": "2", "distance": "3", "blocks": "5"})
    finally:
        client.close()
    with pytest.raises(ContentStoreError, match=r"written in layout 2, this release reads layout 3 only.*"
                                                r"SCHEDULER_FLUSH_ON_START"):
        RedisNearDuplicateIndex.open(redis_server.url, prefix)
