"""AOPIC in the frontier: a page's cash credited to its outlinks, URLs filed
at the front-queue level their cash earns, queued URLs moved up as cash
arrives, fetched pages revisited up to ``FRONTIER_AOPIC_REVISITS`` times.
The cash lives in a ledger (:mod:`extensions.aopic.ledger` or a backend's)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from scrapy import Request
from twisted.internet.defer import Deferred

from extensions.aopic.ledger import AOPICLedger, Paid, tax_for_share
from extensions.frontier.fingerprint import canonical_fingerprint
from extensions.frontier.page import PageDone, PageVerdict
from extensions.frontier.prioritizer import Prioritizer
from extensions.frontier.store import Entry, FrontierStore

if TYPE_CHECKING:
    from extensions.frontier.dispatch import HostDispatch


class AOPICCredit:
    """Cash-based levels over one ledger, and its credit steps applied to the queues."""

    def __init__(self, ledger: AOPICLedger, prioritizer: Prioritizer, store: FrontierStore, dispatch: HostDispatch,
                 stats: Any, memory_only: Mapping[int, Request], revisits: int = 0) -> None:
        self.ledger, self.prioritizer, self.revisits = ledger, prioritizer, revisits
        self.store, self.dispatch, self.stats = store, dispatch, stats
        self.memory_only = memory_only  # rows of these are not requests: never moved

    def page_done(self, page: PageVerdict, fingerprint: int, fingerprints: list[int] | None = None,
                  stored: list[str] | None = None) -> PageDone | Deferred[PageDone]:
        """Pay the page's cash to Lambda and its outlinks, raising queued outlinks' levels;
        the history and each outlink's credit (maybe a Deferred). ``stored``: a 304's outlinks."""
        links = page.links if page.follow else []
        if fingerprints is None or not page.follow:
            fingerprints = [canonical_fingerprint(link) for link in links]
        share = page.credit_share
        tax = None if share >= 1.0 else tax_for_share(self.ledger.tax, share)
        io = self.dispatch.io
        worker = None if io is None else io.worker
        if worker is None:
            paid, entries = self.ledger.distribute(fingerprint, fingerprints, entries_of=fingerprints, tax=tax)
            return replace(self._paid(fingerprint, links, fingerprints, paid, entries), links=stored)
        # a failure of _paid fails the Deferred: the page's pipeline ends either way
        done: Deferred[Any] = Deferred()
        done.addCallback(lambda answer: replace(self._paid(fingerprint, links, fingerprints, *answer, selected=True),
                                                links=stored))
        mean, level = self.ledger.mean_cash(), self.prioritizer.level

        def rising(changes: list[tuple[float, float, bool]]) -> list[int]:  # the rows to read, on the worker
            return rising_links(fingerprints, changes, mean, level)
        self.ledger.distribute_then(worker, fingerprint, fingerprints, rising,  # type: ignore[attr-defined]
                                    lambda paid, entries: done.callback((paid, entries)), done.errback, tax=tax)
        return done

    def _paid(self, fp: int, links: list[str], fingerprints: list[int], paid: Paid,
              entries: dict[int, Entry] | None, selected: bool = False) -> PageDone:
        """The payment applied to the queues: promotions, the OPIC revisit."""
        credit, rising = self._rising(fingerprints, paid.changes) if fingerprints and paid.changes else ({}, [])
        if selected:
            rising = list(entries or ())
        if rising:
            self._promote(rising, credit, entries)
        if paid.visits <= self.revisits:
            self._revisit(fp)
        by_url = {link: given for link, link_fp in zip(links, fingerprints)
                  if (given := credit.get(link_fp)) is not None}
        return PageDone(paid.history, by_url)

    def _rising(self, links: list[int], changes: list[tuple[float, float, bool]],
                ) -> tuple[dict[int, tuple[float, float]], list[int]]:
        dividend = self.ledger.dividend
        credit = {link: (after, dividend) for link, (_, after, _) in zip(links, changes)}
        return credit, rising_links(links, changes, self.ledger.mean_cash(), self.prioritizer.level)

    def level_of(self, entry: Entry, cash: float) -> int:
        return self.prioritizer.level(entry.priority, entry.depth,
                                      {"aopic_cash": cash, "aopic_mean": self.ledger.mean_cash()})

    def cash_meta(self, request: Request, fp: int, credit: tuple[float, float] | None) -> Mapping[str, Any]:
        """What the prioritiser sees for a new request: its cash, else its meta."""
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

    def _promote(self, fingerprints: list[int], credit: dict[int, tuple[float, float]],
                 known: dict[int, Entry] | None) -> None:
        """Queued URLs whose cash crossed a level move up."""
        rows = self.store.urls.get_many(fingerprints) if known is None else \
            {fp: known[fp] for fp in fingerprints if fp in known}
        for fp, entry in rows.items():
            if fp in self.memory_only:
                continue
            if self.dispatch.promote(entry, self.level_of(entry, credit[fp][0])):
                self.stats.inc_value("aopic/promoted")

    def _revisit(self, fp: int) -> None:
        """OPIC revisits pages: back into the frontier at the level its cash earns."""
        entry = self.store.urls.get_many([fp]).get(fp)
        if entry is None or fp in self.memory_only:
            return
        self.dispatch.revisit(entry, self.level_of(entry, self.ledger.cash_of(fp) or 0.0))
        self.stats.inc_value("aopic/revisits")


def rising_links(links: list[int], changes: list[tuple[float, float, bool]], mean: float,
                 level: Callable[[int, int, Mapping[str, Any]], int]) -> list[int]:
    """The links (URLs with a row before their credit) whose cash crossed a level."""
    rising: list[int] = []
    meta: dict[str, float] = {"aopic_mean": mean}  # one dict for every link of the page
    for link, (before, after, existed) in zip(links, changes):
        if existed:
            meta["aopic_cash"] = after
            higher = level(0, 0, meta)
            meta["aopic_cash"] = before
            if higher > level(0, 0, meta):
                rising.append(link)
    return rising
