"""Near-duplicate look-up: which stored simhash is within Hamming distance k?

Manku, Jain and Das Sarma's permuted tables in one SQLite file, buffered
writes, one writer (details: docs/reference/formats.md).
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from itertools import combinations
from math import comb
from pathlib import Path
from typing import Any, Final, NamedTuple

from extensions.contentseen.exact import ContentStoreError, SQLiteSet, check_schema, is_empty, open_database, write
from extensions.contentseen.fingerprint import from_signed64, to_signed64
from extensions.contentseen.resemblance import resemblance

SCHEMA_VERSION = "2"
DEFAULT_MIN_RESEMBLANCE = 0.6
DEFAULT_DISTANCE = 3
DEFAULT_BLOCKS = 5
TABLE_SHIFT = 48  # key = table number << TABLE_SHIFT | block bits
LEVEL_RATIO = 8  # level L + 1 holds up to LEVEL_RATIO times the rows of level L
LEVEL0_FLUSHES = 4  # level 0 holds up to this many full flushes
MIN_KEY = -(1 << 63)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS near_docs (
  id       INTEGER PRIMARY KEY,  -- document number, never reused
  simhash  INTEGER NOT NULL,     -- signed 64-bit
  group_id INTEGER NOT NULL,     -- id of the group's first document
  url      TEXT NOT NULL,        -- the first URL with this simhash
  sketch   BLOB);                -- resemblance sketch (NULL: none given)
CREATE TABLE IF NOT EXISTS near_keys (
  level INTEGER NOT NULL,        -- LSM level (see LeveledKeys)
  key   INTEGER NOT NULL,        -- table number << 48 | that table's block bits
  doc   INTEGER NOT NULL,        -- near_docs.id
  PRIMARY KEY (level, key, doc)) WITHOUT ROWID;
-- schema, distance, blocks (a file is bound to its layout),
-- reserved_id (no id below it is handed out again), levels (JSON)
CREATE TABLE IF NOT EXISTS near_meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
"""


#: bits of the :class:`KeyFilter` bitmap (1 MiB)
FILTER_BITS: Final = 1 << 23
# the key's table number (above bit 48) is mixed in to spread the tables over the bitmap


class KeyFilter:
    """Keys that may have rows in the index's file (no false negatives): a
    look-up none of whose keys was stored needs no query, a false positive
    only costs the query. :attr:`full` once more than an eighth of the bits are set."""

    def __init__(self, bits: int = FILTER_BITS) -> None:
        if bits < 8 or bits & (bits - 1):
            raise ValueError(f"filter bits must be a power of two >= 8, not {bits}")
        self.bitmap = bytearray(bits >> 3)
        self.mask, self.limit, self.set_bits = bits - 1, bits >> 3, 0

    def add(self, keys: list[int]) -> None:
        """Mark ``keys`` as stored."""
        bitmap = self.bitmap
        for key in keys:
            spot = (key ^ (key >> 48) * 0x9E3779B1) & self.mask
            bit = 1 << (spot & 7)
            if not bitmap[spot >> 3] & bit:
                bitmap[spot >> 3] |= bit
                self.set_bits += 1

    def may_hold(self, keys: list[int]) -> bool:
        """False if no row with any of ``keys`` can be in the file."""
        bitmap, mask = self.bitmap, self.mask
        for key in keys:
            spot = (key ^ (key >> 48) * 0x9E3779B1) & mask
            if bitmap[spot >> 3] >> (spot & 7) & 1:
                return True
        return False

    @property
    def full(self) -> bool:
        return self.set_bits > self.limit


class Match(NamedTuple):
    """A stored document near a query."""

    doc_id: int
    group_id: int
    url: str
    distance: int
    resemblance: float | None = None  # estimated; None when not checked


Candidate = tuple[int, int, int, str, "bytes | None"]  # id, simhash, group, url, sketch


def resembling(sketch: bytes | None, other: bytes | None, min_resemblance: float) -> float | None | bool:
    """The estimated resemblance if both sketches exist (None if not), or
    False when it is below ``min_resemblance``."""
    if sketch is None or other is None:
        return None
    estimate = resemblance(sketch, other)
    return estimate if estimate >= min_resemblance else False


def near_verdict(index: Any, found: Match | None,
                 store: Callable[[int, int], None]) -> tuple[int, str | None]:
    """An index's verdict on a document whose closest match is ``found``:
    (its group, the match's URL or None); a non-identical document is
    recorded by ``store(doc_id, group_id)``."""
    if found is not None:
        index.counters["near_duplicates"] += 1
        if found.distance == 0:
            index.counters["identical"] += 1
            return found.group_id, found.url
    doc_id = index.next_id
    index.next_id += 1
    group_id = doc_id if found is None else found.group_id
    store(doc_id, group_id)
    return (group_id, None) if found is None else (group_id, found.url)


class BlockLayout:
    """Which bits key each permuted table: ``blocks`` contiguous blocks (the
    first ``64 % blocks`` one bit wider), one table per ``blocks - distance`` of them."""

    def __init__(self, distance: int = DEFAULT_DISTANCE, blocks: int = DEFAULT_BLOCKS) -> None:
        if not 0 <= distance < blocks <= 64:
            raise ValueError(f"need 0 <= distance < blocks <= 64, not distance={distance}, blocks={blocks}")
        self.distance, self.blocks = distance, blocks
        widths = [64 // blocks + (i < 64 % blocks) for i in range(blocks)]
        starts = [sum(widths[:i]) for i in range(blocks)]
        self.block_bits = list(zip(starts, widths))  # (lowest bit, width)
        self.tables = list(combinations(range(blocks), blocks - distance))
        self.key_bits = max(sum(widths[i] for i in table) for table in self.tables)
        # per table: its number's bits and (block, shift) of each block, the last unshifted
        self._key_parts = []
        for number, table in enumerate(self.tables):
            shifts = [sum(widths[later] for later in table[place + 1:]) for place in range(len(table))]
            self._key_parts.append((number << TABLE_SHIFT, tuple(zip(table, shifts))))
        self._masks = [(start, (1 << width) - 1) for start, width in self.block_bits]
        if self.key_bits > TABLE_SHIFT or len(self.tables) > 1 << (63 - TABLE_SHIFT):
            raise ValueError(f"{blocks} blocks for distance {distance} make keys too wide; use more blocks")
        assert len(self.tables) == comb(blocks, blocks - distance)

    def keys(self, simhash: int) -> list[int]:
        """One key per table: the table number and the bits of its blocks."""
        values = [(simhash >> start) & mask for start, mask in self._masks]
        if len(self.tables[0]) == 2:  # the default layouts: two blocks a key, one comprehension
            return [base | values[high] << shift | values[low]
                    for base, ((high, shift), (low, _)) in self._key_parts]
        keys = []
        for base, parts in self._key_parts:
            for block, shift in parts:
                base |= values[block] << shift
            keys.append(base)
        return keys


class LeveledKeys:
    """The key rows of all permuted tables on disk, as levels of one B-tree (a
    small LSM tree: docs/reference/formats.md); every row is in exactly one level."""

    def __init__(self, connection: sqlite3.Connection, level0_rows: int,
                 sizes: list[int] | None = None, cursors: list[int] | None = None) -> None:
        self.connection, self.level0_rows = connection, level0_rows
        self.sizes = sizes or [0]
        self.cursors = cursors or [MIN_KEY] * len(self.sizes)
        self.moved = 0  # rows moved between levels since open

    @classmethod
    def from_meta(cls, connection: sqlite3.Connection, level0_rows: int, text: str | None) -> LeveledKeys:
        state = json.loads(text) if text else {}
        return cls(connection, level0_rows, state.get("sizes"), state.get("cursors"))

    def meta(self) -> str:
        return json.dumps({"sizes": self.sizes, "cursors": self.cursors})

    def restore(self, text: str) -> None:
        """Go back to the state :meth:`meta` returned (after a rolled-back flush)."""
        state = json.loads(text)
        self.sizes, self.cursors = state["sizes"], state["cursors"]

    def capacity(self, level: int) -> int:
        return self.level0_rows * LEVEL_RATIO ** level

    def query(self, tables: int) -> str:
        """The look-up statement for ``tables`` keys over every level."""
        levels = ", ".join(map(str, range(len(self.sizes))))
        return ("SELECT d.id, d.simhash, d.group_id, d.url, d.sketch FROM near_keys k "
                f"JOIN near_docs d ON d.id = k.doc WHERE k.level IN ({levels}) "
                f"AND k.key IN ({', '.join('?' * tables)})")

    def insert(self, rows: list[tuple[int, int]]) -> None:
        """Add ``(key, doc)`` rows to level 0, then move slices down over-full
        levels; call inside the caller's transaction."""
        self.sizes[0] += self.connection.executemany(
            "INSERT OR IGNORE INTO near_keys VALUES (0, ?, ?)", rows).rowcount
        level = 0
        while level < len(self.sizes) and self.sizes[level] > self.capacity(level):
            self._move_slice(level, max(len(rows), 1))
            level += 1

    def _move_slice(self, level: int, rows: int) -> None:
        """Move the next ``rows`` rows (whole keys) in key order from ``level`` to ``level + 1``."""
        if level + 1 == len(self.sizes):
            self.sizes.append(0)
            self.cursors.append(MIN_KEY)
        cursor = self.cursors[level]
        boundary = self.connection.execute(
            "SELECT key FROM near_keys WHERE level = ? AND key >= ? ORDER BY key LIMIT 1 OFFSET ?",
            (level, cursor, rows)).fetchone()
        if boundary is None:  # the slice reaches the end of the key space: wrap around
            where, params, self.cursors[level] = "level = ? AND key >= ?", (level, cursor), MIN_KEY
        else:
            upper = max(boundary[0], cursor + 1)
            where, params, self.cursors[level] = "level = ? AND key >= ? AND key < ?", (level, cursor, upper), upper
        moved = self.connection.execute(
            f"INSERT OR IGNORE INTO near_keys SELECT ?, key, doc FROM near_keys WHERE {where} ORDER BY key",
            (level + 1, *params)).rowcount
        self.sizes[level] -= self.connection.execute(f"DELETE FROM near_keys WHERE {where}", params).rowcount
        self.sizes[level + 1] += moved
        self.moved += moved


class NearDuplicateIndex(SQLiteSet):
    """Stored simhashes with their first URL and group, searchable within distance k, from
    this run and (after :meth:`flush`) earlier runs on the same file, which keeps its layout."""

    def __init__(self, connection: sqlite3.Connection, path: Path, layout: BlockLayout,
                 next_id: int, buffer_entries: int = 4096, levels: str | None = None,
                 min_resemblance: float = DEFAULT_MIN_RESEMBLANCE, keys_on_disk: bool = True) -> None:
        if buffer_entries < 1:
            raise ValueError(f"buffer_entries must be >= 1, not {buffer_entries}")
        if not 0.0 <= min_resemblance <= 1.0:
            raise ValueError(f"min_resemblance must be in 0..1, not {min_resemblance}")
        self.connection, self.path, self.layout = connection, path, layout
        self.buffer_entries, self.min_resemblance = buffer_entries, min_resemblance
        self.next_id = next_id
        level0_rows = LEVEL0_FLUSHES * buffer_entries * len(layout.tables)
        self.levels = LeveledKeys.from_meta(connection, level0_rows, levels)
        self.pending_docs: dict[int, tuple[int, int, str, bytes | None]] = {}  # id -> (simhash, group, url, sketch)
        self.pending_keys: dict[int, list[int]] = {}  # key -> ids
        self.counters = dict.fromkeys(
            ("lookups", "disk_queries", "candidates", "disk_candidates", "max_candidates", "near_duplicates",
             "identical", "dissimilar", "stored", "flushes", "max_flush_ms"), 0)
        self._query = self.levels.query(len(layout.tables))
        # every key in the file was stored by this object: the filter can tell
        self.key_filter = None if keys_on_disk else KeyFilter()
        self._write([], [])  # persist that ids below next_id + buffer_entries may be in use

    @classmethod
    def open(cls, path: Path, distance: int = DEFAULT_DISTANCE, blocks: int = DEFAULT_BLOCKS,
             buffer_entries: int = 4096, cache_kib: int = 16384,
             min_resemblance: float = DEFAULT_MIN_RESEMBLANCE) -> NearDuplicateIndex:
        """Open (or create) the index at ``path``; an existing file must have
        the same schema version and layout."""
        layout = BlockLayout(distance, blocks)
        connection = open_database(path, cache_kib)
        expected = {"schema": SCHEMA_VERSION, "distance": str(distance), "blocks": str(blocks)}
        try:
            meta = check_schema(connection, path, "near_meta", _SCHEMA, expected)
            next_id = int(meta.get("reserved_id", 1))  # above every id ever handed out
            return cls(connection, path, layout, next_id, buffer_entries, meta.get("levels"), min_resemblance,
                       not is_empty(connection, path, "near_keys"))
        except (ContentStoreError, ValueError):
            connection.close()
            raise

    def prefetch(self, simhash: int) -> None:
        """Nothing to do: a local look-up costs no round trip."""

    def match(self, simhash: int, sketch: bytes | None = None) -> Match | None:
        """The closest stored document within the distance and resembling
        (ties: the earliest), or None."""
        return self._match(simhash, self.layout.keys(simhash), sketch)

    def near(self, simhash: int, sketch: bytes | None = None) -> list[Match]:
        """Every stored document within the distance and resembling, closest
        (then earliest) first."""
        self.counters["lookups"] += 1
        keys = self.layout.keys(simhash)
        candidates = self._buffer_candidates(keys) + self._disk_candidates(keys)
        self._count_candidates(candidates)
        matches = []
        for doc_id, other, group_id, url, other_sketch in candidates:
            distance = (simhash ^ other).bit_count()
            if distance <= self.layout.distance:
                estimate = self._resembling(sketch, other_sketch)
                if estimate is not False:
                    matches.append(Match(doc_id, group_id, url, distance, estimate))
        return sorted(matches, key=lambda found: (found.distance, found.doc_id))

    def add_or_match(self, simhash: int, url: str, sketch: bytes | None = None) -> tuple[int, str | None]:
        """``(group_id, near_duplicate_of)`` for a new document, which joins
        the closest resembling match's group (None and a new group if none)."""
        keys = self.layout.keys(simhash)
        return near_verdict(self, self._match(simhash, keys, sketch),
                            lambda doc_id, group_id: self._store(doc_id, simhash, group_id, url, sketch, keys))

    def flush(self) -> None:
        """Commit the buffered documents and their keys in one transaction."""
        if not self.pending_docs:
            return
        docs = [(doc_id, to_signed64(simhash), group, url, sketch)
                for doc_id, (simhash, group, url, sketch) in self.pending_docs.items()]
        # key order: consecutive inserts touch neighbouring B-tree pages
        keys = self.pending_keys
        rows = [(key, doc_id) for key in sorted(keys) for doc_id in keys[key]]
        self._write(docs, rows)
        self.pending_docs.clear()
        self.pending_keys.clear()
        self.counters["flushes"] += 1

    def stats(self) -> dict[str, int]:
        """Counters since open, plus the buffer size (a gauge)."""
        return {**self.counters, "buffered": len(self.pending_docs), "levels": len(self.levels.sizes),
                "level_moves": self.levels.moved}

    def _match(self, simhash: int, keys: list[int], sketch: bytes | None) -> Match | None:
        self.counters["lookups"] += 1
        best = self._best(simhash, sketch, self._buffer_candidates(keys))
        if best is None or best.distance > 0:  # the disk holds only earlier (smaller) ids
            best = self._best(simhash, sketch, self._disk_candidates(keys), best)
        return best

    def _buffer_candidates(self, keys: list[int]) -> list[Candidate]:
        ids = {doc_id for key in keys for doc_id in self.pending_keys.get(key, ())}
        return [(doc_id, *self.pending_docs[doc_id]) for doc_id in ids]

    def _disk_candidates(self, keys: list[int]) -> list[Candidate]:
        if self.key_filter is not None and not self.key_filter.may_hold(keys):
            return []
        self.counters["disk_queries"] += 1
        rows = self.connection.execute(self._query, keys).fetchall()
        unique = {row[0]: (row[0], from_signed64(row[1]), row[2], row[3], row[4]) for row in rows}
        self.counters["disk_candidates"] += len(unique)
        return list(unique.values())

    def _best(self, simhash: int, sketch: bytes | None, candidates: list[Candidate],
              best: Match | None = None) -> Match | None:
        """The closest resembling candidate within the distance, or ``best``;
        a sketch is compared only when the candidate would be the new best."""
        if not candidates:
            return best
        self._count_candidates(candidates)
        within = sorted((((simhash ^ other).bit_count(), doc_id), group_id, url, other_sketch)
                        for doc_id, other, group_id, url, other_sketch in candidates
                        if (simhash ^ other).bit_count() <= self.layout.distance)
        for (distance, doc_id), group_id, url, other_sketch in within:
            if best is not None and (best.distance, best.doc_id) < (distance, doc_id):
                break
            estimate = self._resembling(sketch, other_sketch)
            if estimate is not False:
                return Match(doc_id, group_id, url, distance, estimate)
        return best

    def _resembling(self, sketch: bytes | None, other: bytes | None) -> float | None | bool:
        estimate = resembling(sketch, other, self.min_resemblance)
        if estimate is False:
            self.counters["dissimilar"] += 1
        return estimate

    def _count_candidates(self, candidates: list[Candidate]) -> None:
        self.counters["candidates"] += len(candidates)
        self.counters["max_candidates"] = max(self.counters["max_candidates"], len(candidates))

    def _store(self, doc_id: int, simhash: int, group_id: int, url: str, sketch: bytes | None,
               keys: list[int]) -> None:
        self.counters["stored"] += 1
        self.pending_docs[doc_id] = (simhash, group_id, url, sketch)
        for key in keys:
            self.pending_keys.setdefault(key, []).append(doc_id)
        if self.key_filter is not None:
            self.key_filter.add(keys)
            if self.key_filter.full:
                self.key_filter = None
        if len(self.pending_docs) >= self.buffer_entries:
            self.flush()

    def _write(self, docs: list[tuple[int, int, int, str, bytes | None]], rows: list[tuple[int, int]]) -> None:
        started = time.perf_counter()
        reserved = str(self.next_id + self.buffer_entries)
        levels_before = self.levels.meta()

        def work() -> None:
            self.connection.executemany("INSERT INTO near_docs VALUES (?, ?, ?, ?, ?)", docs)
            if rows:
                self.levels.insert(rows)
            self.connection.executemany("INSERT OR REPLACE INTO near_meta VALUES (?, ?)",
                                        [("reserved_id", reserved), ("levels", self.levels.meta())])
        try:
            write(self.connection, self.path, work)
        except ContentStoreError:
            self.levels.restore(levels_before)
            raise
        self._query = self.levels.query(len(self.layout.tables))
        elapsed_ms = round((time.perf_counter() - started) * 1000)
        self.counters["max_flush_ms"] = max(self.counters["max_flush_ms"], elapsed_ms)
