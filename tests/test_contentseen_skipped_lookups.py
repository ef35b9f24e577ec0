"""Look-ups the SQLite content-seen stores answer from memory without
reading the file, and that the answers are the same as with the reads."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from extensions.contentseen.exact import ContentSeen
from extensions.contentseen.nearindex import FILTER_BITS, KeyFilter
from extensions.contentseen.nearindex import TABLE_SHIFT, BlockLayout, NearDuplicateIndex


def statements(connection: sqlite3.Connection, prefix: str) -> list[str]:
    """The list of statements starting with ``prefix`` run from now on."""
    found: list[str] = []
    connection.set_trace_callback(lambda sql: found.append(sql) if sql.startswith(prefix) else None)
    return found


def fingerprint_stream(count: int, seed: int) -> list[int]:
    """Fingerprints with repeats, near ones (recent) and far ones (old)."""
    rng = random.Random(seed)
    values: list[int] = []
    for _ in range(count):
        if values and rng.random() < 0.3:
            values.append(values[-rng.randint(1, min(len(values), 400))])
        else:
            values.append(rng.getrandbits(64))
    return values


def exact_answers(path: Path, values: list[int], memory_entries: int, complete: bool) -> list[str]:
    with ContentSeen.open(path, memory_entries=memory_entries, batch_size=7) as seen:
        if not complete:
            seen.memory_complete = False  # every miss reads the file, as before
        return [seen.add_or_get(value, f"u{number}") for number, value in enumerate(values)]


def test_a_new_exact_set_answers_misses_without_reading_the_file(tmp_path):
    with ContentSeen.open(tmp_path / "seen.sqlite3", memory_entries=100, batch_size=7) as seen:
        reads = statements(seen.connection, "SELECT url FROM content_seen")
        for number in range(100):
            assert seen.add_or_get(number, f"u{number}") == f"u{number}"
        assert seen.add_or_get(5, "again") == "u5"
        assert reads == [] and seen.memory_complete
        seen.add_or_get(100, "u100")  # the first eviction: memory no longer holds everything
        assert not seen.memory_complete
        assert seen.add_or_get(0, "again") == "u0"  # evicted, found in the file
        assert len(reads) == 1 and seen.stats()["disk_hits"] == 1


def test_a_reopened_exact_set_reads_the_file(tmp_path):
    path = tmp_path / "seen.sqlite3"
    with ContentSeen.open(path) as seen:
        seen.add_or_get(42, "first")
    with ContentSeen.open(path) as seen:
        assert not seen.memory_complete
        assert seen.duplicate_of(42, "second") == "first"


def test_exact_answers_equal_those_with_every_read(tmp_path):
    for seed, memory_entries in ((1, 50), (2, 300), (3, 5000)):
        values = fingerprint_stream(3000, seed)
        fast = exact_answers(tmp_path / f"fast{seed}.sqlite3", values, memory_entries, complete=True)
        slow = exact_answers(tmp_path / f"slow{seed}.sqlite3", values, memory_entries, complete=False)
        assert fast == slow
        assert fast.count("u0") >= 1 and len(set(fast)) < len(values)  # repeats were judged


def old_keys(layout: BlockLayout, simhash: int) -> list[int]:
    """BlockLayout.keys as first written: a loop per table and block."""
    values = [(simhash >> start) & ((1 << width) - 1) for start, width in layout.block_bits]
    keys = []
    for number, table in enumerate(layout.tables):
        key = 0
        for block in table:
            key = (key << layout.block_bits[block][1]) | values[block]
        keys.append((number << TABLE_SHIFT) | key)
    return keys


@pytest.mark.parametrize(("distance", "blocks"), [(3, 5), (3, 4), (3, 6), (2, 4), (1, 4), (1, 3), (4, 7), (5, 6)])
def test_layout_keys_equal_the_loop(distance, blocks):
    layout = BlockLayout(distance, blocks)
    rng = random.Random(blocks * 10 + distance)
    for simhash in [0, (1 << 64) - 1, 1 << 63] + [rng.getrandbits(64) for _ in range(2000)]:
        assert layout.keys(simhash) == old_keys(layout, simhash)


def test_key_filter_never_forgets_a_stored_key():
    rng = random.Random(7)
    key_filter = KeyFilter(1 << 16)
    layout = BlockLayout()
    stored = [layout.keys(rng.getrandbits(64)) for _ in range(300)]
    for keys in stored:
        key_filter.add(keys)
    assert all(key_filter.may_hold(keys) for keys in stored)
    assert all(key_filter.may_hold([key]) for keys in stored for key in keys)
    unrelated = sum(key_filter.may_hold(layout.keys(rng.getrandbits(64))) for _ in range(1000))
    assert unrelated < 500 and not key_filter.full  # most unrelated look-ups are told apart
    for _ in range(3000):
        key_filter.add(layout.keys(rng.getrandbits(64)))
    assert key_filter.full


def planted_stream(rng: random.Random, count: int) -> list[tuple[int, bytes]]:
    """(simhash, sketch): unrelated pages, near copies (1..4 bits off, same
    or other sketch) and identical ones, in one order."""
    stream: list[tuple[int, bytes]] = []
    for _ in range(count):
        if stream and rng.random() < 0.4:
            simhash, sketch = rng.choice(stream[-500:])
            simhash = flip(simhash, rng.randrange(5), rng)
            if rng.random() < 0.3:
                sketch = rng.randbytes(64 * 4)
            stream.append((simhash, sketch))
        else:
            stream.append((rng.getrandbits(64), rng.randbytes(64 * 4)))
    return stream


def near_answers(path: Path, stream: list[tuple[int, bytes]], buffer_entries: int, filtered: bool,
                 filter_bits: int = FILTER_BITS) -> tuple[list[tuple[int, str | None]], dict[str, int]]:
    with NearDuplicateIndex.open(path, buffer_entries=buffer_entries) as index:
        index.key_filter = KeyFilter(filter_bits) if filtered else None
        answers = [index.add_or_match(simhash, f"u{number}", sketch) for number, (simhash, sketch) in enumerate(stream)]
        return answers, {**index.stats(), "filter_kept": index.key_filter is not None}


def flip(value: int, bits: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return value


def test_a_new_near_index_skips_queries_no_stored_key_can_answer(tmp_path):
    rng = random.Random(3)
    with NearDuplicateIndex.open(tmp_path / "near.sqlite3", buffer_entries=50) as index:
        assert index.key_filter is not None
        reads = statements(index.connection, "SELECT d.id")
        first = rng.getrandbits(64)
        index.add_or_match(first, "u0")
        for number in range(1, 200):
            index.add_or_match(rng.getrandbits(64), f"u{number}")
        assert index.stats()["flushes"] >= 3
        skipped = len(reads)
        assert skipped < 20 and index.stats()["disk_queries"] == skipped  # nearly every look-up skipped
        assert index.add_or_match(flip(first, 2, rng), "copy") == (1, "u0")  # flushed long ago: found on disk
        assert len(reads) == skipped + 1


def test_a_reopened_near_index_queries_the_file(tmp_path):
    path = tmp_path / "near.sqlite3"
    with NearDuplicateIndex.open(path) as index:
        index.add_or_match(12345, "first")
    with NearDuplicateIndex.open(path) as index:
        assert index.key_filter is None
        assert index.add_or_match(12345 ^ 0b101, "second") == (1, "first")


@pytest.mark.parametrize(("buffer_entries", "filter_bits"), [(4096, FILTER_BITS), (37, FILTER_BITS), (37, 1 << 12)],
                         ids=["buffer", "flushed", "filter-dropped"])
def test_near_answers_equal_those_with_every_query(tmp_path, buffer_entries, filter_bits):
    stream = planted_stream(random.Random(buffer_entries + filter_bits), 3000)
    fast, fast_stats = near_answers(tmp_path / "fast.sqlite3", stream, buffer_entries, True, filter_bits)
    slow, slow_stats = near_answers(tmp_path / "slow.sqlite3", stream, buffer_entries, False)
    assert fast == slow
    assert sum(found is not None for _, found in fast) > 500  # near-duplicates were judged
    if filter_bits == FILTER_BITS:
        assert fast_stats["filter_kept"] and fast_stats["disk_queries"] < slow_stats["disk_queries"] / 2
    else:  # too full to help: dropped, every look-up queries from then on
        assert not fast_stats["filter_kept"] and fast_stats["disk_queries"] < slow_stats["disk_queries"]
    for key in ("candidates", "disk_candidates", "near_duplicates", "identical", "dissimilar", "stored"):
        assert fast_stats[key] == slow_stats[key], key
