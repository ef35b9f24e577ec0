"""AOPIC's cash ledger (Abiteboul, Preda and Cobena, WWW 2003): cash, history,
Lambda and a lazy dividend, conserved; it resumes with the frontier's store
(arithmetic: docs/reference/formats.md)."""

from __future__ import annotations

from dataclasses import dataclass

from extensions.frontier.store import Entry, FrontierStore

META_KEY = "aopic"


def tax_for_share(tax: float, share: float) -> float:
    """The tax under which a page's outlinks get ``share`` of what they get under ``tax``."""
    return 1.0 - (1.0 - tax) * min(1.0, max(0.0, share))


@dataclass(slots=True)
class Paid:
    """A fetched page's AOPIC step (:meth:`AOPICLedger.distribute`)."""

    cash: float  # taken from the page
    history: float  # the page's history now
    visits: int
    changes: list[tuple[float, float, bool]]  # per outlink: (cash before, after, had a row)


class AOPICLedger:
    """Cash, history and Lambda over a store with a cash table."""

    def __init__(self, store: FrontierStore, initial_cash: float = 1.0, tax: float = 0.1) -> None:
        if initial_cash <= 0 or not 0.0 <= tax < 1.0:
            raise ValueError(f"AOPIC needs initial cash > 0 and 0 <= tax < 1; got {initial_cash!r}, {tax!r}")
        self.store = store
        self.initial_cash = initial_cash
        self.tax = tax
        self.lambda_cash = 0.0
        self.dividend = 0.0  # D: Lambda's spread per page so far
        self.put_in = 0.0
        self.rows = 0
        self.lambda_crawls = 0

    # -- persistence ----------------------------------------------------------
    def load(self) -> None:
        """Read the scalars saved with the store (a resumed crawl)."""
        saved = self.store.get_meta(META_KEY)
        if saved:
            values = [float(v) for v in saved.split(",")]
            self.lambda_cash, self.dividend, self.put_in, rows, crawls = values
            self.rows, self.lambda_crawls = int(rows), int(crawls)
        else:
            self.rows = self.store.cash.cash_count()

    def save(self) -> None:
        """Write the scalars (made durable by the store's next checkpoint)."""
        self.store.set_meta(META_KEY, ",".join(repr(v) for v in (
            self.lambda_cash, self.dividend, self.put_in, float(self.rows), float(self.lambda_crawls))))

    # -- reads ------------------------------------------------------------------
    def cash_of(self, fingerprint: int) -> float | None:
        """Current cash of a URL (None for a URL never given any)."""
        row = self.store.cash.get_cash([fingerprint]).get(fingerprint)
        return None if row is None else row[0] + (self.dividend - row[2])

    def mean_cash(self) -> float:
        """Average cash per known page: the scale the prioritiser compares to."""
        return self.put_in / self.rows if self.rows else self.initial_cash

    # -- writes -----------------------------------------------------------------
    def seed(self, fingerprint: int) -> tuple[float, float, bool]:
        """Give a seed its initial cash (new cash put into the system)."""
        self.put_in += self.initial_cash
        return self.credit_many([(fingerprint, self.initial_cash)])[0]

    def credit_many(self, amounts: list[tuple[int, float]]) -> list[tuple[float, float, bool]]:
        """Add cash to URLs, creating rows for new ones; return each one's ``(cash
        before, cash after, had a row)``."""
        rows = self.store.cash.get_cash(list({fp for fp, _ in amounts}))
        changed: dict[int, tuple[float, float, float, int]] = {}
        result = self._credit(amounts, rows, changed)
        self.store.cash.put_cash([(fp, *row) for fp, row in changed.items()])
        return result

    def _credit(self, amounts: list[tuple[int, float]], rows: dict[int, tuple[float, float, float, int]],
                changed: dict[int, tuple[float, float, float, int]]) -> list[tuple[float, float, bool]]:
        """:meth:`credit_many`'s arithmetic: the new rows into ``changed``, not written."""
        result = []
        dividend = self.dividend
        for fp, amount in amounts:
            row = changed.get(fp) or rows.get(fp)
            existed = row is not None
            if row is None:
                self.rows += 1
                before, history, visits = 0.0, 0.0, 0
            else:
                before, history, visits = row[0] + (dividend - row[2]), row[1], row[3]
            after = before + amount
            changed[fp] = (after, history, dividend, visits)
            result.append((before, after, existed))
        return result

    def take(self, fingerprint: int) -> tuple[float, float, int]:
        """Page fetched: its cash to its history; return ``(cash, history, visits)``."""
        rows = self.store.cash.get_cash([fingerprint])
        taken = self._take(fingerprint, rows)
        self.store.cash.put_cash([(fingerprint, *rows[fingerprint])])
        return taken

    def _take(self, fingerprint: int, rows: dict[int, tuple[float, float, float, int]]) -> tuple[float, float, int]:
        """:meth:`take`'s arithmetic: ``rows`` updated, nothing written."""
        row = rows.get(fingerprint)
        if row is None:
            self.rows += 1
            cash, history, visits = 0.0, 0.0, 1
        else:
            cash = row[0] + (self.dividend - row[2])
            history, visits = row[1] + cash, row[3] + 1
        rows[fingerprint] = (0.0, history, self.dividend, visits)
        return cash, history, visits

    def distribute(self, fingerprint: int, links: list[int], entries_of: list[int] | None = None,
                   tax: float | None = None) -> tuple[Paid, dict[int, Entry] | None]:
        """The page was fetched: its cash to its history, the tax (``tax``, else the
        ledger's) to Lambda, the rest split over ``links``; no URL rows (None: an
        embedded store reads them when needed; ``entries_of`` is for a shared ledger)."""
        rows = self.store.cash.get_cash(list(dict.fromkeys([fingerprint, *links])))
        cash, history, visits = self._take(fingerprint, rows)
        share = self.split(cash, len(links), tax)
        changed = {fingerprint: rows[fingerprint]}  # the page's row, then its outlinks': one write
        changes = self._credit([(fp, share) for fp in links], rows, changed) if share > 0 and links else []
        self.store.cash.put_cash([(fp, *row) for fp, row in changed.items()])
        return Paid(cash, history, visits, changes), None

    def split(self, cash: float, outlinks: int, tax: float | None = None) -> float:
        """Tax (``tax``, else the ledger's) to Lambda and the share of each
        outlink (none: all to Lambda)."""
        if outlinks <= 0:
            self.lambda_cash += cash
            return 0.0
        taxed = cash * (self.tax if tax is None else tax)
        self.lambda_cash += taxed
        return (cash - taxed) / outlinks

    def maybe_crawl_lambda(self, rival_cash: float) -> bool:
        """Crawl Lambda if it holds more than ``rival_cash`` (the page chosen
        next): its cash is spread equally over every known page."""
        if self.lambda_cash <= 0 or self.lambda_cash < rival_cash or not self.rows:
            return False
        self.dividend += self.lambda_cash / self.rows
        self.lambda_cash = 0.0
        self.lambda_crawls += 1
        return True
