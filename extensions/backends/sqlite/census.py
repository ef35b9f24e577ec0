"""The census of the SQLite store: four aggregate queries on its connection
(read-only friendly: nothing is written)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from extensions.frontier.census import reason_of
from extensions.frontier.store import Census, HostLoad, Status, URLEvent


class SQLiteCensus:
    """The census on the SQLite store's connection."""

    def __init__(self, connection: Callable[[], sqlite3.Connection]) -> None:
        self._connection = connection

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
