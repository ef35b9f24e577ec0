"""The SQLite store's tables, all on its one connection and transaction, so a
page's status, cash, group, outlinks, re-visit record and queue moves commit together."""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from extensions.backends.sqlite.rowcache import RowCache
from extensions.frontier.census import reason_of
from extensions.frontier.store import Census, Entry, HostLoad, RevisitCounts, RevisitRecord, Status, URLEvent

Connection = Callable[[], sqlite3.Connection]
_ENTRY_COLUMNS = "fingerprint, url, host, level, priority, depth, referer, flags, extra, blob"
_CHUNK = 500  # bound on SQL variables per statement
_STATUSES = {int(status): status for status in Status}  # a dict look-up, not an enum call
_PACKED = np.dtype("<i8")


def rows_in(db: sqlite3.Connection, sql: str, fingerprints: Sequence[int]) -> Iterator[tuple]:
    """The rows of ``sql`` (``... IN ({marks})``) for ``fingerprints``, in chunks."""
    for start in range(0, len(fingerprints), _CHUNK):
        chunk = fingerprints[start:start + _CHUNK]
        yield from db.execute(sql.format(marks=",".join("?" * len(chunk))), chunk)


def pack_targets(targets: Sequence[int]) -> bytes:
    """A page's outlinks as one value: ``targets`` without repeats, as little-endian int64."""
    return np.array(list(dict.fromkeys(targets)), dtype=_PACKED).tobytes()


def unpack_targets(blob: bytes) -> list[int]:
    return np.frombuffer(blob, dtype=_PACKED).tolist()


class _OnConnection:
    """A table read and written through the store's one connection."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection


class SQLiteQueues:
    """``queue_items`` rows; lengths and bounds kept in memory (:meth:`load`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._lengths: dict[str, int] = {}
        self._bounds: dict[str, list[int]] = {}  # queue -> [first seq, last seq]

    def load(self) -> None:
        """Read the lengths and bounds from the file (at open)."""
        rows = self._connection().execute(
            "SELECT queue, COUNT(*), MIN(seq), MAX(seq) FROM queue_items GROUP BY queue")
        for name, count, first, last in rows:
            self._lengths[name] = count
            self._bounds[name] = [first, last]

    def push(self, name: str, fingerprints: Sequence[int]) -> None:
        if fingerprints:
            bounds = self._bounds.setdefault(name, [1, 0])
            start = bounds[1] + 1
            bounds[1] += len(fingerprints)
            self._insert(name, start, fingerprints)

    def push_front(self, name: str, fingerprints: Sequence[int]) -> None:
        if fingerprints:
            bounds = self._bounds.setdefault(name, [1, 0])
            bounds[0] -= len(fingerprints)
            self._insert(name, bounds[0], fingerprints)

    def _insert(self, name: str, first: int, fingerprints: Sequence[int]) -> None:
        self._connection().executemany("INSERT INTO queue_items VALUES (?, ?, ?)",
                                       [(name, first + i, fp) for i, fp in enumerate(fingerprints)])
        self._lengths[name] = self._lengths.get(name, 0) + len(fingerprints)

    def pop(self, name: str, count: int) -> list[int]:
        if not self._lengths.get(name):
            return []
        db = self._connection()
        rows = db.execute("SELECT seq, fingerprint FROM queue_items WHERE queue=? ORDER BY seq LIMIT ?",
                          (name, count)).fetchall()
        if rows:
            db.execute("DELETE FROM queue_items WHERE queue=? AND seq<=?", (name, rows[-1][0]))
            self._bounds[name][0] = rows[-1][0] + 1
        self._lengths[name] -= len(rows)
        return [fp for _, fp in rows]

    def length(self, name: str) -> int:
        return self._lengths.get(name, 0)

    def clear(self) -> None:
        self._connection().execute("DELETE FROM queue_items")
        self._lengths.clear()
        self._bounds.clear()


class SQLiteURLTable:
    """``urls`` rows; the discovery counter kept in memory (:meth:`load`)."""

    def __init__(self, connection: Connection, cache: RowCache) -> None:
        self._connection, self._cache = connection, cache
        self._seq = 0

    def load(self) -> None:
        self._seq = self._connection().execute("SELECT COALESCE(MAX(seq), 0) FROM urls").fetchone()[0]

    def insert_new(self, entries: Sequence[Entry], now: float) -> list[bool]:
        db = self._connection()
        memory = self._cache.within(db)
        result = []
        for entry in entries:
            self._seq += 1
            cursor = db.execute("INSERT OR IGNORE INTO urls VALUES (?,?,?,0,?,?,?,?,?,NULL,?,?,?,?)",
                                self._row(entry, now))
            result.append(cursor.rowcount == 1)
            if result[-1] and memory is not None:
                memory.remember_status(entry.fingerprint, Status.QUEUED)
        return result

    def requeue(self, entry: Entry, now: float) -> None:
        self._seq += 1
        db = self._connection()
        if (memory := self._cache.within(db)) is not None:
            memory.remember_status(entry.fingerprint, Status.QUEUED)
        db.execute(
            "INSERT INTO urls VALUES (?,?,?,0,?,?,?,?,?,NULL,?,?,?,?) "
            "ON CONFLICT (fingerprint) DO UPDATE SET url=excluded.url, "
            "host=excluded.host, status=0, level=excluded.level, "
            "priority=excluded.priority, depth=excluded.depth, seq=excluded.seq, "
            "referer=excluded.referer, flags=excluded.flags, "
            "extra=excluded.extra, blob=excluded.blob",
            self._row(entry, now),
        )

    def _row(self, e: Entry, now: float) -> tuple:
        return (e.fingerprint, e.url, e.host, e.level, e.priority, e.depth,
                self._seq, now, e.referer, e.flags, e.extra, e.blob)

    def get_many(self, fingerprints: Sequence[int]) -> dict[int, Entry]:
        sql = f"SELECT {_ENTRY_COLUMNS} FROM urls WHERE fingerprint IN ({{marks}})"
        return {row[0]: Entry(*row) for row in rows_in(self._connection(), sql, fingerprints)}

    def set_status(self, fingerprints: Iterable[int], status: Status, now: float | None = None,
                   only_from: Status | None = None) -> None:
        sql = "UPDATE urls SET status=?, fetched=COALESCE(?, fetched) WHERE fingerprint=?"
        fingerprints = list(fingerprints)
        if only_from is None:
            rows = [(int(status), now, fp) for fp in fingerprints]
        else:
            sql += " AND status=?"
            rows = [(int(status), now, fp, int(only_from)) for fp in fingerprints]
        db = self._connection()
        db.executemany(sql, rows)
        if (memory := self._cache.within(db)) is not None:
            memory.wrote_status(fingerprints, int(status), None if only_from is None else int(only_from))

    def status_of(self, fingerprint: int) -> Status | None:
        db = self._connection()
        memory = self._cache.within(db)
        status = None if memory is None else memory.status(fingerprint)
        if status is None:
            row = db.execute("SELECT status FROM urls WHERE fingerprint=?", (fingerprint,)).fetchone()
            if row is None:
                return None
            status = row[0] if memory is None else memory.remember_status(fingerprint, row[0])
        return _STATUSES[status]

    def iter_pending(self, batch: int = 10_000) -> Iterator[tuple[int, int]]:
        return self._select("SELECT fingerprint, level FROM urls WHERE status IN (0, 1) ORDER BY seq", batch)

    def iter_all(self, batch: int = 10_000) -> Iterator[tuple[int, int]]:
        return self._select("SELECT fingerprint, level FROM urls", batch)

    def _select(self, sql: str, batch: int) -> Iterator[tuple[int, int]]:
        cursor = self._connection().cursor()
        cursor.execute(sql)
        while rows := cursor.fetchmany(batch):
            yield from rows

    def count_host(self, fingerprint: int, host: str) -> int:
        lo = (fingerprint >> 40) << 40  # the host's fingerprints share their top 24 bits
        return self._connection().execute(
            "SELECT COUNT(*) FROM urls WHERE fingerprint BETWEEN ? AND ? AND host = ?",
            (lo, lo + (1 << 40) - 1, host),
        ).fetchone()[0]

    def requeue_inflight(self) -> int:
        self._cache.statuses.clear()  # a bulk update
        return self._connection().execute("UPDATE urls SET status=0 WHERE status=1").rowcount

    def count_by_status(self) -> dict[Status, int]:
        rows = self._connection().execute("SELECT status, COUNT(*) FROM urls GROUP BY status")
        return {Status(status): count for status, count in rows}

    def take_deferred(self) -> list[int]:
        db = self._connection()
        fingerprints = [fp for (fp,) in db.execute("SELECT fingerprint FROM urls WHERE status=5")]
        db.execute("UPDATE urls SET status=0 WHERE status=5")
        self._cache.statuses.clear()  # a bulk update
        return fingerprints


class SQLiteHostTable:
    """``hosts`` and ``deferrals`` rows; the host count kept in memory (:meth:`load`)."""

    def __init__(self, connection: Connection) -> None:
        self._connection = connection
        self._host_count = 0

    def load(self) -> None:
        self._host_count = self._connection().execute("SELECT COUNT(*) FROM hosts").fetchone()[0]

    def add_hosts(self, hosts: Iterable[str], now: float | None = None) -> None:
        db = self._connection()
        first_seen = time.time() if now is None else now
        new = 0
        for host in hosts:
            new += db.execute("INSERT OR IGNORE INTO hosts VALUES (?, NULL, ?)", (host, first_seen)).rowcount
        self._host_count += new

    def host_count(self) -> int:
        return self._host_count

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        self.add_hosts([host])
        self._connection().execute("UPDATE hosts SET crawl_delay=? WHERE host=?", (seconds, host))

    def crawl_delays(self) -> dict[str, float]:
        return dict(self._connection().execute(
            "SELECT host, crawl_delay FROM hosts WHERE crawl_delay IS NOT NULL"))

    def set_widened(self, host: str, seconds: float) -> None:
        self._connection().execute("INSERT OR REPLACE INTO widened VALUES (?, ?)", (host, seconds))

    def widened(self) -> dict[str, float]:
        return dict(self._connection().execute("SELECT host, seconds FROM widened"))

    def defer_origin(self, origin: str, reason: str, now: float) -> None:
        self._connection().execute("INSERT OR REPLACE INTO deferrals VALUES (?, ?, ?)", (origin, reason, now))

    def deferrals(self) -> dict[str, tuple[str, float]]:
        rows = self._connection().execute("SELECT origin, reason, at FROM deferrals")
        return {origin: (reason, at) for origin, reason, at in rows}

    def clear_deferrals(self) -> None:
        self._connection().execute("DELETE FROM deferrals")


class SQLiteCashTable:
    """``cash`` rows (AOPIC)."""

    def __init__(self, connection: Connection, cache: RowCache) -> None:
        self._connection, self._cache = connection, cache

    def get_cash(self, fingerprints: Sequence[int]) -> dict[int, tuple[float, float, float, int]]:
        db = self._connection()
        memory = self._cache.within(db)
        found, missing = ({}, fingerprints) if memory is None else memory.cash_rows(fingerprints)
        sql = "SELECT fingerprint, cash, history, mark, visits FROM cash WHERE fingerprint IN ({marks})"
        for fp, cash, history, mark, visits in rows_in(db, sql, missing):
            found[fp] = (cash, history, mark, visits)
        if memory is not None and missing:
            memory.read_cash(missing, found)
        return found

    def put_cash(self, rows: Sequence[tuple[int, float, float, float, int]]) -> None:
        db = self._connection()
        db.executemany("INSERT OR REPLACE INTO cash VALUES (?, ?, ?, ?, ?)", rows)
        if (memory := self._cache.within(db)) is not None:
            memory.wrote_cash(rows)

    def cash_count(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM cash").fetchone()[0]


class SQLiteContentGroups(_OnConnection):
    """``content_groups`` rows (content-seen verdicts)."""

    def set_content_group(self, fingerprint: int, group_id: int, duplicate: bool) -> None:
        self._connection().execute("INSERT OR REPLACE INTO content_groups VALUES (?, ?, ?)",
                                   (fingerprint, group_id, int(duplicate)))

    def content_group(self, fingerprint: int) -> int | None:
        row = self._connection().execute(
            "SELECT group_id FROM content_groups WHERE fingerprint=?", (fingerprint,)).fetchone()
        return None if row is None else row[0]


class SQLiteLinkTable(_OnConnection):
    """The ``links`` table on the SQLite store's connection."""

    def record(self, source: int, targets: Sequence[int], url: str = "", target_urls: Sequence[str] = ()) -> None:
        self._connection().execute("INSERT OR REPLACE INTO links VALUES (?, ?)",
                                   (source, pack_targets(targets)))

    def targets_of(self, source: int) -> list[int] | None:
        row = self._connection().execute("SELECT targets FROM links WHERE source=?", (source,)).fetchone()
        return None if row is None else unpack_targets(row[0])

    def sources(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM links").fetchone()[0]

    def scan(self, batch: int = 10_000) -> Iterator[list[tuple[int, list[int]]]]:
        cursor = self._connection().cursor()
        cursor.execute("SELECT source, targets FROM links ORDER BY source")
        while rows := cursor.fetchmany(max(1, batch)):
            yield [(source, unpack_targets(blob)) for source, blob in rows]

    def node_urls(self) -> None:
        """None: the graph's nodes are named through the store's URL rows."""


class SQLiteCensus(_OnConnection):
    """The census on the SQLite store's connection."""

    def census(self, hosts: int, errors: int, since: float) -> Census:
        db = self._connection()
        loads = [HostLoad(*row) for row in db.execute(
            "SELECT host, SUM(status=0), SUM(status=1), SUM(status=2), MAX(fetched) FROM urls "
            "GROUP BY host ORDER BY SUM(status=0) DESC, SUM(status=1) DESC, SUM(status=2) DESC, host "
            "LIMIT ?", (max(0, hosts),))]
        events = [[URLEvent(url, host, Status(status), at, reason_of(extra))
                   for url, host, status, at, extra in db.execute(
                       "SELECT url, host, status, COALESCE(fetched, discovered) AS at, extra FROM urls "
                       f"WHERE status IN ({statuses}) ORDER BY at DESC, seq DESC LIMIT ?", (max(0, errors),))]
                  for statuses in ("3", "4, 6")]  # failed; excluded and refused
        fetched, first, last, recent = db.execute(
            "SELECT COUNT(fetched), MIN(fetched), MAX(fetched), COALESCE(SUM(fetched >= ?), 0) FROM urls",
            (since,)).fetchone()
        return Census(loads, *events, fetched, first, last, recent)


_REVISIT_COLUMNS = ("fingerprint, due, interval, visits, changes, first_visit, last_visit, "
            "last_change, content, etag, last_modified, gone")


def _revisit_row(record: RevisitRecord) -> tuple:
    return (record.fingerprint, None if math.isinf(record.due) else record.due, *record[2:])


def _revisit_record(row: Sequence) -> RevisitRecord:
    return RevisitRecord(row[0], math.inf if row[1] is None else row[1], *row[2:])


class SQLiteRevisitTable(_OnConnection):
    """The ``revisits`` table: one row per fetched URL, written with the page's ``done``."""

    def get(self, fingerprints: Sequence[int]) -> dict[int, RevisitRecord]:
        sql = f"SELECT {_REVISIT_COLUMNS} FROM revisits WHERE fingerprint IN ({{marks}})"
        return {row[0]: _revisit_record(row) for row in rows_in(self._connection(), sql, fingerprints)}

    def put(self, records: Sequence[RevisitRecord]) -> None:
        self._connection().executemany(
            "INSERT OR REPLACE INTO revisits VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", [_revisit_row(r) for r in records])

    def take_due(self, now: float, limit: int) -> list[RevisitRecord]:
        if limit < 1:
            return []
        db = self._connection()  # one connection, one writer: select-then-update is atomic
        rows = db.execute(f"SELECT {_REVISIT_COLUMNS} FROM revisits WHERE due <= ? ORDER BY due, fingerprint LIMIT ?",
                          (now, limit)).fetchall()
        db.executemany("UPDATE revisits SET due = NULL WHERE fingerprint = ?", [(row[0],) for row in rows])
        return [_revisit_record(row) for row in rows]

    def next_due(self) -> float | None:
        row = self._connection().execute(
            "SELECT due FROM revisits WHERE due IS NOT NULL ORDER BY due LIMIT 1").fetchone()
        return None if row is None else row[0]

    def count_due(self, now: float) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM revisits WHERE due <= ?", (now,)).fetchone()[0]

    def counts(self) -> RevisitCounts:
        db = self._connection()
        records = db.execute("SELECT COUNT(*) FROM revisits").fetchone()[0]
        scheduled = db.execute("SELECT COUNT(*) FROM revisits WHERE due IS NOT NULL").fetchone()[0]
        gone = db.execute("SELECT COUNT(*) FROM revisits WHERE gone > 0").fetchone()[0]
        return RevisitCounts(records, scheduled, gone)

    def scan(self, batch: int = 10_000) -> Iterator[list[RevisitRecord]]:
        cursor = self._connection().cursor()
        cursor.execute(f"SELECT {_REVISIT_COLUMNS} FROM revisits ORDER BY fingerprint")
        while rows := cursor.fetchmany(max(1, batch)):
            yield [_revisit_record(row) for row in rows]
