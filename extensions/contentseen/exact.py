"""The exact content-seen test: every body fingerprint seen, with its first URL, in
one SQLite file chosen by the caller (tables: :data:`_SCHEMA`). Memory: an LRU of
``memory_entries`` fingerprints plus at most ``batch_size`` new ones, which a crash
may lose. One writer, not thread-safe."""

from __future__ import annotations

import sqlite3
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Self

from extensions.contentseen.fingerprint import to_signed64
from extensions.contentseen.sets import ExactSet

SCHEMA_VERSION = "1"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS content_seen (
  fingerprint INTEGER PRIMARY KEY,  -- signed 64-bit
  url         TEXT NOT NULL);       -- the first URL with this content
CREATE TABLE IF NOT EXISTS content_seen_meta (key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;
"""


class ContentStoreError(RuntimeError):
    """A content-seen store cannot be opened or written; the message names the file."""


def open_database(path: Path, cache_kib: int = 8192) -> sqlite3.Connection:
    """A connection to ``path`` in WAL mode, autocommit (callers use BEGIN/COMMIT), with a
    ``cache_kib`` page cache; :class:`ContentStoreError` naming the file if it is unusable."""
    try:
        connection = sqlite3.connect(path, isolation_level=None)
    except sqlite3.Error as err:
        raise ContentStoreError(f"cannot open content-seen store {path}: {err}") from err
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        connection.execute("PRAGMA busy_timeout=10000")
        connection.execute(f"PRAGMA cache_size=-{int(cache_kib)}")
    except sqlite3.Error as err:
        connection.close()
        raise ContentStoreError(f"cannot open content-seen store {path}: {err}") from err
    return connection


def check_schema(connection: sqlite3.Connection, path: Path, table: str, script: str,
                 expected: dict[str, str]) -> dict[str, str]:
    """Create the tables if new; the meta table's contents, which must match ``expected``
    (:class:`ContentStoreError` on a corrupt file or another schema or layout)."""
    try:
        connection.executescript(script)
        meta = dict(connection.execute(f"SELECT key, value FROM {table}"))
        if not meta:
            connection.executemany(f"INSERT INTO {table} VALUES (?, ?)", expected.items())
            return dict(expected)
    except sqlite3.Error as err:
        raise ContentStoreError(f"content-seen store {path} is unusable: {err}") from err
    for key, value in expected.items():
        if meta.get(key) != value:
            raise ContentStoreError(
                f"content-seen store {path} has {key}={meta.get(key)!r}, expected {value!r} "
                "(written by another version or with other settings: delete it or use another JOBDIR)")
    return meta


def write(connection: sqlite3.Connection, path: Path, work: Callable[[], object]) -> None:
    """Run ``work`` in one transaction (rolled back if it fails: :class:`ContentStoreError`)."""
    try:
        connection.execute("BEGIN")
        work()
        connection.execute("COMMIT")
    except sqlite3.Error as err:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise ContentStoreError(f"cannot write content-seen store {path}: {err}") from err


def is_empty(connection: sqlite3.Connection, path: Path, table: str) -> bool:
    """Whether ``table`` has no row (:class:`ContentStoreError` if unreadable)."""
    try:
        return connection.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is None
    except sqlite3.Error as err:
        raise ContentStoreError(f"content-seen store {path} is unusable: {err}") from err


class SQLiteSet:
    """A set kept in one SQLite file (``connection``), written by :meth:`flush`."""

    connection: sqlite3.Connection

    def flush(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Flush and close the file; the object is unusable afterwards."""
        try:
            self.flush()
        finally:
            self.connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class ContentSeen(SQLiteSet, ExactSet):
    """The content fingerprints seen, each with its first URL, from this run and (after
    :meth:`flush`) earlier runs on the same file; a full batch flushes itself."""

    def __init__(self, connection: sqlite3.Connection, path: Path,
                 memory_entries: int = 65536, batch_size: int = 1024, file_empty: bool = False) -> None:
        if memory_entries < 1 or batch_size < 1:
            raise ValueError(f"memory_entries ({memory_entries}) and batch_size ({batch_size}) must be >= 1")
        self.connection, self.path = connection, path
        self.memory_entries, self.batch_size = memory_entries, batch_size
        self.memory: OrderedDict[int, str] = OrderedDict()  # LRU, signed fingerprint -> first URL
        self.pending: dict[int, str] = {}  # added since the last flush
        # memory holds every fingerprint in the file (and pending): a miss is new
        self.memory_complete = file_empty
        self.counters = dict.fromkeys(
            ("lookups", "memory_hits", "disk_hits", "added", "duplicates", "flushes", "evictions"), 0)

    @classmethod
    def open(cls, path: Path, memory_entries: int = 65536, batch_size: int = 1024,
             cache_kib: int = 8192) -> ContentSeen:
        """Open (or create) the store at ``path``; ``cache_kib``: see :func:`open_database`."""
        connection = open_database(path, cache_kib)
        try:
            check_schema(connection, path, "content_seen_meta", _SCHEMA, {"schema": SCHEMA_VERSION})
            return cls(connection, path, memory_entries, batch_size, is_empty(connection, path, "content_seen"))
        except (ContentStoreError, ValueError):
            connection.close()
            raise

    def add_or_get(self, fingerprint: int, url: str) -> str:
        """The first URL recorded for ``fingerprint`` (a duplicate unless it is ``url``);
        records ``url`` if there is none."""
        key = to_signed64(fingerprint)
        first = self._lookup(key)
        if first is None:
            self._add(key, url)
            return url
        if first != url:
            self.counters["duplicates"] += 1
        return first

    def get(self, fingerprint: int) -> str | None:
        """The first URL recorded for ``fingerprint``, without recording anything."""
        return self._lookup(to_signed64(fingerprint))

    def flush(self) -> None:
        """Commit the pending batch in one transaction."""
        if not self.pending:
            return
        write(self.connection, self.path, lambda: self.connection.executemany(
            "INSERT OR IGNORE INTO content_seen VALUES (?, ?)", self.pending.items()))
        self.pending.clear()
        self.counters["flushes"] += 1

    def stats(self) -> dict[str, int]:
        """Counters since open, plus the current memory sizes (gauges)."""
        return {**self.counters, "memory_entries": len(self.memory), "pending": len(self.pending)}

    def _lookup(self, key: int) -> str | None:
        self.counters["lookups"] += 1
        first = self.memory.get(key)
        if first is not None:
            self.memory.move_to_end(key)
            self.counters["memory_hits"] += 1
            return first
        if self.memory_complete:
            return None
        first = self.pending.get(key)
        if first is None:
            row = self.connection.execute(
                "SELECT url FROM content_seen WHERE fingerprint = ?", (key,)).fetchone()
            if row is None:
                return None
            first = row[0]
            self.counters["disk_hits"] += 1
        else:
            self.counters["memory_hits"] += 1
        self._remember(key, first)
        return first

    def _add(self, key: int, url: str) -> None:
        self.counters["added"] += 1
        self.pending[key] = url
        self._remember(key, url)
        if len(self.pending) >= self.batch_size:
            self.flush()

    def _remember(self, key: int, url: str) -> None:
        self.memory[key] = url
        if len(self.memory) > self.memory_entries:
            self.memory.popitem(last=False)
            self.counters["evictions"] += 1
            self.memory_complete = False
