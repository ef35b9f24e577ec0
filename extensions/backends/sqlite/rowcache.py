"""A bounded write-through memory of URL statuses and cash rows the SQLite
store touched lately, holding only what its open transaction holds (cleared
on a failed commit or a bulk update, reset at ``bound`` entries)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite3

CashRow = tuple[float, float, float, int]  # cash, history, mark, visits

_UNKNOWN = object()


class RowCache:
    """Recent URL statuses and cash rows (``None``: known to have no cash row)."""

    def __init__(self, bound: int = 8192) -> None:
        self.bound = bound
        self.statuses: dict[int, int] = {}
        self.cash: dict[int, CashRow | None] = {}

    def clear(self) -> None:
        self.statuses.clear()
        self.cash.clear()

    def within(self, db: sqlite3.Connection) -> RowCache | None:
        """This cache if ``db`` is inside its own open transaction; else None, the cache emptied."""
        if db.in_transaction:
            return self
        self.clear()
        return None

    # -- statuses --------------------------------------------------------------
    def status(self, fingerprint: int) -> int | None:
        """The row's status if remembered (None: unknown here, ask the file)."""
        return self.statuses.get(fingerprint)

    def remember_status(self, fingerprint: int, status: int) -> int:
        """The row exists with ``status`` (just read, inserted or requeued)."""
        if len(self.statuses) >= self.bound:
            self.statuses.clear()
        self.statuses[fingerprint] = status
        return status

    def wrote_status(self, fingerprints: Iterable[int], status: int, only_from: int | None) -> None:
        """An UPDATE set ``status`` on these rows (``only_from``: those in that status)."""
        statuses = self.statuses
        for fp in fingerprints:
            old = statuses.get(fp)
            if old is not None and (only_from is None or old == only_from):
                statuses[fp] = status

    # -- cash rows -------------------------------------------------------------
    def cash_rows(self, fingerprints: Sequence[int]) -> tuple[dict[int, CashRow], list[int]]:
        """The remembered cash rows of ``fingerprints`` and those not remembered."""
        found: dict[int, CashRow] = {}
        missing: list[int] = []
        cash = self.cash
        for fp in fingerprints:
            row = cash.get(fp, _UNKNOWN)
            if row is _UNKNOWN:
                missing.append(fp)
            elif row is not None:
                found[fp] = row  # type: ignore[assignment]
        return found, missing

    def read_cash(self, asked: Sequence[int], found: dict[int, CashRow]) -> None:
        """The file answered for ``asked``: ``found`` holds the rows that exist."""
        if len(self.cash) + len(asked) > self.bound:
            self.cash.clear()
        for fp in asked:
            self.cash[fp] = found.get(fp)

    def wrote_cash(self, rows: Sequence[tuple[int, float, float, float, int]]) -> None:
        """``INSERT OR REPLACE`` of these cash rows."""
        if len(self.cash) + len(rows) > self.bound:
            self.cash.clear()
        cash = self.cash
        for fp, value, history, mark, visits in rows:  # as the REAL and INTEGER columns give them back
            cash[fp] = (float(value), float(history), float(mark), int(visits))
