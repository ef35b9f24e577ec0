"""The near-duplicate index (extensions.contentseen.nearindex)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.nearindex import BlockLayout, NearDuplicateIndex

ROOT = Path(__file__).resolve().parents[1]


def flip(value: int, bits: int, rng: random.Random) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return value


def planted_web(rng: random.Random, stored: int = 50000, centres: int = 400) -> list[int]:
    """Random simhashes plus, around some of them, neighbours at distances 1..4."""
    values = {rng.getrandbits(64) for _ in range(stored)}
    for centre in rng.sample(sorted(values), centres):
        for distance in (1, 2, 3, 4):
            values.add(flip(centre, distance, rng))
    ordered = sorted(values)
    rng.shuffle(ordered)
    return ordered


@pytest.mark.parametrize(("reopen", "buffer_entries", "levels"), [
    (False, 7000, 2), (True, 7000, 2), (False, 100, 4), (True, 100, 4),
], ids=["buffer-and-disk", "after-reopen", "four-levels", "four-levels-after-reopen"])
def test_near_finds_exactly_the_stored_simhashes_within_distance_3(tmp_path, reopen, buffer_entries, levels):
    rng = random.Random(3)
    values = planted_web(rng)
    path = tmp_path / "near.sqlite3"
    index = NearDuplicateIndex.open(path, buffer_entries=buffer_entries)
    for number, value in enumerate(values):
        index.add_or_match(value, f"u{number}")
    if reopen:
        index.close()
        index = NearDuplicateIndex.open(path, buffer_entries=buffer_entries)
    assert index.stats()["levels"] == levels
    stored_rows = index.connection.execute("SELECT COUNT(*) FROM near_keys").fetchone()[0]
    assert sum(index.levels.sizes) == stored_rows
    stored = np.array(values, dtype=np.uint64)
    queries = [flip(rng.choice(values), rng.randrange(5), rng) for _ in range(1500)]
    queries += [rng.getrandbits(64) for _ in range(500)]
    found_at = {distance: 0 for distance in range(5)}
    for query in queries:
        distances = np.bitwise_count(stored ^ np.uint64(query))
        expected = {(f"u{number}", int(distances[number])) for number in np.flatnonzero(distances <= 3)}
        assert {(found.url, found.distance) for found in index.near(query)} == expected
        for distance in np.minimum(distances, 4)[distances <= 4].tolist():
            found_at[distance] += 1
    assert all(count > 50 for count in found_at.values()), found_at  # every distance was tried
    index.close()


def test_match_is_the_closest_then_earliest(tmp_path):
    rng = random.Random(4)
    centre = rng.getrandbits(64)
    with NearDuplicateIndex.open(tmp_path / "near.sqlite3") as index:
        far = flip(centre, 3, rng)
        index.add_or_match(far, "far")
        index.add_or_match(flip(centre, 1, rng), "close-1")
        index.add_or_match(flip(centre, 1, rng), "close-2")
        assert index.match(centre).url == "close-1"
        assert index.match(centre).distance == 1
        assert index.match(far).url == "far" and index.match(far).distance == 0


def test_distance_3_matches_and_distance_4_does_not(tmp_path):
    rng = random.Random(10)
    with NearDuplicateIndex.open(tmp_path / "near.sqlite3") as index:
        stored = rng.getrandbits(64)
        index.add_or_match(stored, "stored")
        for _ in range(200):
            assert index.match(flip(stored, 3, rng)).distance == 3
            assert index.match(flip(stored, 4, rng)) is None


def test_groups_join_the_closest_match_and_persist(tmp_path):
    rng = random.Random(5)
    base = rng.getrandbits(64)
    path = tmp_path / "near.sqlite3"
    with NearDuplicateIndex.open(path) as index:
        group, near = index.add_or_match(base, "http://a.test/")
        assert near is None
        assert index.add_or_match(flip(base, 2, rng), "http://b.test/") == (group, "http://a.test/")
        assert index.add_or_match(base, "http://mirror.test/") == (group, "http://a.test/")
        other, near = index.add_or_match(flip(base, 20, rng), "http://c.test/")
        assert near is None and other != group
        assert index.stats()["identical"] == 1 and index.stats()["stored"] == 3
    with NearDuplicateIndex.open(path) as index:
        assert index.add_or_match(flip(base, 1, rng), "http://d.test/") == (group, "http://a.test/")
        newest, _ = index.add_or_match(rng.getrandbits(64), "http://e.test/")
        assert newest not in (group, other)


def test_write_buffer_is_bounded(tmp_path):
    rng = random.Random(6)
    with NearDuplicateIndex.open(tmp_path / "near.sqlite3", buffer_entries=64) as index:
        for number in range(1000):
            index.add_or_match(rng.getrandbits(64), f"u{number}")
            assert len(index.pending_docs) < 64
            assert sum(map(len, index.pending_keys.values())) < 64 * len(index.layout.tables)
        assert index.stats()["flushes"] == 1000 // 64


def test_candidates_per_lookup_stay_small(tmp_path):
    rng = random.Random(7)
    with NearDuplicateIndex.open(tmp_path / "near.sqlite3", buffer_entries=1000) as index:
        for number in range(50000):
            index.add_or_match(rng.getrandbits(64), f"u{number}")
        before = index.stats()["candidates"]
        for _ in range(2000):
            index.match(rng.getrandbits(64))
        per_lookup = (index.stats()["candidates"] - before) / 2000
        assert per_lookup <= 10 * index.layout.expected_candidates(50000) + 0.05


@pytest.mark.parametrize(("distance", "blocks", "tables"), [(3, 4, 4), (3, 5, 10), (3, 6, 20), (2, 4, 6)])
def test_layout_makes_one_table_per_choice_of_exact_blocks(distance, blocks, tables):
    layout = BlockLayout(distance, blocks)
    assert len(layout.tables) == tables
    assert sum(width for _, width in layout.block_bits) == 64
    assert len(set(layout.keys(12345))) == tables


def test_a_file_keeps_its_layout(tmp_path):
    path = tmp_path / "near.sqlite3"
    NearDuplicateIndex.open(path, blocks=5).close()
    with pytest.raises(ContentStoreError, match="blocks"):
        NearDuplicateIndex.open(path, blocks=6)


def test_a_corrupt_file_fails_at_open_naming_it(tmp_path):
    path = tmp_path / "near.sqlite3"
    path.write_bytes(b"\x00garbage" * 1000)
    with pytest.raises(ContentStoreError, match=str(path)):
        NearDuplicateIndex.open(path)


def test_group_ids_are_not_reused_after_a_crash(tmp_path):
    path = tmp_path / "near.sqlite3"
    code = textwrap.dedent(f"""
        import os, random, signal
        from pathlib import Path
        from extensions.contentseen.nearindex import NearDuplicateIndex
        index = NearDuplicateIndex.open(Path({str(path)!r}), buffer_entries=100)
        rng = random.Random(8)
        for number in range(250):
            print(index.add_or_match(rng.getrandbits(64), f"u{{number}}")[0], flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True)
    assert result.returncode == -signal.SIGKILL, result.stderr
    handed_out = {int(line) for line in result.stdout.split()}
    assert len(handed_out) == 250
    with NearDuplicateIndex.open(path, buffer_entries=100) as index:
        assert index.connection.execute("SELECT COUNT(*) FROM near_docs").fetchone()[0] == 200
        rng = random.Random(9)
        fresh = {index.add_or_match(rng.getrandbits(64), f"v{number}")[0] for number in range(300)}
        assert not fresh & handed_out
