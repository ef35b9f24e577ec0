"""AOPIC in the frontier: credit a fetched page's outlinks, price URLs by cash.

The ledger (:mod:`extensions.aopic.ledger` or a backend's shared one) keeps
the cash; this part turns it into front-queue levels: a seed gets its
initial cash when first enqueued, a link is filed at the level the credit
its page gave it earns, a queued URL whose cash crosses a level moves up,
and a fetched page is revisited while it has had at most
``FRONTIER_AOPIC_REVISITS`` extra fetches. A shared ledger may pay through
the dispatch's worker thread (then :meth:`CreditAssignment.page_done`
returns a Deferred).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from math import floor, log2
from typing import TYPE_CHECKING, Any

from scrapy import Request
from twisted.internet.defer import Deferred

from extensions.aopic.ledger import AOPICLedger, tax_for_share
from extensions.frontier.fingerprint import canonical_fingerprint
from extensions.frontier.page import PageDone, PageVerdict
from extensions.frontier.prioritizer import CashPrioritizer, Prioritizer
from extensions.frontier.store import Entry, FrontierStore

if TYPE_CHECKING:
    from extensions.frontier.dispatch import HostDispatch


@dataclass(slots=True)
class Payment:
    """One fetched page's credit assignment."""

    fingerprint: int  # the page's
    links: list[int]  # its outlinks' fingerprints, in the order given
    history: float  # the page's history now (its importance)
    credit: dict[int, tuple[float, float]]  # per outlink: (cash after, the ledger's dividend then)
    rising: list[int]  # known outlinks whose level the credit raised
    entries: dict[int, Entry] | None  # the outlinks' URL rows, if read with the cash
    revisit: bool  # fetch the page again (OPIC)


class AOPICCredit:
    """Cash-based levels and the per-page credit step, over one ledger."""

    def __init__(self, ledger: AOPICLedger, prioritizer: Prioritizer, revisits: int = 0) -> None:
        self.ledger, self.prioritizer, self.revisits = ledger, prioritizer, revisits

    def pay(self, fp: int, outlinks: list[str], fingerprints: list[int] | None = None, share: float = 1.0,
            io: Any = None, then: Callable[[Payment], Any] | None = None,
            failed: Callable[[Exception], Any] | None = None) -> Payment | None:
        """The page ``fp`` was fetched: its cash to its history, the tax to Lambda,
        the rest split over ``outlinks`` (``fingerprints``: theirs, if computed
        already); ``share`` < 1 gives the outlinks only that share, the rest to
        Lambda. With ``io`` (the shared frontier's worker channel, a
        ``SharedLedger``) it is paid through it and ``then`` gets the payment on
        the reactor thread (``failed`` a failure); else it is returned."""
        links = [canonical_fingerprint(link) for link in outlinks] if fingerprints is None else fingerprints
        if io is None:
            paid, entries = self.ledger.distribute(fp, links, entries_of=links, tax=self._tax(share))
            return self._payment(fp, links, paid, entries)
        self.ledger.distribute_then(io, fp, links, links,  # type: ignore[attr-defined]
                                    lambda paid, entries: then(self._payment(fp, links, paid, entries)), failed,
                                    tax=self._tax(share))
        return None

    def _tax(self, share: float) -> float | None:
        """The page's own tax for ``share`` (None: the ledger's)."""
        return None if share >= 1.0 else tax_for_share(self.ledger.tax, share)

    def _payment(self, fp: int, links: list[int], paid: Any, entries: dict[int, Entry] | None) -> Payment:
        credit, rising = self._rising(links, paid.changes) if links and paid.changes else ({}, [])
        return Payment(fp, links, paid.history, credit, rising, entries, paid.visits <= self.revisits)

    def grant(self, fingerprints: list[int], amount: float) -> tuple[dict[int, tuple[float, float]], list[int]]:
        """Add ``amount`` to each URL's cash; return each one's credit and
        those whose level rose (as :meth:`pay` does for a page's links)."""
        changes = self.ledger.credit_many([(fp, amount) for fp in fingerprints])
        return self._rising(fingerprints, changes)

    def _rising(self, links: list[int], changes: list[tuple[float, float, bool]],
                ) -> tuple[dict[int, tuple[float, float]], list[int]]:
        dividend, mean = self.ledger.dividend, self.ledger.mean_cash()
        credit: dict[int, tuple[float, float]] = {}
        rising: list[int] = []
        if type(self.prioritizer) is CashPrioritizer:  # the default: its levels without a meta dict
            cash_level, scale = self.prioritizer.cash_level, mean or 1.0
            for link, (before, after, existed) in zip(links, changes):
                credit[link] = (after, dividend)
                # levels step at scale * 2**k: only a cash that crossed one can rise
                if existed and (before <= 0 or floor(log2(after / scale)) > floor(log2(before / scale))) \
                        and cash_level(after, scale) > cash_level(before, scale):
                    rising.append(link)
            return credit, rising
        level = self.prioritizer.level
        meta: dict[str, float] = {"aopic_mean": mean}  # one dict for every link of the page
        for link, (before, after, existed) in zip(links, changes):
            credit[link] = (after, dividend)
            if existed:
                meta["aopic_cash"] = after
                higher = level(0, 0, meta)
                meta["aopic_cash"] = before
                if higher > level(0, 0, meta):
                    rising.append(link)
        return credit, rising

    def level_of(self, entry: Entry, cash: float) -> int:
        """The level ``entry`` earns with ``cash``."""
        return self.prioritizer.level(entry.priority, entry.depth,
                                      {"aopic_cash": cash, "aopic_mean": self.ledger.mean_cash()})

    def cash_meta(self, request: Request, fp: int, credit: tuple[float, float] | None) -> Mapping[str, Any]:
        """What the prioritiser sees for a new request: its cash (a seed gets the
        initial cash; ``credit``: what its page gave it plus the dividends since),
        else its meta (a URL no page gave cash: by depth)."""
        ledger = self.ledger
        if request.meta.get("is_start_request") and not ledger.cash_of(fp):
            ledger.seed(fp)
        if credit is not None:
            cash: float | None = credit[0] + (ledger.dividend - credit[1])
        else:
            cash = ledger.cash_of(fp)
        if cash is None:
            return request.meta
        return {"aopic_cash": cash, "aopic_mean": ledger.mean_cash()}


class CreditAssignment:
    """AOPIC's credit steps applied to the queues: a judged page's payment,
    grants from outside, queued URLs moving up, OPIC revisits."""

    def __init__(self, aopic: AOPICCredit, store: FrontierStore, dispatch: HostDispatch, stats: Any,
                 memory_only: Mapping[int, Request]) -> None:
        self.aopic, self.store, self.dispatch, self.stats = aopic, store, dispatch, stats
        self.memory_only = memory_only  # rows of these are not requests: never moved
        self.shared = aopic.ledger.shared  # a SharedLedger: may pay through the dispatch's worker

    def page_done(self, page: PageVerdict, fingerprint: int, fingerprints: list[int] | None = None,
                  stored: list[str] | None = None) -> PageDone | Deferred[PageDone]:
        """The page's cash to its history and credit to its outlinks (none if not
        followed; ``page.credit_share`` of it); queued outlinks whose level rises
        move up. Returns the history and each outlink's credit by URL, with
        ``stored`` (a 304's outlinks) as its links; a Deferred when paid through
        the worker."""
        links = page.links if page.follow else []
        given = fingerprints if page.follow else None
        io = self.dispatch.io
        worker = io.worker if self.shared and io is not None else None
        if worker is None:
            payment = self.aopic.pay(fingerprint, links, given, page.credit_share)
            return replace(self._paid(payment, links), links=stored)
        # a failure of _paid fails the Deferred: the page's pipeline ends either way
        done: Deferred[Any] = Deferred()
        done.addCallback(lambda payment: replace(self._paid(payment, links), links=stored))
        self.aopic.pay(fingerprint, links, given, page.credit_share, worker, done.callback, done.errback)
        return done

    def _paid(self, payment: Payment, links: list[str]) -> PageDone:
        """The payment applied to the queues: promotions, the OPIC revisit."""
        if payment.rising:
            self._promote(payment.rising, payment.credit, payment.entries)
        if payment.revisit:
            self._revisit(payment.fingerprint)
        by_url = {link: credit for link, fp in zip(links, payment.links)
                  if (credit := payment.credit.get(fp)) is not None}
        return PageDone(payment.history, by_url)

    def grant(self, fingerprints: Sequence[int], amount: float) -> None:
        """Add ``amount`` of cash to each URL; queued ones whose level rises move up."""
        if not fingerprints:
            return
        credit, rising = self.aopic.grant(list(fingerprints), amount)
        if rising:
            self._promote(rising, credit, None)

    def _promote(self, fingerprints: list[int], credit: dict[int, tuple[float, float]],
                 known: dict[int, Entry] | None) -> None:
        """Queued URLs whose cash crossed a level move up (their rows: ``known``
        if read with the cash, else from the store)."""
        rows = self.store.urls.get_many(fingerprints) if known is None else \
            {fp: known[fp] for fp in fingerprints if fp in known}
        for fp, entry in rows.items():
            if fp in self.memory_only:
                continue
            if self.dispatch.promote(entry, self.aopic.level_of(entry, credit[fp][0])):
                self.stats.inc_value("aopic/promoted")

    def _revisit(self, fp: int) -> None:
        """OPIC revisits pages: back into the frontier at the level its cash
        (none, just after the fetch) earns; credits move it up as they come."""
        entry = self.store.urls.get_many([fp]).get(fp)
        if entry is None or fp in self.memory_only:
            return
        self.dispatch.revisit(entry, self.aopic.level_of(entry, self.aopic.ledger.cash_of(fp) or 0.0))
        self.stats.inc_value("aopic/revisits")
