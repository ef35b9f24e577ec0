"""The Mercator URL frontier as Scrapy's scheduler.

``SCHEDULER = "extensions.frontier.scheduler.Frontier"``. The frontier is a
thin Scrapy scheduler over parts, each in its own module:

* URL-seen (:mod:`.urlseen`: cache, optional Bloom filter, the URL table's
  primary key) and the store (:mod:`extensions.store`), which holds the URL
  rows, queues and cash;
* the prioritiser (:mod:`.prioritizer`): a request's front-queue level;
* one host-dispatch strategy (:mod:`.dispatch`): Mercator's front queues,
  back queues and host heap in this process (:mod:`.localdispatch`), or
  host queues shared with other processes under Redis leases
  (:mod:`.shareddispatch`), chosen from ``FRONTIER_BACKEND`` in :mod:`.config`;
* politeness (:mod:`.politeness`), origin holds (:mod:`.holds`), the
  in-flight table (:mod:`.inflight`), the wake-up timer (:mod:`.wakeup`),
  AOPIC credit (:mod:`.credit`), resume (:mod:`.resume`), gauges (:mod:`.gauges`).

A request travels:

1. ``enqueue_request``: fingerprint (host-local, of the canonical URL); the
   URL-seen test (``dont_filter`` bypasses it); the prioritiser picks a
   level; the dispatch files it (URL row written, status queued).
2. ``next_request``: the dispatch hands out the best URL of a host whose
   politeness allows a fetch now (status inflight). If nothing is due, a
   single timer wakes the engine at the next due time.
3. Fetch end (``request_left_downloader``, or ``request_dropped``, or the
   request leaving the engine without reaching the downloader): the host's
   next fetch is allowed at end + gap. When the engine has finished with
   the request (its callbacks' output is scheduled), the row becomes done
   or failed.
4. The last item pipeline hands the judged page back (:meth:`Frontier.page_done`):
   AOPIC credit for its outlinks, its content-seen group.

Other components reach the frontier only through signals
(:mod:`extensions.signals`): robots.txt rules parsed (the Crawl-delay), a
request excluded by robots.txt, origins held and deferred, URLs refused.

Persistence: the URL table is authoritative; with ``FRONTIER_WRITE_AHEAD``
every change is committed before a request is handed out (else only every
``FRONTIER_CHECKPOINT_INTERVAL`` seconds); a clean close (Ctrl-C too)
spills the buffers and the same command resumes; after ``kill -9`` the
queues are rebuilt from the URL rows. The design is in
:mod:`extensions.frontier.resume`, the schema in :mod:`extensions.store.sqlite`.
"""

from __future__ import annotations

import json
import logging
import shutil
import time
from collections import OrderedDict
from collections.abc import Callable, Container, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mmh3
from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.codec import decode, encode
from extensions.frontier.credit import AOPICCredit, take_credit
from extensions.frontier.dispatch import FrontierParts, HostDispatch
from extensions.frontier.fingerprint import URL_BITS, url_fingerprint
from extensions.frontier.gauges import CRAWL_WIDE_STATS, DictStats, update_gauges
from extensions.frontier.holds import OriginHolds
from extensions.frontier.hostkey import HostKey
from extensions.frontier.inflight import InFlight, InFlightTable
from extensions.frontier.localdispatch import LocalDispatch
from extensions.frontier.page import PageDone, PageVerdict
from extensions.frontier.politeness import Politeness
from extensions.frontier.prioritizer import DepthPrioritizer, Prioritizer
from extensions.frontier.resume import load_bloom, save_bloom
from extensions.frontier.urlseen import BloomSeen, LRUCache, URLSeen
from extensions.frontier.wakeup import WakeUpTimer
from extensions.signals import (
    host_assigned,
    origin_deferred,
    origin_held,
    request_excluded,
    robots_rules_parsed,
    urls_refused,
)
from extensions.store.base import FLAG_MEMORY, Entry, FrontierStore, FrontierStoreError, Status

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.spiders import Spider

logger = logging.getLogger(__name__)

__all__ = ["CRAWL_WIDE_STATS", "DictStats", "Frontier", "InFlight"]

URL_MASK = (1 << URL_BITS) - 1


class Frontier(BaseScheduler):
    """Scrapy scheduler composing URL-seen, prioritiser and a host dispatch."""

    def __init__(
        self,
        store: FrontierStore,
        dispatch: HostDispatch | None = None,
        *,
        front_queues: int = 8,
        prioritizer: Prioritizer | None = None,
        politeness: Politeness | None = None,
        seen_cache_size: int = 65536,
        bloom: BloomSeen | None = None,
        bloom_path: Path | None = None,
        hostkey: HostKey | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        call_later: Callable[..., Any] | None = None,
        wake: Callable[[], None] | None = None,
        in_progress: Callable[[], Container[Request] | None] | None = None,
        stats: Any = None,
        looping_call: Callable[[Callable[[], None]], Any] | None = None,
        checkpoint_interval: float = 0.0,
        on_store_error: Callable[[Exception], None] | None = None,
        cleanup_dir: Path | None = None,
        ledger: AOPICLedger | None = None,
        host_budget: int = 0,
        revisits: int = 0,
        idle_close: float = 60.0,
        write_ahead: bool = False,
        record_refusals: bool = True,
        **local: Any,
    ) -> None:
        """``dispatch``: the host-dispatch strategy; by default a
        :class:`LocalDispatch` built from ``front_queues`` and ``local``
        (its ``back_queues``, ``queue_buffer``, ``selector``, ``refill_budget``)."""
        self.store = store
        self.dispatch: HostDispatch = dispatch if dispatch is not None else LocalDispatch(front_queues, **local)
        self.prioritizer = prioritizer or DepthPrioritizer(front_queues)
        self.politeness = politeness or Politeness()
        self.seen = URLSeen(store.urls, seen_cache_size, bloom)
        self.bloom, self.bloom_path = bloom, bloom_path
        self.hostkey = hostkey or HostKey()
        self.clock, self.wall_clock = clock, wall_clock
        self.stats = stats if stats is not None else DictStats()
        self.wakeup = WakeUpTimer(call_later, wake, self.stats)
        self.inflight = InFlightTable(self.politeness, in_progress)
        self.looping_call, self.checkpoint_interval = looping_call, checkpoint_interval
        self.on_store_error = on_store_error
        self.cleanup_dir = cleanup_dir
        self.write_ahead = write_ahead  # commit before each hand-out (see _write_ahead)
        self.host_budget = host_budget  # URLs accepted per host; 0: unlimited
        self.record_refusals = record_refusals  # refused URLs get a row (status refused)
        self._host_counts: OrderedDict[str, int] = OrderedDict()  # LRU over the store
        self.spider: Spider | None = None
        self.excluded: set[int] = set()  # excluded while queued: skip at dequeue
        self._known_hosts = LRUCache(4096)
        self._loop: Any = None
        self._checkpoints = 0
        self._logged: set[str] = set()
        self.on_host_assigned: Callable[..., Any] | None = None  # the host_assigned signal (DNS prefetch)
        # origins that cannot be crawled now (robots.txt unreachable, a
        # tripped circuit breaker): their URLs wait, the host's other
        # origins go on; see :mod:`extensions.frontier.holds`
        self.holds = OriginHolds()
        self._seeds_this_run: set[int] = set()
        self._deferred_reasons: dict[str, str] = {}
        self.parts = FrontierParts(
            store=store, politeness=self.politeness, holds=self.holds, inflight=self.inflight,
            stats=self.stats, clock=clock, wall_clock=wall_clock, prioritizer=self.prioritizer,
            seen=self.seen, hostkey=self.hostkey, ledger=ledger, idle_close=idle_close,
            request_of=self._request_of, defer=self._defer, record_refused=self._record_refused,
            count_once=self._count_once, host_assigned=self._host_assigned, arm_timer=self._arm_timer,
            on_store_error=on_store_error)
        self.dispatch.bind(self.parts)
        self.ledger = self.parts.ledger  # the shared dispatch shares the ledger too
        self.aopic = AOPICCredit(self.ledger, self.prioritizer, revisits) if self.ledger is not None else None
        self.memory_only, self.unfiled = self.parts.memory_only, self.parts.unfiled

    # -- construction from a crawler ----------------------------------------
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Frontier:
        from extensions.frontier.config import frontier_kwargs  # noqa: PLC0415 - config imports the parts

        frontier = cls(**frontier_kwargs(crawler))
        connect = crawler.signals.connect
        connect(frontier.request_left_downloader, signals.request_left_downloader)
        connect(frontier.request_dropped, signals.request_dropped)
        connect(frontier.response_received, signals.response_received)
        # a redirect or retry replaces the response before response_received
        connect(frontier.response_received, signals.response_downloaded)
        connect(frontier.robots_rules_parsed, robots_rules_parsed)
        connect(frontier.request_excluded, request_excluded)
        connect(frontier.origin_held, origin_held)
        connect(frontier.origin_deferred, origin_deferred)
        connect(frontier.urls_refused, urls_refused)
        frontier.on_host_assigned = partial(crawler.signals.send_catch_log, host_assigned)
        return frontier

    # -- Scrapy's scheduler interface ----------------------------------------
    def open(self, spider: Spider | None) -> None:
        """Open the store (raising FrontierStoreError naming the file),
        resume or rebuild, start checkpointing."""
        self.spider = spider
        self.store.open()
        self.dispatch.open()
        self.politeness.crawl_delays.update(self.store.hosts.crawl_delays())
        if self.ledger is not None:
            self.ledger.load()
        self.dispatch.resume()
        load_bloom(self.store, self.bloom, self.bloom_path)
        self._update_gauges()
        if len(self):
            logger.info("Resuming crawl (%d requests in the frontier, %s)", len(self), self.store.location)
        self.dispatch.start(self.looping_call)
        if self.looping_call is not None and self.checkpoint_interval > 0:
            self._loop = self.looping_call(self.checkpoint)
            self._loop.start(self.checkpoint_interval, now=False)

    def close(self, reason: str) -> None:
        """Pause cleanly: requeue what is unfinished, spill buffers, commit."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.wakeup.cancel()
        self._sweep()
        self.dispatch.close(self.inflight.clear())
        if self.ledger is not None:
            self.ledger.save()
        self._update_gauges()
        self.dispatch.leave(reason)
        self._save_bloom()
        self.store.close(clean=True)
        if self.cleanup_dir is not None:
            shutil.rmtree(self.cleanup_dir, ignore_errors=True)

    def __len__(self) -> int:
        return len(self.dispatch)

    def has_pending_requests(self) -> bool:
        """Work to hand out (see the dispatch: held origins, other processes)."""
        return self.dispatch.has_pending()

    def enqueue_request(self, request: Request) -> bool:
        """URL-seen test, prioritiser, dispatch; never raises on a request
        Scrapy accepts. ``dont_filter`` bypasses the URL-seen test (a retry,
        a redirect, identical requests: each is fetched), except for a
        start request's first copy in this run: an earlier run (or another
        process) may have filed that seed already. A URL the frontier cannot
        file (``data:``, ``file:``...) is passed through unfiled: handed out
        first, without politeness, in memory."""
        try:
            fp, host = url_fingerprint(request.url, request.method, request.body)
        except ValueError:
            return self._unfiled(request)
        bypass = request.dont_filter and not self._first_seed_copy(request, fp)
        if not bypass and self._known(fp):
            return self._duplicate()
        host = self.dispatch.host_of(request, host)
        depth = int(request.meta.get("depth", 0))
        credit = take_credit(request)
        # the URL's own cash, never a copy's (a seed's copy would get cash of its own)
        meta = request.meta if self.aopic is None else self.aopic.cash_meta(request, fp, credit)
        level = self.prioritizer.level(request.priority, depth, meta)
        if bypass:
            fp = self._distinct_copy(fp)
        entry = encode(request, fp, host, level, self.spider)
        if not bypass and self.host_budget and (verdict := self._over_budget(fp, host)):
            if verdict == "budget" and self.record_refusals:
                self._record_refused(entry, "budget", self.wall_clock())
            return False  # refused or a duplicate, counted
        if not self.dispatch.enqueue(entry, bypass):
            return self._duplicate()
        if request.meta.get("is_start_request"):
            self._seeds_this_run.add(fp)
        if entry.flags & FLAG_MEMORY:
            self.memory_only[fp] = request
            self._count_once("unserializable", "Request %s cannot be serialised; %s", request,
                             self.dispatch.memory_only_note)
        if not self._known_hosts.hit(host):
            self._known_hosts.add(host)
            self.store.hosts.add_hosts([host], self.wall_clock())
        self.stats.inc_value("frontier/enqueued")
        return True

    def next_request(self) -> Request | None:
        """The best URL of the hosts whose politeness allows a fetch now
        (an unfiled request first); if none is due, arm the wake-up timer."""
        if self.unfiled:
            self.stats.inc_value("frontier/dequeued")
            return self.unfiled.popleft()
        now = self.clock()
        self._sweep()  # before holds end: a request refused by a hold is parked, not failed
        request = self.dispatch.next_request(now)
        if request is None:
            self._arm_timer(now)
        else:
            self.stats.inc_value("frontier/dequeued")
        if self.write_ahead:
            self._write_ahead()
        return request

    def _unfiled(self, request: Request) -> bool:
        """A request whose URL has no host to be polite to (``data:``) or
        that the frontier cannot canonicalise: handed out as it is."""
        self.unfiled.append(request)
        self._count_once("unfiled", "Request %s cannot be filed by host; handed out unfiled", request)
        return True

    def _known(self, fp: int) -> bool:
        """The URL-seen test (counting the cache's hits and misses)."""
        hits = self.seen.cache_hits
        known = self.seen.known(fp)
        self.stats.inc_value("frontier/seen_cache_hit" if self.seen.cache_hits > hits
                             else "frontier/seen_cache_miss")
        return known

    def _first_seed_copy(self, request: Request, fp: int) -> bool:
        """A start request not yet seen in this run goes through the URL-seen
        test even with ``dont_filter``: an earlier run may have fetched it."""
        if not request.meta.get("is_start_request") or "retry_times" in request.meta:
            return False
        return fp not in self._seeds_this_run

    def _distinct_copy(self, fp: int) -> int:
        """The fingerprint under which a ``dont_filter`` request is filed:
        its own, unless that URL is queued already (identical requests at
        once); then a copy's (same host bits), so that each is fetched. A
        retry of a URL in flight re-queues its own row."""
        copy, salt = fp, 0
        while self.store.urls.status_of(copy) == Status.QUEUED or copy in self.memory_only:
            salt += 1
            copy = (fp & ~URL_MASK) | (mmh3.hash64(f"{fp}:{salt}", signed=False)[0] & URL_MASK)
        if copy != fp:
            self.stats.inc_value("frontier/dont_filter_copies")
        return copy

    def _over_budget(self, fp: int, host: str) -> str | None:
        """Per-host page budget (a trap defence): refuse a host's new URLs
        once it has ``host_budget`` known ones (``"budget"``; a known URL is
        a ``"duplicate"``, spending none). Counts live in a bounded LRU
        over the store's per-host range count."""
        if self.store.urls.status_of(fp) is not None:  # known already: no budget spent
            self._duplicate()
            return "duplicate"
        counts = self._host_counts
        count = counts.pop(host, None)
        if count is None:
            count = self.store.urls.count_host(fp, host)
        if count >= self.host_budget:
            counts[host] = count
            self.stats.inc_value("frontier/host_budget_refused")
            return "budget"
        counts[host] = count + 1
        if len(counts) > 65536:
            counts.popitem(last=False)
        return None

    def _request_of(self, entry: Entry, cash: float | None = None) -> Request | None:
        """The request to fetch for ``entry`` (``cash``: its AOPIC cash, if
        known already), or None if it must not be fetched now."""
        fp = entry.fingerprint
        if fp in self.excluded:
            self.excluded.discard(fp)
            return None
        if self.ledger is not None:
            if self.dispatch.stale_copy(fp):
                self.stats.inc_value("frontier/stale_copies")
                return None
            if cash is None:
                cash = self.ledger.cash_of(fp) or 0.0
            if self.ledger.maybe_crawl_lambda(cash):
                self.stats.inc_value("aopic/lambda_crawls")
        if entry.flags & FLAG_MEMORY:
            request = self.memory_only.pop(fp, None)
            if request is None:
                self._count_once("lost", "Request for %s was memory-only and is gone", entry.url)
                self.store.urls.set_status([fp], Status.FAILED)
            return request
        try:
            return decode(entry, self.spider)
        except Exception as err:  # noqa: BLE001 - one bad row must not end the crawl
            self._count_once("undecodable", "Cannot rebuild the request for %s: %s", entry.url, err)
            self.store.urls.set_status([fp], Status.FAILED)
            return None

    def _arm_timer(self, now: float) -> None:
        self.wakeup.arm(self.dispatch.next_due(now), now)

    def _host_assigned(self, host: str) -> None:
        if self.on_host_assigned is not None:
            self.on_host_assigned(host=host)

    # -- fetch end -------------------------------------------------------------
    def fetch_finished(self, request: Request, duration: float | None = None, ok: bool = True) -> None:
        """A fetch of a request we handed out ended (also for direct drivers
        such as tests and the benchmark)."""
        record = self.inflight.get(request)
        if record is not None:
            record.ok = record.ok or ok
        self._release(request, duration)

    def request_left_downloader(self, request: Request, spider: Spider | None = None) -> None:
        self._release(request, request.meta.get("download_latency"))

    def response_received(self, response: Any, request: Request, spider: Spider | None = None) -> None:
        record = self.inflight.get(request)
        if record is not None:
            record.ok = True

    def request_dropped(self, request: Request, spider: Spider | None = None) -> None:
        if request in self.inflight:
            self._release(request, None)
            self._finish(request)

    def _release(self, request: Request, duration: float | None) -> None:
        now = self.clock()
        record = self.inflight.get(request)
        if record is None:  # not ours (robots.txt): it counts for the host's gap
            host = self.hostkey.of_request(request)
            self.politeness.observed(host, now, duration or 0.0)
            if self.dispatch.scheduled(host):
                self.dispatch.reschedule(host)
            return
        if self.inflight.release(record, now, duration):
            self.dispatch.reschedule(record.host)
        if not self.inflight.engine_tracks():  # no engine to tell us when it is done
            self._finish(request)

    def _sweep(self) -> None:
        """Finish requests the engine no longer holds."""
        for request in self.inflight.gone():
            self._release(request, None)
            self._finish(request)

    def _finish(self, request: Request) -> None:
        record = self.inflight.pop(request)
        if record is not None:
            self.dispatch.finish(record)

    # -- the page's verdict (the last item pipeline) ---------------------------
    def page_done(self, page: PageVerdict) -> PageDone:
        """The pipelines judged a fetched page: AOPIC moves its cash to its
        history and credits its outlinks (none if not followed; queued ones
        whose level rises move up), and its content-seen group goes into the
        URL database. Returns the history and each outlink's credit, which
        the caller puts on the outlink's request (:func:`.page.link_request`)."""
        if page.content_group is not None:
            fp, _ = url_fingerprint(page.url)
            self.store.set_content_group(fp, page.content_group, page.duplicate)
        if self.aopic is None:
            return PageDone()
        links = page.links if page.follow else []
        payment = self.aopic.pay(page.url, links)
        if payment.rising:
            self._promote(payment.rising, payment.credit, payment.entries)
        if payment.revisit:
            self._revisit(payment.fingerprint)
        by_url = {link: credit for link, fp in zip(links, payment.links)
                  if (credit := payment.credit.get(fp)) is not None}
        return PageDone(payment.history, by_url)

    def credit(self, fingerprints: Sequence[int], amount: float) -> None:
        """Add ``amount`` of cash to each URL from outside a page's credit
        step (tools, tests); queued ones whose level rises move up."""
        if self.aopic is None or not fingerprints:
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
        self.dispatch.revisit(entry, self.aopic.level_of(entry, self.ledger.cash_of(fp) or 0.0))
        self.stats.inc_value("aopic/revisits")

    # -- signals from robots.txt and other components -----------------------------
    def robots_rules_parsed(self, origin: str, crawl_delay: float | None) -> float:
        """Signal handler: ``origin``'s robots.txt was fetched and parsed:
        its Crawl-delay (None: none) becomes its host's; return the seconds
        until the host may be fetched again (the page that waited for the
        robots.txt waits them out: the robots.txt fetch counts for the gap)."""
        host = self.hostkey.of_request(Request(origin + "/"))
        self.set_crawl_delay(host, crawl_delay)
        return self.politeness.wait(host, self.clock())

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        """The robots.txt Crawl-delay of a host (None to forget it)."""
        self.politeness.set_crawl_delay(host, seconds)
        self.store.hosts.set_crawl_delay(host, seconds if seconds and seconds > 0 else None)
        if self.dispatch.scheduled(host):
            self.dispatch.reschedule(host)

    def request_excluded(self, request: Request, reason: str) -> None:
        """Signal handler: a request handed out must not be fetched
        (robots.txt): record it excluded and free its host at once, without
        a politeness gap, since nothing was fetched."""
        self.mark_excluded(request.url)
        record = self.inflight.get(request)
        if record is not None:
            record.excluded = True
            if self.inflight.free_unfetched(record):
                self.dispatch.reschedule(record.host)

    def mark_excluded(self, url: str) -> None:
        """Record that ``url`` must not be fetched (robots.txt, a filter): a
        queued URL is skipped at dequeue, an unknown one is never enqueued."""
        fp, host = url_fingerprint(url)
        status = self.store.urls.status_of(fp)
        if status is None:
            self.seen.add(Entry(fp, url, host), self.wall_clock())
        elif status == Status.QUEUED:
            self.excluded.add(fp)
        self.store.urls.set_status([fp], Status.EXCLUDED)
        self.seen.remember(fp)
        self.stats.inc_value("frontier/excluded")

    def origin_held(self, origin: str, delay: float, reason: str, request: Request | None = None) -> None:
        """Signal handler: park ``origin``'s URLs for ``delay`` seconds;
        ``request``, refused for it, comes back to its queue whenever its
        refusal is seen (even after the hold ended), never as a failure."""
        record = self.inflight.get(request)
        if record is not None:
            record.held = True
        self.holds.hold(origin, self.clock() + max(0.0, delay), reason)
        self.stats.inc_value("frontier/origin_holds")
        logger.info("Holding %s for %.1fs: %s", origin, delay, reason)
        self.dispatch.origin_held(origin, delay, reason)

    def origin_deferred(self, origin: str, reason: str) -> None:
        """Signal handler: ``origin``'s URLs are deferred for this run."""
        self._defer(self.holds.defer(origin, reason), origin, reason)
        self.dispatch.origin_deferred(origin)

    def urls_refused(self, refusals: Sequence[tuple[str, str]], request: Request | None = None) -> None:
        """Signal handler: each ``(url, reason)`` will not be crawled. An
        unknown URL gets a row with status ``refused`` (the reason in its
        ``extra``), so that the URL database says why it was never fetched;
        ``request``, if one we handed out, ends ``refused`` instead of failed."""
        record = self.inflight.get(request)
        if record is not None:
            record.refused = refusals[0][1] if refusals else "refused"
            return
        if not self.record_refusals:
            return
        now = self.wall_clock()
        for url, reason in refusals:
            try:
                fp, host = url_fingerprint(url)
            except ValueError:
                continue  # not a URL the frontier could file: nothing to record
            if not self.seen.known(fp):
                self._record_refused(Entry(fp, url, host), reason, now)

    def _record_refused(self, entry: Entry, reason: str, now: float, known: bool = False) -> None:
        """Write ``entry``'s row as refused, the reason in ``extra``: a new
        row (nothing if the URL turns out known), or, ``known``, its row
        rewritten (a request handed out, then refused)."""
        row = entry._replace(extra=json.dumps({"refused": reason}))
        if known:
            self.store.urls.requeue(row, now)
        elif not self.seen.add(row, now):
            return
        self.store.urls.set_status([entry.fingerprint], Status.REFUSED, only_from=Status.QUEUED)
        self.stats.inc_value("frontier/refused")

    def _defer(self, entries: Sequence[Entry], origin: str, reason: str) -> None:
        """Mark ``entries`` deferred (status and reason in the URL database)."""
        if origin not in self._deferred_reasons:
            self._deferred_reasons[origin] = reason
            self.store.hosts.defer_origin(origin, reason, self.wall_clock())
            self.stats.set_value("frontier/deferred_origins", len(self._deferred_reasons))
            self.stats.set_value("frontier/deferred_reasons", dict(self._deferred_reasons))
            logger.warning("Deferred %s for this run: %s", origin, reason)
        fingerprints = [entry.fingerprint for entry in entries]
        if fingerprints:
            self.store.urls.set_status(fingerprints, Status.DEFERRED)
            self.stats.inc_value("frontier/deferred", len(fingerprints))

    # -- checkpoints ---------------------------------------------------------------
    def checkpoint(self) -> None:
        """Commit everything so far (and save the Bloom filter)."""
        try:
            if self.ledger is not None:
                self.ledger.save()
            self._sweep()
            self.politeness.prune(self.clock(), keep=self.dispatch.hosts_in_use())
            self._update_gauges()
            self._save_bloom()
            self.stats.inc_value("frontier/checkpoints")
        except (FrontierStoreError, OSError) as err:
            logger.error("Frontier checkpoint failed: %s", err)
            if self.on_store_error is None:
                raise
            self.on_store_error(err)
        self.dispatch.checkpoint()

    def _write_ahead(self) -> None:
        """Commit what changed before the engine gets a request: the pages
        just finished with the outlinks their callbacks enqueued (one
        transaction, so done never comes without its links), AOPIC's cash
        with its Lambda, and the request handed out now as in flight. After
        a kill, only the in-flight rows are fetched again."""
        try:
            self.store.commit(self.ledger.save if self.ledger is not None else None)
        except FrontierStoreError as err:
            logger.error("Frontier commit failed: %s", err)
            if self.on_store_error is None:
                raise
            self.on_store_error(err)

    def _save_bloom(self) -> None:
        self._checkpoints += 1
        save_bloom(self.store, self.bloom, self.bloom_path, f"{self._checkpoints}-{self.wall_clock():.6f}")

    # -- stats and introspection ---------------------------------------------
    def _duplicate(self) -> bool:
        self.stats.inc_value("frontier/duplicates")
        return False

    def _count_once(self, key: str, message: str, *args: Any) -> None:
        self.stats.inc_value(f"frontier/{key}")
        if key not in self._logged:
            self._logged.add(key)
            logger.warning(message + " (further cases only counted in frontier/%s)", *args, key)

    def _update_gauges(self) -> None:
        update_gauges(self.stats, self.store, back_queues=len(self.dispatch.hosts_in_use()),
                      queued=len(self), inflight=len(self.inflight), bloom=self.bloom, ledger=self.ledger)

    def entries_in_memory(self) -> int:
        """Request entries the frontier holds in memory (buffers + in flight)."""
        return self.dispatch.in_memory() + len(self.inflight) + len(self.memory_only)

    def fingerprints_in_memory(self) -> int:
        """Fingerprints held in memory (the URL-seen cache and skip set)."""
        return len(self.seen.cache) + len(self.excluded)
