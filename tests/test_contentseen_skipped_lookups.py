"""Look-ups the SQLite content-seen stores answer from memory without
reading the file, and that the answers are the same as with the reads."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

from extensions.contentseen.exact import ContentSeen


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
