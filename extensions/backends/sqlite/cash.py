"""The AOPIC cash table and the content groups of the SQLite store.

:class:`SQLiteCashTable` is a base of :class:`~extensions.backends.sqlite.store.SQLiteStore`
(the store is its own ``cash``, as it is its own ``urls``): the same
connection and open transaction, so a page's cash moves commit with its
status. The tables (created by the store's schema)::

    CREATE TABLE cash (fingerprint INTEGER PRIMARY KEY, cash REAL NOT NULL,
      history REAL NOT NULL, mark REAL NOT NULL, visits INTEGER NOT NULL) WITHOUT ROWID;
    CREATE TABLE content_groups (fingerprint INTEGER PRIMARY KEY,
      group_id INTEGER NOT NULL, duplicate INTEGER NOT NULL) WITHOUT ROWID;

Cash rows read or written lately are answered from the store's
:class:`~extensions.backends.sqlite.rowcache.RowCache` (the cash of a URL handed out,
of a page's outlinks credited by the pages before it).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from extensions.backends.sqlite.rowcache import RowCache
from extensions.frontier.store import Entry

_CHUNK = 500  # bound on SQL variables per statement


class SQLiteCashTable:
    """``CashTable`` and content groups over the store's connection."""

    def _require(self) -> sqlite3.Connection:
        raise NotImplementedError  # the store's

    def _memory(self) -> RowCache | None:
        raise NotImplementedError  # the store's

    # -- CashTable (AOPIC) ---------------------------------------------------
    def get_cash(self, fingerprints: Sequence[int]) -> dict[int, tuple[float, float, float, int]]:
        db, memory = self._require(), self._memory()
        found, missing = ({}, fingerprints) if memory is None else memory.cash_rows(fingerprints)
        for start in range(0, len(missing), _CHUNK):
            chunk = missing[start:start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for fp, cash, history, mark, visits in db.execute(
                f"SELECT fingerprint, cash, history, mark, visits FROM cash WHERE fingerprint IN ({marks})",
                chunk,
            ):
                found[fp] = (cash, history, mark, visits)
        if memory is not None and missing:
            memory.read_cash(missing, found)
        return found

    def put_cash(self, rows: Sequence[tuple[int, float, float, float, int]]) -> None:
        self._require().executemany("INSERT OR REPLACE INTO cash VALUES (?, ?, ?, ?, ?)", rows)
        if (memory := self._memory()) is not None:
            memory.wrote_cash(rows)

    def cash_count(self) -> int:
        return self._require().execute("SELECT COUNT(*) FROM cash").fetchone()[0]

    def cash_totals(self) -> tuple[float, float, float]:
        row = self._require().execute(
            "SELECT COALESCE(SUM(cash), 0), COALESCE(SUM(history), 0), COALESCE(SUM(mark), 0) FROM cash"
        ).fetchone()
        return float(row[0]), float(row[1]), float(row[2])

    def get_cash_and_entries(self, fingerprints: Sequence[int]) -> tuple[
            dict[int, tuple[float, float, float, int]], dict[int, Entry] | None]:
        """The cash rows only: a URL row is read when needed, at no round trip's cost."""
        return self.get_cash(fingerprints), None

    # -- content groups (content-seen) ---------------------------------------
    def set_content_group(self, fingerprint: int, group_id: int, duplicate: bool) -> None:
        self._require().execute("INSERT OR REPLACE INTO content_groups VALUES (?, ?, ?)",
                                (fingerprint, group_id, int(duplicate)))

    def content_group(self, fingerprint: int) -> int | None:
        row = self._require().execute(
            "SELECT group_id FROM content_groups WHERE fingerprint=?", (fingerprint,)).fetchone()
        return None if row is None else row[0]
