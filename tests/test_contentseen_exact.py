"""The exact content-seen set (extensions.contentseen.exact.ContentSeen).

What only the SQLite file promises (memory bounds, batches, crashes); the
behaviours every backend shares run over SQLite, a single Redis and a
Redis Cluster in ``tests/test_contentseen_redis.py``.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from extensions.contentseen.exact import ContentSeen, ContentStoreError

ROOT = Path(__file__).resolve().parents[1]


def fingerprints(count: int, seed: int = 1) -> list[int]:
    rng = random.Random(seed)
    return [rng.getrandbits(64) for _ in range(count)]


def test_full_64_bit_range_is_stored(tmp_path):
    values = [0, 1, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]
    with ContentSeen.open(tmp_path / "seen.sqlite3", memory_entries=1, batch_size=1) as seen:
        for value in values:
            seen.add_or_get(value, f"u{value}")
    with ContentSeen.open(tmp_path / "seen.sqlite3", memory_entries=1) as seen:
        assert [seen.get(value) for value in values] == [f"u{value}" for value in values]


def test_fingerprints_survive_close_and_reopen(tmp_path):
    values = fingerprints(5000)
    with ContentSeen.open(tmp_path / "seen.sqlite3", batch_size=700) as seen:
        for number, value in enumerate(values):
            seen.add_or_get(value, f"http://h.test/{number}")
    with ContentSeen.open(tmp_path / "seen.sqlite3") as seen:
        for number, value in enumerate(values):
            assert seen.duplicate_of(value, "http://mirror.test/") == f"http://h.test/{number}"
        assert seen.stats()["disk_hits"] == len(values)
        assert seen.stats()["added"] == 0


def test_memory_table_is_bounded_and_old_entries_come_from_disk(tmp_path):
    values = fingerprints(10000, seed=2)
    with ContentSeen.open(tmp_path / "seen.sqlite3", memory_entries=500, batch_size=100) as seen:
        for number, value in enumerate(values):
            seen.add_or_get(value, f"u{number}")
            assert len(seen.memory) <= 500 and len(seen.pending) < 100
        assert seen.get(values[0]) == "u0"  # evicted long ago: read from the file
        assert seen.get(values[-1]) == f"u{len(values) - 1}"  # recent: in memory
        stats = seen.stats()
        assert stats["disk_hits"] == 1 and stats["memory_hits"] == 1
        assert stats["evictions"] == len(values) - 500 + 1
        assert seen.get(values[0]) == "u0" and seen.stats()["memory_hits"] == 2  # now recent


def test_repeated_lookups_are_memory_hits(tmp_path):
    with ContentSeen.open(tmp_path / "seen.sqlite3", memory_entries=10, batch_size=1) as seen:
        seen.add_or_get(42, "first")
        for _ in range(5):
            assert seen.duplicate_of(42, "other") == "first"
        assert seen.stats()["memory_hits"] == 5 and seen.stats()["disk_hits"] == 0


def _run_and_kill(path: Path, flushed: int, unflushed: int, batch_size: int) -> None:
    """A child process adds ``flushed`` fingerprints, flushes, adds ``unflushed``
    more and is killed with SIGKILL before it can flush again."""
    code = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from extensions.contentseen.exact import ContentSeen
        seen = ContentSeen.open(Path({str(path)!r}), batch_size={batch_size})
        for number in range({flushed}):
            seen.add_or_get(number, f"u{{number}}")
        seen.flush()
        for number in range({flushed}, {flushed + unflushed}):
            seen.add_or_get(number, f"u{{number}}")
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=60,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == -signal.SIGKILL, result.stderr.decode()


def test_a_crash_loses_at_most_the_unflushed_batch(tmp_path):
    path = tmp_path / "seen.sqlite3"
    _run_and_kill(path, flushed=3000, unflushed=400, batch_size=1000)
    with ContentSeen.open(path) as seen:
        assert all(seen.get(number) == f"u{number}" for number in range(3000))
        assert all(seen.get(number) is None for number in range(3000, 3400))


def test_a_full_batch_is_committed_without_an_explicit_flush(tmp_path):
    path = tmp_path / "seen.sqlite3"
    _run_and_kill(path, flushed=0, unflushed=2500, batch_size=1000)
    with ContentSeen.open(path) as seen:
        survived = sum(seen.get(number) is not None for number in range(2500))
        assert survived == 2000


def test_a_corrupt_file_fails_at_open_naming_it(tmp_path):
    path = tmp_path / "seen.sqlite3"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ContentStoreError, match=str(path)):
        ContentSeen.open(path)


def test_invalid_sizes_are_refused(tmp_path):
    with pytest.raises(ValueError, match="memory_entries"):
        ContentSeen.open(tmp_path / "seen.sqlite3", memory_entries=0)
