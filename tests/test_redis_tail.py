"""A host's tail string (extensions/backends/redis/tail.py): its blocks and
appended records read back exactly, a compaction merges records into the
newest block until it is full, a refill takes the oldest records first."""

from __future__ import annotations

import random

from extensions.backends.redis.fpset import member
from extensions.backends.redis.keys import host_tag
from extensions.backends.redis.rows import pack_row, varint
from extensions.backends.redis.tail import (
    BLOCK_BYTES,
    Tail,
    pack_block,
    record_code,
    record_end,
    tail_records,
    unpack_block,
    with_members,
)
from extensions.frontier.fingerprint import url_fingerprint, use_fingerprinter
from extensions.frontier.store import Entry, Status


def records(count: int, seed: int = 1, level: int = 2) -> bytes:
    rng = random.Random(seed)
    out = b""
    for _ in range(count):
        row = b"@!h1.test(\x04*/p/%d.html\x08\x1ah2.test/p/%d.html" % (rng.randrange(1000), rng.randrange(1000))
        out += varint(level * 2 + 1) + rng.randbytes(5) + varint(len(row)) + row
    return out


def test_a_block_gives_its_records_back_and_is_far_smaller() -> None:
    data = records(60)
    block = pack_block(data)
    assert unpack_block(block) == data
    assert len(block) < len(data) / 2


def test_the_string_reads_back_its_blocks_then_the_records_appended_to_it() -> None:
    tail = Tail([pack_block(records(10)), pack_block(records(5, seed=2))], records(3, seed=3))
    data = tail.encode()
    appended = records(2, seed=4)
    again = Tail.parse(data + appended)  # the enqueue script appends after whatever is there
    assert again.blocks == tail.blocks and again.records == tail.records + appended
    assert again.all_records() == records(10) + records(5, seed=2) + records(3, seed=3) + appended
    assert Tail.parse(b"\0" + appended) == Tail([], appended)  # the string as the first append writes it
    assert Tail.parse(None) == Tail() and Tail().encode() == b""


def test_a_compaction_merges_into_the_newest_block_until_it_is_full() -> None:
    first = Tail([], records(10)).compacted()
    assert len(first.blocks) == 1 and not first.records
    merged = Tail(first.blocks, records(10, seed=2)).compacted()
    assert len(merged.blocks) == 1 and merged.all_records() == records(10) + records(10, seed=2)
    big = records(BLOCK_BYTES // 40, seed=3)  # more than the newest block may take
    grown = Tail(merged.blocks, big).compacted()
    assert len(grown.blocks) == 2 and grown.blocks[0] == merged.blocks[0]
    assert grown.all_records() == merged.all_records() + big


def test_a_refill_takes_the_oldest_records_first() -> None:
    older, newer, appended = records(6), records(6, seed=2), records(3, seed=3)
    tail = Tail([pack_block(older), pack_block(newer)], appended)
    taken, rest = tail.take(4)
    assert taken == older[:record_end(older, 4)]
    assert rest.all_records() == older[len(taken):] + newer + appended
    taken, rest = rest.take(4)  # the oldest block has 2 left: a take ends with the block
    assert taken == older[record_end(older, 4):] and rest.blocks == [pack_block(newer)]
    only, none = Tail([], appended).take(10)
    assert only == appended and none == Tail()


def test_records_give_their_fingerprints_under_the_hosts_tag() -> None:
    data = b"\x00" + varint(3 * 2 + 1) + b"\x12\x34\x56\x78\x9a" + varint(2) + b"ab"
    [(fingerprint, level, row)] = tail_records("ffffff", data)
    assert fingerprint == (0xFFFFFF << 40 | 0x123456789A) - (1 << 64) and (level, row) == (3, b"ab")
    [(fingerprint, _, _)] = tail_records("00abcd", data)
    assert fingerprint == 0x00ABCD << 40 | 0x123456789A


def test_a_record_leaves_out_a_member_its_url_gives_back() -> None:
    url = "http://h1.test/p/7.html"
    fp, host = url_fingerprint(url)
    entry = Entry(fp, url, host, level=3, referer="http://h1.test/p/6.html")
    copy = fp ^ 1  # a dont_filter copy's: not the URL's own
    rows = [(fp, record_code(fp, url, 3)), (copy, record_code(copy, url, 3))]
    assert [code for _, code in rows] == [6, 7]
    data = b"".join(varint(code) + (member(fp) if code & 1 else b"") + varint(len(row)) + row
                    for fp, code in rows for row in [pack_row(entry._replace(fingerprint=fp), Status.QUEUED, 0)])
    assert len(data) == 2 * len(pack_row(entry, Status.QUEUED, 0)) + 2 * 2 + 5
    tag = host_tag(host)
    assert [(found, level) for found, level, _ in tail_records(tag, b"\x00" + data)] == [(fp, 3), (copy, 3)]
    scripts = with_members(tag, data)  # the refill script reads every member: the first's put back
    assert scripts == varint(7) + member(fp) + data[1:]
    assert [(found, level) for found, level, _ in tail_records(tag, b"\x00" + scripts)] == [(fp, 3), (copy, 3)]


def test_under_a_projects_fingerprinter_every_record_keeps_its_member() -> None:
    """A project's REQUEST_FINGERPRINTER_CLASS keys URLs its own way: the URL
    alone does not give the fingerprint back."""

    class Fixed:
        def fingerprint(self, request: object) -> bytes:
            return b"\x01" * 20

    url = "http://h1.test/p/7.html"
    use_fingerprinter(Fixed())
    try:
        fp, _ = url_fingerprint(url)
        assert record_code(fp, url, 2) == 5
    finally:
        use_fingerprinter(None)
    assert record_code(url_fingerprint(url)[0], url, 2) == 4
