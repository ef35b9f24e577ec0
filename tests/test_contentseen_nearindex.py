"""The near-duplicate index (extensions.contentseen.nearindex).

What only the SQLite file promises (memory bounds, flushes, crashes, its
levels); the behaviours every backend shares run over SQLite, a single Redis
and a Redis Cluster in ``tests/test_contentseen_redis.py``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.nearindex import BlockLayout, NearDuplicateIndex
from testweb.neardup_truth import expected_candidates

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


def assert_near_is_exact(index: Any, values: list[int], rng: random.Random, queries: int,
                         per_distance: int) -> None:
    """``index.near`` of ``queries`` queries (three in four near a stored
    value) is exactly the stored values within distance 3, checked by brute
    force; every distance 0..4 occurs ``per_distance`` times or more."""
    stored = np.array(values, dtype=np.uint64)
    near_stored = queries * 3 // 4
    asked = [flip(rng.choice(values), rng.randrange(5), rng) for _ in range(near_stored)]
    asked += [rng.getrandbits(64) for _ in range(queries - near_stored)]
    found_at = dict.fromkeys(range(5), 0)
    for query in asked:
        distances = np.bitwise_count(stored ^ np.uint64(query))
        expected = {(f"u{number}", int(distances[number])) for number in np.flatnonzero(distances <= 3)}
        assert {(found.url, found.distance) for found in index.near(query)} == expected
        for distance in np.minimum(distances, 4)[distances <= 4].tolist():
            found_at[distance] += 1
    assert all(count > per_distance for count in found_at.values()), found_at  # every distance was tried


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
    assert_near_is_exact(index, values, rng, queries=2000, per_distance=50)
    index.close()


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
        assert per_lookup <= 10 * expected_candidates(index.layout, 50000) + 0.05


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
