"""A bounded memory of the URL rows the SQLite store wrote or read lately.

Within one page's life the frontier asks for the same few rows again and
again, each a single-row query: the status of a URL it dequeues (a stale
copy left by an AOPIC promotion?) or whose cash a credit just raised (still
queued, so it may move up?), the cash of a URL it hands out (AOPIC's
Lambda) and of a page's outlinks, credited a moment ago by earlier pages.
:class:`RowCache` keeps the status and the cash row of the fingerprints the
store touched lately, kept true by every write the store makes to those
columns (write-through), so such a read is a dict look-up.

It only ever holds what the store's open transaction holds: the store
consults it only inside its own transaction (a statement that failed and
rolled the transaction back ends it; a read-only reader never uses it, since
another process writes the file), clears it when a commit fails, and clears
the statuses after a bulk update it does not follow row by row. Bounded:
a memory that reaches ``bound`` entries starts again empty (the rows are
in the file; only the next look-ups cost a query).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
        """An UPDATE set ``status`` on these rows (those whose status was
        ``only_from``, if given). Only remembered rows change: an UPDATE of a
        row that does not exist writes nothing, so it must not be remembered."""
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
