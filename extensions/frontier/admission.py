"""Admission: the URL-seen test with its ``dont_filter`` and host budget rules,
and the rows of URLs refused, excluded or deferred."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import mmh3
from scrapy import Request

from extensions.frontier.fingerprint import URL_BITS, url_fingerprint
from extensions.frontier.store import Entry, FrontierStore, Status
from extensions.frontier.urlseen import URLSeen
from extensions.urls.recent import TwoGenerationCache

if TYPE_CHECKING:
    from extensions.frontier.dispatch import HostDispatch

logger = logging.getLogger("extensions.frontier.scheduler")  # the frontier's one log name

URL_MASK = (1 << URL_BITS) - 1
#: hosts whose URL count the host budget keeps in memory (an LRU over the store)
HOST_COUNTS = 65536


class Admission:
    """The URL-seen test's rules and the rows it writes."""

    def __init__(self, store: FrontierStore, seen: URLSeen, stats: Any, wall_clock: Callable[[], float],
                 memory_only: dict[int, Request], host_budget: int = 0, record_refusals: bool = True,
                 dispatch: HostDispatch | None = None) -> None:
        self.store, self.seen, self.stats, self.wall_clock = store, seen, stats, wall_clock
        self.dispatch = dispatch  # its io's worker, if any, reads hosts' counts
        self.memory_only = memory_only  # requests kept in memory, by fingerprint (shared with the dispatch)
        self.host_budget = host_budget  # URLs accepted per host; 0: unlimited
        self.record_refusals = record_refusals  # refused URLs get a row (status refused)
        self.excluded: set[int] = set()  # excluded while queued: skip at dequeue
        self.seeds_this_run: set[int] = set()
        self.deferred_reasons: dict[str, str] = {}
        self.host_counts = TwoGenerationCache(HOST_COUNTS)  # host -> its URLs known, over the store's counts

    # -- before filing -------------------------------------------------------------
    def known(self, fp: int) -> bool:
        """The URL-seen test (counting the cache's hits and misses)."""
        hit = self.seen.cache.hit(fp)
        self.stats.inc_value("frontier/seen_cache_hit" if hit else "frontier/seen_cache_miss")
        return hit or self.seen.prefiltered(fp)

    def first_seed_copy(self, request: Request, fp: int) -> bool:
        """Whether a start request is new in this run (it is tested even with ``dont_filter``)."""
        if not request.meta.get("is_start_request") or "retry_times" in request.meta:
            return False
        return fp not in self.seeds_this_run

    def distinct_copy(self, fp: int) -> int:
        """The fingerprint a ``dont_filter`` request is filed under (a copy's if queued)."""
        copy, salt = fp, 0
        while self.store.urls.status_of(copy) == Status.QUEUED or copy in self.memory_only:
            salt += 1
            copy = (fp & ~URL_MASK) | (mmh3.hash64(f"{fp}:{salt}", signed=False)[0] & URL_MASK)
        if copy != fp:
            self.stats.inc_value("frontier/dont_filter_copies")
        return copy

    def over_budget(self, entry: Entry) -> bool:
        """Whether ``entry`` is over its host's budget (a new URL refused, counted)."""
        if not self.host_budget:
            return False
        count = self._host_count(entry)
        if count < self.host_budget:
            return False
        if self.store.urls.status_of(entry.fingerprint) is not None:  # known already: no budget spent
            self.stats.inc_value("frontier/duplicates")
            return True
        self.stats.inc_value("frontier/host_budget_refused")
        if self.record_refusals:
            self.record_refused(entry, "budget", self.wall_clock())
        return True

    def spend(self, entry: Entry) -> None:
        """``entry`` was filed as a new URL: one more of its host's budget spent."""
        if self.host_budget:
            self.host_counts.add(entry.host, self._host_count(entry) + 1)

    def _host_count(self, entry: Entry) -> int:
        """URLs known of ``entry``'s host (the LRU's, else the store's count), made most recent.
        With the dispatch's worker thread the store's count is read through it and added when
        it comes, this process's filings counted from 0 meanwhile (so over a host at its budget
        already, those of one round trip may pass)."""
        count = self.host_counts.get(entry.host)
        if count is None:
            io = self.dispatch.io if self.dispatch is not None else None
            worker = io.worker if io is not None else None
            if worker is None:
                count = self.store.urls.count_host(entry.fingerprint, entry.host)
            else:  # read after every filing sent before, before those to come (one FIFO)
                count = 0
                self.store.urls.count_host_then(  # type: ignore[attr-defined]
                    worker, entry.fingerprint, entry.host, partial(self._add_stored_count, entry.host))
            self.host_counts.add(entry.host, count)
        return count

    def _add_stored_count(self, host: str, stored: int) -> None:
        count = self.host_counts.get(host)
        if count is not None:  # else forgotten meanwhile: read again when next needed
            self.host_counts.add(host, count + stored)

    # -- URLs kept out -----------------------------------------------------------------
    def refuse(self, refusals: Sequence[tuple[str, str]]) -> None:
        """Each unknown ``(url, reason)`` gets a ``refused`` row (if refusals are recorded)."""
        if not self.record_refusals:
            return
        now = self.wall_clock()
        for url, reason in refusals:
            try:
                fp, host = url_fingerprint(url)
            except ValueError:
                continue  # not a URL the frontier could file: nothing to record
            if not self.seen.known(fp):
                self.record_refused(Entry(fp, url, host), reason, now)

    def record_refused(self, entry: Entry, reason: str, now: float, known: bool = False) -> None:
        """Write ``entry``'s row as refused, the reason in ``extra``."""
        row = entry._replace(extra=json.dumps({"refused": reason}))
        if known:
            self.store.urls.requeue(row, now)
        elif not self.seen.add(row, now):
            return
        self.store.urls.set_status([entry.fingerprint], Status.REFUSED, only_from=Status.QUEUED)
        self.stats.inc_value("frontier/refused")

    def mark_excluded(self, url: str, handed_out: bool = False) -> None:
        """``url`` must not be fetched; ``handed_out``: its row is in flight."""
        fp, host = url_fingerprint(url)
        status = Status.INFLIGHT if handed_out else self.store.urls.status_of(fp)
        if status is None:
            self.seen.add(Entry(fp, url, host), self.wall_clock())
        elif status == Status.QUEUED:
            self.excluded.add(fp)
        self.store.urls.set_status([fp], Status.EXCLUDED)
        self.seen.remember(fp)
        self.stats.inc_value("frontier/excluded")

    def defer(self, entries: Sequence[Entry], origin: str, reason: str) -> None:
        """Mark ``entries`` deferred (status and reason in the URL database)."""
        if origin not in self.deferred_reasons:
            self.deferred_reasons[origin] = reason
            self.store.hosts.defer_origin(origin, reason, self.wall_clock())
            self.stats.set_value("frontier/deferred_origins", len(self.deferred_reasons))
            self.stats.set_value("frontier/deferred_reasons", dict(self.deferred_reasons))
            logger.warning("Deferred %s for this run: %s", origin, reason)
        fingerprints = [entry.fingerprint for entry in entries]
        if fingerprints:
            self.store.urls.set_status(fingerprints, Status.DEFERRED)
            self.stats.inc_value("frontier/deferred", len(fingerprints))
