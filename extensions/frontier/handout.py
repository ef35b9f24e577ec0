"""From a dequeued queue entry to the request to fetch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from extensions.frontier.codec import decode
from extensions.frontier.store import FLAG_MEMORY, Entry, FrontierStore, Status

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.spiders import Spider

    from extensions.aopic.ledger import AOPICLedger
    from extensions.frontier.noisy import OnceLog
    from extensions.frontier.revisits import RevisitSchedule


class HandOut:
    """The request for a dequeued entry, or None when it must not be fetched
    now (excluded while queued, a memory-only request gone, a row that cannot
    be decoded: both marked failed). Counts AOPIC's Lambda crawls; a re-visit
    carries its validators."""

    def __init__(self, store: FrontierStore, excluded: set[int], memory_only: dict[int, Request],
                 ledger: AOPICLedger | None, stats: Any, noisy: OnceLog) -> None:
        self.store, self.excluded, self.memory_only = store, excluded, memory_only
        self.ledger, self.stats, self.noisy = ledger, stats, noisy
        self.spider: Spider | None = None  # set when the frontier opens
        self.revisits: RevisitSchedule | None = None

    def request_of(self, entry: Entry, cash: float | None = None) -> Request | None:
        """``cash``: the entry's AOPIC cash if known already (else read)."""
        fp = entry.fingerprint
        if fp in self.excluded:
            self.excluded.discard(fp)
            return None
        if self.ledger is not None:
            if cash is None:
                cash = self.ledger.cash_of(fp) or 0.0
            if self.ledger.maybe_crawl_lambda(cash):
                self.stats.inc_value("aopic/lambda_crawls")
        if entry.flags & FLAG_MEMORY:
            request = self.memory_only.pop(fp, None)
            if request is None:
                self.noisy.note("lost", "Request for %s was memory-only and is gone", entry.url)
                self.store.urls.set_status([fp], Status.FAILED)
            return request
        try:
            request = decode(entry, self.spider)
        except Exception as err:  # noqa: BLE001 - one bad row must not end the crawl
            self.noisy.note("undecodable", "Cannot rebuild the request for %s: %s", entry.url, err)
            self.store.urls.set_status([fp], Status.FAILED)
            return None
        validators = self.revisits.handed_out(entry) if self.revisits is not None else None
        if validators:  # a re-visit: the conditional GET middleware sends them
            request.meta["revisit_validators"] = validators
        return request
