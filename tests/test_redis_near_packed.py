"""The Redis near-duplicate index's packed layout: table members decode to
their simhashes for every layout, a partition holding many more documents
than a bucket still finds each one, and keys of the previous layout are
refused with a message naming the way out."""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest
import redis

from extensions.backends.redis.contentseen import (
    ContentKeys,
    RedisContentSeen,
    RedisContentStore,
    pack64,
    read_records,
)
from extensions.backends.redis.nearindex import (
    BUCKET_BYTES,
    TABLE_BUCKET,
    RedisNearDuplicateIndex,
    TableGeometry,
    member_of,
    pack_record,
    pack_sketch,
    unpack_records,
    unpack_sketch,
)
from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.nearindex import BlockLayout, NearDuplicateIndex
from extensions.contentseen.resemblance import (
    SKETCH_SIZE,
    near_features,
    resemblance,
    sketch_shift,
)
from tests.redis_helpers import bucket_entries, map_buckets, open_near
from testweb.crawlrun import run_web_crawl
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


def coarse(sketch: bytes) -> bytes:
    """``sketch`` without the low bits its largest value lets a store drop."""
    values = struct.unpack(f">{len(sketch) // 4}I", sketch)
    shift = sketch_shift(values[-1])
    return struct.pack(f">{len(values)}I", *(value >> shift << shift for value in values))


def page_sketches(rng: random.Random, count: int) -> list[bytes]:
    """Sketches of pages of 20 to 20,000 words, some sharing most of their words."""
    sketches = []
    for _ in range(count):
        words = [f"w{rng.randrange(10**6)}" for _ in range(rng.choice((20, 90, 400, 3000, 20000)))]
        sketches.append(near_features(" ".join(words)).sketch)
        for position in rng.sample(range(len(words)), len(words) // 3):
            words[position] = f"x{rng.randrange(10**6)}"
        sketches.append(near_features(" ".join(words)).sketch)
    return sketches


def ascending(sketch: bytes) -> bool:
    """Whether ``sketch`` is ascending big-endian uint32 values (what pack_sketch packs)."""
    if not sketch or len(sketch) % 4:
        return False
    values = struct.unpack(f">{len(sketch) // 4}I", sketch)
    return list(values) == sorted(values)


def test_records_round_trip_with_the_bits_a_comparison_drops() -> None:
    rng = random.Random(3)
    sketch = near_features(" ".join(f"w{rng.randrange(5000)}" for _ in range(600))).sketch
    assert len(sketch) == 4 * SKETCH_SIZE
    assert len(pack_sketch(sketch)) <= 100  # 16-bit values, Rice-coded gaps (the 32-bit gaps took 200 bytes)
    same = struct.pack(">3I", 9, 9, 9)
    records = [(1, 1, b"", b""), (2**40, 7, bytes(range(256)), "http://é.test/".encode()),
               (3, 2, sketch, b"u"), (4, 4, sketch[:4], b""), (5, 5, same, b"v"), (6, 6, b"abcde", b""),
               (7, 1, struct.pack(">2I", 0, 2**32 - 1), b"w"), (2, 2**33, sketch[:40], 2**64 - 1),
               (8, 8, struct.pack(">4I", 9, 8, 7, 6), 5)]
    unpacked = unpack_records(b"".join(pack_record(*record) for record in records))
    # ascending uint32 values lose the low bits every comparison drops; other sketches stay as they came
    assert unpacked == [(doc, group, coarse(sketch) if ascending(sketch) else sketch, url)
                        for doc, group, sketch, url in records]
    assert coarse(sketch) != sketch  # (something was dropped)


def test_sketches_of_every_shape_round_trip() -> None:
    """Counts 1 to 300, spans from a few values to all of uint32, repeated values."""
    rng = random.Random(4)
    for _ in range(500):
        count, span = rng.randrange(1, 300), rng.choice((4, 1000, 2**16, 2**20, 2**29, 2**32))
        values = sorted(rng.randrange(span) for _ in range(count))
        sketch = struct.pack(f">{count}I", *values)
        packed = pack_sketch(sketch) + b"tail"
        unpacked, offset = unpack_sketch(packed, 0)
        assert (unpacked, packed[offset:]) == (coarse(sketch), b"tail")
        assert len(packed) - 4 <= 6 + count * 17 // 8  # never above 17 bits a value


def test_a_stored_sketch_resembles_every_sketch_as_the_original_does() -> None:
    """The local index keeps whole sketches, Redis the 16-bit values: both
    give the same estimates, so the same verdicts."""
    rng = random.Random(8)
    sketches = page_sketches(rng, 40)
    stored = [unpack_records(pack_record(1, 1, sketch, 1))[0][2] for sketch in sketches]
    assert sum(len(pack_sketch(sketch)) for sketch in sketches) < 0.55 * sum(map(len, sketches))
    for query in sketches:
        for original, kept in zip(sketches, stored):
            assert resemblance(query, kept) == resemblance(query, original)
            assert resemblance(kept, query) == resemblance(original, query)


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
            buckets = map_buckets(client, key)
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
    record = store.call(read_records(index.keys.near_doc(simhash), simhash))[0][0]
    assert unpack_records(record)[0][3] == fingerprint
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
        client.hset(ContentKeys(prefix).meta, mapping={"schema": "3", "distance": "3", "blocks": "5"})
    finally:
        client.close()
    with pytest.raises(ContentStoreError, match=r"written in layout 3, this release reads layout 5 only.*"
                                                r"SCHEDULER_FLUSH_ON_START"):
        open_near(redis_server.url, prefix)


def test_a_documents_partition_past_many_buckets_keeps_every_record(redis_server: RedisServer) -> None:
    """Documents whose simhashes share their top 8 bits fill one partition
    past many buckets: each record is still read back, a simhash keeps every
    record appended under it, and an exact copy or a near one finds its group."""
    prefix = unique_prefix()
    rng = random.Random(6)
    values = [rng.getrandbits(56) | 0x5A << 56 for _ in range(300)]
    sketches = page_sketches(rng, 150)
    with open_near(redis_server.url, prefix) as index:
        groups = [index.add_or_match(value, f"http://a.test/{number}", sketch)[0]
                  for number, (value, sketch) in enumerate(zip(values, sketches))]
        # the same simhash, an unrelated page: a second record under it
        other = near_features(" ".join(f"q{number}" for number in range(500))).sketch
        twin = index.add_or_match(values[0], "http://b.test/twin", other)
        assert twin[1] is None and twin[0] != groups[0]
        index.flush()
        client = redis.Redis.from_url(redis_server.url)
        try:
            buckets = map_buckets(client, index.keys.near_doc(values[0]))
        finally:
            client.close()
        assert len(buckets) >= 8 and all(len(bucket) <= BUCKET_BYTES + 400 for bucket in buckets.values())
        entries = dict(entry for bucket in buckets.values() for entry in bucket_entries(bucket))
        assert sorted(entries) == sorted(member_of(value) for value in values)
        assert len(unpack_records(entries[member_of(values[0])])) == 2
        for number, (value, sketch) in enumerate(zip(values, sketches)):
            records = unpack_records(index.store.call(read_records(index.keys.near_doc(value), value))[0][0])
            assert [(doc, group) for doc, group, _, _ in records][:1] == [(groups[number], groups[number])]
            assert records[0][2] == (coarse(sketch) if len(sketch) > 4 else sketch)
            assert records[0][3] == f"http://a.test/{number}".encode()
            found = index.match(value ^ 0b1001 << 20, sketch)
            assert found is not None and (found.group_id, found.distance) == (groups[number], 2), number


def test_redis_and_the_local_index_give_the_same_verdicts(redis_server: RedisServer, tmp_path: Path) -> None:
    """The same pages, in the same order, through both stores: the same
    near-duplicate of each page and the same groups. Simhashes are drawn
    from a few values so that many pages meet as candidates and the
    sketches decide, many near the resemblance threshold."""
    rng = random.Random(9)
    pages = []
    for number in range(60):
        words = [f"w{rng.randrange(10**6)}" for _ in range(rng.choice((40, 300, 2000)))]
        for copy in range(4):
            edited = list(words)
            for position in rng.sample(range(len(words)), int(len(words) * rng.uniform(0.01, 0.12))):
                edited[position] = f"x{rng.randrange(10**6)}"
            simhash = rng.choice((0x1234_5678_9ABC_DEF0, 0x1234_5678_9ABC_DEF7, 0xFEDC_BA98_7654_3210))
            pages.append((simhash ^ rng.choice((0, 1, 1 << 40)), f"http://p.test/{number}/{copy}",
                          near_features(" ".join(edited)).sketch))
    local_index = NearDuplicateIndex.open(tmp_path / "near.sqlite3", buffer_entries=16)
    with open_near(redis_server.url, unique_prefix()) as redis_index:
        verdicts = [[index.add_or_match(*page) for page in pages] for index in (local_index, redis_index)]
    local_index.close()

    def shape(found: list[tuple[int, str | None]]) -> list[tuple[int, str | None]]:
        first: dict[int, int] = {}  # groups numbered by their first page
        return [(first.setdefault(group, len(first)), near) for group, near in found]

    assert shape(verdicts[1]) == shape(verdicts[0])
    flagged = sum(near is not None for _, near in verdicts[0])
    assert 40 <= flagged <= len(pages) - 40  # both outcomes are common


def test_a_documents_record_takes_about_a_hundred_bytes_of_redis(redis_server: RedisServer) -> None:
    """Redis memory of the documents' partitions over the documents stored,
    with the default sketch of pages of 500 shingles: 7 bytes of simhash, the
    record (about 110 bytes) and the buckets' share."""
    prefix = unique_prefix()
    rng = random.Random(10)
    documents = 4000
    with open_near(redis_server.url, prefix) as index:
        for number in range(documents):
            sketch = struct.pack(f">{SKETCH_SIZE}I", *sorted(rng.sample(range(2**32 * SKETCH_SIZE // 500),
                                                                        SKETCH_SIZE)))
            # 16 of the 256 partitions: each splits past many buckets, as at millions of documents
            simhash = rng.getrandbits(56) | rng.randrange(16) << 56
            index.run(index.add_or_match_steps(simhash, f"http://a.test/{number}", sketch, None, number))
        index.flush()
        client = redis.Redis.from_url(redis_server.url)
        try:
            keys = list(client.scan_iter(match=f"{prefix}:contentseen:*:near_docs"))
            held = sum(client.memory_usage(key, samples=0) for key in keys)
        finally:
            client.close()
    assert len(keys) == 16
    assert held / documents < 135, held / documents  # the layout of schema 3: about 325


@pytest.mark.parametrize("layout", ["3", "4"])
def test_a_crawl_on_content_seen_keys_of_an_older_layout_stops_at_start_naming_how_to_go_on(
    start_web: Any, tmp_path: Path, redis_server: RedisServer, layout: str,
) -> None:
    """Content-seen keys of layout 3 (a hash field of records per simhash,
    32-bit sketch values) or 4 (the exact set a hash field per fingerprint
    in 4,096 partitions) are never misread: a real crawl on them stops at
    start, says how to go on, fetches no page and leaves them as they were."""
    prefix = unique_prefix()
    keys = ContentKeys(prefix)
    value = 0x0F0F_F0F0_AAAA_5555
    client = redis.Redis.from_url(redis_server.url)
    client.hset(keys.meta, mapping={"schema": layout, "distance": "3", "blocks": "5"})
    if layout == "3":
        client.hset(f"{keys.base}:{{{value >> 52:03x}}}:near_docs", pack64(value),
                    b"\x01\x01\x80\x02" + bytes(200) + b"\x00" + pack64(7))
    else:
        client.hset(f"{keys.base}:{{{value >> 52:03x}}}:exact", pack64(value), b"http://a.test/")
    before = {key: client.dump(key) for key in client.keys(f"{keys.base}:*")}
    web = start_web(hosts=2, pages=2, links=1)
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings={
        "DNS_HOSTS": web.hosts_file, "FRONTIER_BACKEND": "redis", "REDIS_URL": redis_server.url,
        "FRONTIER_REDIS_PREFIX": prefix, "SCHEDULER_PERSIST": True}, timeout=120)
    assert result.returncode != 0
    assert f"written in layout {layout}, this release reads layout 5 only" in result.log, result.log[-3000:]
    assert "SCHEDULER_FLUSH_ON_START=True" in result.log and "FRONTIER_REDIS_PREFIX" in result.log
    assert not [entry for entry in web.entries() if entry.path != "/robots.txt"]
    assert {key: client.dump(key) for key in client.keys(f"{keys.base}:*")} == before
    client.close()
