"""AOPIC's conservation check for tests: a ledger's conserved sum and its parts."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from extensions.aopic.ledger import AOPICLedger
from extensions.backends.redis.ledger import SharedLedger
from extensions.backends.redis.rows import unpack_cash
from extensions.backends.redis.tables import RedisCashTable


@dataclass
class LedgerTotals:
    """The conserved sum and its parts."""

    cash: float  # settled cash on rows
    unpaid: float  # dividends spread but not yet settled on rows
    lambda_cash: float
    put_in: float
    history: float
    rows: int

    @property
    def conserved(self) -> float:
        return self.cash + self.unpaid + self.lambda_cash


def ledger_totals(ledger: AOPICLedger) -> LedgerTotals:
    """The sums over every cash row of ``ledger``'s store (a shared ledger's scalars read again first)."""
    if isinstance(ledger, SharedLedger):
        ledger.refresh()
        rows = ledger.store.cash.cash_count()
    else:
        rows = ledger.rows
    cash, history, marks = cash_sums(ledger.store)
    return LedgerTotals(cash, rows * ledger.dividend - marks, ledger.lambda_cash, ledger.put_in, history, rows)


def cash_sums(store: Any) -> tuple[float, float, float]:
    """Sums of cash, history and mark over every cash row of ``store`` (Redis' or SQLite's)."""
    if isinstance(store.cash, RedisCashTable):
        rows = [unpack_cash(value) for _, value in store.cash.maps.items()]
    else:  # the SQLite table, the memory backend's too
        rows = store.cash._connection().execute("SELECT cash, history, mark FROM cash").fetchall()
    return math.fsum(row[0] for row in rows), math.fsum(row[1] for row in rows), math.fsum(row[2] for row in rows)
