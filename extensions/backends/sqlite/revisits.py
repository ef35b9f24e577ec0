"""Per-URL re-visit history in the SQLite store (the RevisitTable of
:mod:`extensions.frontier.store`), one row per fetched URL (:data:`REVISITS_SCHEMA`).
Partial indexes hold only scheduled (and gone) rows. Written inside the
store's transaction: the commit that makes a page ``done`` carries its record.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Iterator, Sequence

from extensions.backends.sqlite.tables import rows_in
from extensions.frontier.store import RevisitCounts, RevisitRecord

#: The table and its indexes (run by the SQLite store's schema script).
REVISITS_SCHEMA = """
CREATE TABLE IF NOT EXISTS revisits (
  fingerprint   INTEGER PRIMARY KEY,  -- the URL's fingerprint (urls.fingerprint)
  due           REAL,                 -- unix time it is next due; NULL: not scheduled (taken, or given up)
  interval      REAL    NOT NULL,     -- current re-visit interval, seconds
  visits        INTEGER NOT NULL,     -- fetches answered (200, 304, 404/410)
  changes       INTEGER NOT NULL,     -- visits that found the page changed
  first_visit   REAL    NOT NULL,     -- unix time of the first fetch
  last_visit    REAL    NOT NULL,     -- unix time of the latest fetch
  last_change   REAL    NOT NULL,     -- unix time the latest change was seen
  content       INTEGER,              -- content fingerprint of the latest 200
  etag          TEXT,                 -- validators of the latest 200
  last_modified TEXT,
  gone          INTEGER NOT NULL);    -- consecutive 404/410 after a 200
CREATE INDEX IF NOT EXISTS revisits_due ON revisits (due) WHERE due IS NOT NULL;
CREATE INDEX IF NOT EXISTS revisits_gone ON revisits (fingerprint) WHERE gone > 0;
"""

_COLUMNS = ("fingerprint, due, interval, visits, changes, first_visit, last_visit, "
            "last_change, content, etag, last_modified, gone")


def _row(record: RevisitRecord) -> tuple:
    return (record.fingerprint, None if math.isinf(record.due) else record.due, *record[2:])


def _record(row: Sequence) -> RevisitRecord:
    return RevisitRecord(row[0], math.inf if row[1] is None else row[1], *row[2:])


class SQLiteRevisitTable:
    """The ``revisits`` table on the SQLite store's connection."""

    def __init__(self, connection: Callable[[], sqlite3.Connection]) -> None:
        self._connection = connection

    def get(self, fingerprints: Sequence[int]) -> dict[int, RevisitRecord]:
        sql = f"SELECT {_COLUMNS} FROM revisits WHERE fingerprint IN ({{marks}})"
        return {row[0]: _record(row) for row in rows_in(self._connection(), sql, fingerprints)}

    def put(self, records: Sequence[RevisitRecord]) -> None:
        self._connection().executemany(
            "INSERT OR REPLACE INTO revisits VALUES (?,?,?,?,?,?,?,?,?,?,?,?)", [_row(r) for r in records])

    def take_due(self, now: float, limit: int) -> list[RevisitRecord]:
        if limit < 1:
            return []
        db = self._connection()  # one connection, one writer: select-then-update is atomic
        rows = db.execute(f"SELECT {_COLUMNS} FROM revisits WHERE due <= ? ORDER BY due, fingerprint LIMIT ?",
                          (now, limit)).fetchall()
        db.executemany("UPDATE revisits SET due = NULL WHERE fingerprint = ?", [(row[0],) for row in rows])
        return [_record(row) for row in rows]

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
        cursor.execute(f"SELECT {_COLUMNS} FROM revisits ORDER BY fingerprint")
        while rows := cursor.fetchmany(max(1, batch)):
            yield [_record(row) for row in rows]
