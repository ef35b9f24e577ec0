"""The Mercator URL frontier as Scrapy's scheduler.

``SCHEDULER = "extensions.frontier.scheduler.Frontier"``. A request travels:

1. ``enqueue_request``: fingerprint (host-local, of the canonical URL); the
   URL-seen test (cache, optional Bloom filter, the URL table's primary key;
   ``dont_filter`` bypasses it); the prioritiser picks a level; the URL row is
   written (status queued) and the entry appended to that front queue.
2. ``next_request``: free back queues are refilled from the front queues
   (biased selector, Mercator's rule); the host heap yields the earliest host
   that is due; its back queue's head is handed to the engine (status
   inflight). If nothing is due, a single timer wakes the engine at the next
   due time (Scrapy only polls on events and a 5 s heartbeat).
3. Fetch end (``request_left_downloader``, or ``request_dropped``, or the
   request leaving the engine without reaching the downloader): the host's
   next fetch is allowed at end + gap (:mod:`.politeness`). When the engine
   has finished with the request (its callbacks' output is scheduled), the
   row becomes done or failed.

Persistence: the URL table is authoritative; with ``FRONTIER_WRITE_AHEAD``
every change is committed before a request is handed out (else only every
``FRONTIER_CHECKPOINT_INTERVAL`` seconds); a clean close (Ctrl-C too)
spills the buffers and the same command resumes; after ``kill -9`` the
queues are rebuilt from the URL rows. The design is in
:mod:`extensions.frontier.resume`, the schema in :mod:`extensions.store.sqlite`.
"""

from __future__ import annotations

import heapq
import json
import logging
import shutil
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Container, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mmh3
from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler

from extensions.frontier.back import BackQueues
from extensions.frontier.codec import decode, encode
from extensions.frontier.fingerprint import URL_BITS, canonical_fingerprint, url_fingerprint
from extensions.frontier.holds import OriginHolds, origin_of
from extensions.frontier.front import BiasedSelector, FrontQueues
from extensions.frontier.hostheap import HostHeap
from extensions.frontier.hostkey import HostKey
from extensions.frontier.politeness import INFINITY, Politeness
from extensions.frontier.prioritizer import DepthPrioritizer, Prioritizer
from extensions.frontier.resume import load_bloom, rebuild_queues, record_shape, save_bloom, shape_changed
from extensions.frontier.urlseen import BloomSeen, LRUCache, URLSeen
from extensions.store.base import FLAG_MEMORY, Entry, FrontierStore, FrontierStoreError, Status
from extensions.signals import host_assigned, origin_deferred, origin_held, urls_refused
from extensions.aopic.ledger import AOPICLedger

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.spiders import Spider

logger = logging.getLogger(__name__)

#: Stats that measure the whole crawl, not this process: several processes
#: sharing a frontier each report the same value, so they are not summed.
CRAWL_WIDE_STATS = frozenset({"frontier/redis_memory_bytes", "frontier/redis_known_urls",
                              "frontier/redis_bytes_per_url"})



@dataclass(slots=True)
class InFlight:
    """A request handed to the engine and not yet finished."""

    entry: Entry
    host: str
    started: float
    released: bool = False
    ok: bool = False
    excluded: bool = False  # refused before the fetch (robots.txt)
    held: bool = False  # refused because its origin is held (origin_held named it)
    refused: str | None = None  # refused for good (urls_refused named it): why


class DictStats:
    """Stats for a frontier driven without a crawler."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def inc_value(self, key: str, count: int = 1, start: int = 0) -> None:
        self.values[key] = self.values.get(key, start) + count

    def set_value(self, key: str, value: Any) -> None:
        self.values[key] = value

    def get_value(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)


URL_MASK = (1 << URL_BITS) - 1

#: subtracted from a rate-limited host's order: ahead of every level
RATE_LIMITED_FIRST = 1 << 20


def ready_order(level: int, rate_limited: bool) -> float:
    """The order of a due host among those ready at once (lowest first).

    By the level of its head URL, so that with many hosts and no delay the
    more important URLs go first (AOPIC order across hosts) -- except for
    hosts whose politeness gap is longer than the common delay: they are
    served as soon as they are due. Such a host can take only one fetch
    per gap, so it cannot crowd out the others; left to compete by level,
    its low-cash URLs waited for seconds at a time and, since a host with
    a Crawl-delay cannot catch up later, its backlog was the crawl's last
    several seconds (bench/distributed.py: the Crawl-delay hosts of the
    test web ended 3 s after all others). This holds for a trap too: one
    that declares a Crawl-delay of d gets at most 1/d fetches a second
    (and ``FRONTIER_HOST_BUDGET`` caps its total), not the crawl's slots;
    keeping the bottom level out of this brought the tail back, since
    the Crawl-delay hosts' deep pages sit there too."""
    return -level - (RATE_LIMITED_FIRST if rate_limited else 0)


class Frontier(BaseScheduler):
    """Scrapy scheduler: front queues, back queues, host heap, URL-seen."""

    def __init__(
        self,
        store: FrontierStore,
        *,
        front_queues: int = 8,
        back_queues: int = 48,
        queue_buffer: int = 256,
        prioritizer: Prioritizer | None = None,
        selector: BiasedSelector | None = None,
        politeness: Politeness | None = None,
        seen_cache_size: int = 65536,
        bloom: BloomSeen | None = None,
        bloom_path: Path | None = None,
        hostkey: HostKey | None = None,
        refill_budget: int = 1024,
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
    ) -> None:
        self.store = store
        self.front = FrontQueues(store, front_queues, queue_buffer, selector)
        self.back = BackQueues(store, back_queues, queue_buffer)
        self.heap = HostHeap()
        self.prioritizer = prioritizer or DepthPrioritizer(front_queues)
        self.politeness = politeness or Politeness()
        self.seen = URLSeen(store.urls, seen_cache_size, bloom)
        self.bloom, self.bloom_path = bloom, bloom_path
        self.hostkey = hostkey or HostKey()
        self.refill_budget = refill_budget
        self.clock, self.wall_clock = clock, wall_clock
        self.call_later, self.wake = call_later, wake
        self.in_progress = in_progress or (lambda: None)
        self.stats = stats if stats is not None else DictStats()
        self.looping_call, self.checkpoint_interval = looping_call, checkpoint_interval
        self.on_store_error = on_store_error
        self.cleanup_dir = cleanup_dir
        self.ledger = ledger
        # cash of the URLs the last page credited, with the dividend then, so
        # its links' enqueues and promotions read no cash row again
        self._credited: dict[int, tuple[float, float]] = {}
        # a networked store reads a page's links' cash and URL rows in one round trip
        self._read_cash_and_entries = getattr(store, "get_cash_and_entries", None)
        self.revisits = revisits  # AOPIC: fetches of a page beyond the first
        self.write_ahead = write_ahead  # commit before each hand-out (see _write_ahead)
        self.host_budget = host_budget  # URLs accepted per host; 0: unlimited
        self.record_refusals = record_refusals  # refused URLs get a row (status refused)
        self._host_counts: OrderedDict[str, int] = OrderedDict()  # LRU over the store
        self.spider: Spider | None = None
        self.inflight: dict[Request, InFlight] = {}
        self.memory_only: dict[int, Request] = {}
        self.excluded: set[int] = set()  # excluded while queued: skip at dequeue
        self._known_hosts = LRUCache(4096)
        # hosts whose time has come, best head URL first (see next_request)
        self._ready: list[tuple[int, int, str]] = []
        self._ready_seq = 0
        self._timer: Any = None
        self._timer_due = INFINITY
        self._loop: Any = None
        self._checkpoints = 0
        self._logged: set[str] = set()
        self.on_host_assigned: Callable[..., Any] | None = None  # DNS prefetch hook
        # origins that cannot be crawled now (robots.txt unreachable, a
        # tripped circuit breaker): their URLs wait here, the host's other
        # origins go on; see :mod:`extensions.frontier.holds`
        self.holds = OriginHolds()
        self.idle_close = idle_close  # seconds of nothing but held work before deferring it
        self._idle_since: float | None = None
        self._probes: set[int] = set()  # one released URL per ended hold
        self.unfiled: deque[Request] = deque()  # requests without a host (data: URLs)
        self._seeds_this_run: set[int] = set()
        self._deferred_reasons: dict[str, str] = {}

    # -- construction from a crawler ----------------------------------------
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Frontier:
        from extensions.frontier.config import frontier_kwargs  # noqa: PLC0415

        from extensions.frontier.config import frontier_class  # noqa: PLC0415

        frontier = frontier_class(crawler, cls)(**frontier_kwargs(crawler))
        crawler.signals.connect(frontier.request_left_downloader, signals.request_left_downloader)
        crawler.signals.connect(frontier.request_dropped, signals.request_dropped)
        crawler.signals.connect(frontier.response_received, signals.response_received)
        # a redirect or retry replaces the response before response_received
        crawler.signals.connect(frontier.response_received, signals.response_downloaded)
        crawler.signals.connect(frontier.robots_parsed, signals.robots_parsed)
        crawler.signals.connect(frontier.origin_held, origin_held)
        crawler.signals.connect(frontier.origin_deferred, origin_deferred)
        crawler.signals.connect(frontier.urls_refused, urls_refused)
        frontier.on_host_assigned = partial(crawler.signals.send_catch_log, host_assigned)
        return frontier

    # -- Scrapy's scheduler interface ----------------------------------------
    def open(self, spider: Spider | None) -> None:
        """Open the store (raising FrontierStoreError naming the file),
        resume or rebuild, start checkpointing."""
        self.spider = spider
        self.store.open()
        for queue in self.front.queues + self.back.queues:
            queue.drop_buffers()  # empty before open; this syncs the counts
        if shape_changed(self.store, self.front, self.back):
            logger.info("Queue counts changed; rebuilding the frontier queues")
            self.store.clean = False
        self.politeness.crawl_delays.update(self.store.hosts.crawl_delays())
        if self.ledger is not None:
            self.ledger.load()
        if self.store.clean:
            self._restore_clean()
        else:
            self._rebuild()
        self._retry_deferred()
        load_bloom(self.store, self.bloom, self.bloom_path)
        self._update_gauges()
        if len(self):
            logger.info("Resuming crawl (%d requests in the frontier, %s)", len(self), self.store.location)
        if self.looping_call is not None and self.checkpoint_interval > 0:
            self._loop = self.looping_call(self.checkpoint)
            self._loop.start(self.checkpoint_interval, now=False)

    def close(self, reason: str) -> None:
        """Pause cleanly: requeue what is unfinished, spill buffers, commit."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._cancel_timer()
        self._sweep()
        for record in self.inflight.values():
            self.store.urls.set_status([record.entry.fingerprint], Status.QUEUED, only_from=Status.INFLIGHT)
            self.store.queues.push_front(f"front/{self.front.level_of(record.entry)}", [record.entry.fingerprint])
        self.inflight.clear()
        for hold in self.holds.held.values():  # parked URLs are queued rows
            for entry in hold.parked.values():
                self.front.push(entry)
        for queue in self.front.queues:
            queue.spill()
        self.back.spill()
        record_shape(self.store, self.front, self.back)
        if self.ledger is not None:
            self.ledger.save()
        self._update_gauges()
        self._save_bloom()
        self.store.close(clean=True)
        if self.cleanup_dir is not None:
            shutil.rmtree(self.cleanup_dir, ignore_errors=True)
        logger.info("Frontier closed (%s): %d requests left", reason, self.stats.get_value("frontier/queued", 0))

    def __len__(self) -> int:
        return len(self.front) + len(self.back)

    def has_pending_requests(self) -> bool:
        """Work to hand out. URLs parked by held origins count only until
        the crawl has had nothing else to do for ``idle_close`` seconds;
        then they are deferred, so a finite crawl always ends."""
        if not self.holds.held:
            return len(self) > 0 or bool(self.unfiled)
        now = self.clock()
        if self._busy():
            self._idle_since = None
            return True
        if self._idle_since is None:
            self._idle_since = now
        if now - self._idle_since < self.idle_close:
            return True
        for origin, (reason, entries) in self.holds.defer_all_held("held when nothing else was left").items():
            self._defer(entries, origin, reason)
        self._probes.clear()
        return len(self) > 0 or bool(self.unfiled)

    def _busy(self) -> bool:
        """Work other than the probes of held origins: queued, unfiled or in flight."""
        if self.unfiled:
            return True
        inflight = {record.entry.fingerprint for record in self.inflight.values()}
        return len(self) > len(self._probes - inflight) or bool(inflight - self._probes)

    def enqueue_request(self, request: Request) -> bool:
        """URL-seen test, prioritiser, front queue; never raises on a
        request Scrapy accepts. ``dont_filter`` bypasses the URL-seen test
        (a retry, a redirect, identical requests: each is fetched), except
        for a start request already known from an earlier run of the same
        ``JOBDIR``: a resumed crawl does not fetch its seeds again. A URL
        the frontier cannot file (``data:``, ``file:``...) is passed
        through unfiled: handed out first, without politeness, in memory."""
        try:
            fp, host = url_fingerprint(request.url, request.method, request.body)
        except ValueError:
            return self._unfiled(request)
        bypass = request.dont_filter and not self._first_seed_copy(request, fp)
        if not bypass:
            hits = self.seen.cache_hits
            known = self.seen.known(fp)
            cached = self.seen.cache_hits > hits
            self.stats.inc_value("frontier/seen_cache_hit" if cached else "frontier/seen_cache_miss")
            if known:
                return self._duplicate()
        host = self.hostkey.host_of(request) or host
        depth = int(request.meta.get("depth", 0))
        # the URL's own cash, never a copy's (a seed's copy would get cash of its own)
        level = self.prioritizer.level(request.priority, depth, self._cash_meta(request, fp))
        if bypass:
            fp = self._distinct_copy(fp)
        entry = encode(request, fp, host, level, self.spider)
        now = self.wall_clock()
        if bypass:
            self.store.urls.requeue(entry, now)
            self.seen.remember(fp)
        elif self.host_budget and (verdict := self._over_budget(fp, host)):
            if verdict == "budget" and self.record_refusals:
                self._record_refused(entry, "budget", now)
            return False  # refused or a duplicate, counted
        elif not self.seen.add(entry, now):
            return self._duplicate()
        if request.meta.get("is_start_request"):
            self._seeds_this_run.add(fp)
        if entry.flags & FLAG_MEMORY:
            self.memory_only[fp] = request
            self._count_once("unserializable", "Request %s cannot be serialised; kept in memory only", request)
        if not self._known_hosts.hit(host):
            self._known_hosts.add(host)
            self.store.hosts.add_hosts([host], now)
        self.front.push(entry)
        self.stats.inc_value("frontier/enqueued")
        return True

    def _unfiled(self, request: Request) -> bool:
        """A request whose URL has no host to be polite to (``data:``) or
        that the frontier cannot canonicalise: handed out as it is."""
        self.unfiled.append(request)
        self._count_once("unfiled", "Request %s cannot be filed by host; handed out unfiled", request)
        return True

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

    def _cash_meta(self, request: Request, fp: int) -> Any:
        """What the prioritiser sees: the request's meta, plus AOPIC's cash."""
        if self.ledger is None:
            return request.meta
        if request.meta.get("is_start_request") and not self.ledger.cash_of(fp):
            self.ledger.seed(fp)
        cash = self._cash_now(fp)
        if cash is None:  # not given cash by a page (a redirect target): by depth
            return request.meta
        return {"aopic_cash": cash, "aopic_mean": self.ledger.mean_cash()}

    def _cash_now(self, fp: int) -> float | None:
        """Current cash of a URL: from the last credit when it was one of
        that page's links (the dividend since then added), else its row."""
        credited = self._credited.get(fp)
        if credited is None:
            return self.ledger.cash_of(fp)
        cash, dividend = credited
        return cash + (self.ledger.dividend - dividend)

    def next_request(self) -> Request | None:
        """The best URL of the hosts whose politeness allows a fetch now.

        The heap orders hosts by the time they may fetch again (Mercator);
        the hosts that are due wait in a second heap ordered by the level of
        the URL at the head of their back queue, so among hosts ready at the
        same moment the one with the more important URL goes first (with
        many hosts and no delay, nearly all are ready: without this the
        order would be host round-robin, whatever the priorities)."""
        if self.unfiled:
            self.stats.inc_value("frontier/dequeued")
            return self.unfiled.popleft()
        now = self.clock()
        self._sweep()  # before holds end: a request refused by a hold is parked, not failed
        if self.holds.held:
            self._release_holds(now)
        self._refill()
        request = self._dispatch_ready(now)
        if request is None:
            self._arm_timer(now)
        if self.write_ahead:
            self._write_ahead()
        return request

    def _dispatch_ready(self, now: float) -> Request | None:
        """Move the due hosts from the time heap to the ready heap, then
        dispatch from the best ready host that still may fetch."""
        ready = self._ready
        while (host := self.heap.pop_due(now)) is not None:
            if self._dispatches(host):
                self._ready_seq += 1
                heapq.heappush(ready, (self._ready_order(host), self._ready_seq, host))
        while ready:
            host = heapq.heappop(ready)[2]
            if host in self.heap or not self._dispatches(host):  # rescheduled meanwhile (a Crawl-delay)
                continue
            if self.politeness.ready_at(host) > now:
                self._reschedule(host)
                continue
            request = self._dispatch(host, now)
            if request is not None:
                return request
        return None

    def _dispatches(self, host: str) -> bool:
        """Whether this frontier dispatches ``host`` (always, in one process)."""
        return True

    def _ready_order(self, host: str) -> float:
        """A due host's place among those ready at once (lowest first): the
        level of its back queue's head URL, highest first; but a host that
        is rate-limited by its own politeness (a Crawl-delay) goes before
        all others (see :func:`ready_order`)."""
        return ready_order(self.back.head_level(host), self.politeness.rate_limited(host))

    # -- dispatch ------------------------------------------------------------
    def _dispatch(self, host: str, now: float) -> Request | None:
        """Take the head of ``host``'s back queue; None if it was unusable."""
        if host not in self.back.queue_of:
            return None
        entry = self.back.pop(host)
        while entry is not None and self.holds and self._kept_back(entry):
            entry = self.back.pop(host)  # a held origin's URL: parked; the host's next
        request = None if entry is None else self._request_of(entry)
        if request is not None:  # before a refill can give the host a queue again
            self.politeness.started(host, now)
        if entry is None or not self.back.length(host):
            self.back.release(host)
            self._refill()  # Mercator: an emptied back queue refills at once
        else:
            self._reschedule(host)
        if entry is None or request is None:
            return None
        self.inflight[request] = InFlight(entry, host, now)
        self.store.urls.set_status([entry.fingerprint], Status.INFLIGHT)
        self.stats.inc_value("frontier/dequeued")
        return request

    def _request_of(self, entry: Entry, cash: float | None = None) -> Request | None:
        """The request to fetch for ``entry`` (``cash``: its AOPIC cash, if
        known already), or None if it must not be fetched now."""
        fp = entry.fingerprint
        if fp in self.excluded:
            self.excluded.discard(fp)
            return None
        if self.ledger is not None:
            if self._stale_copy(fp):
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

    def _stale_copy(self, fp: int) -> bool:
        """AOPIC promotions leave a stale copy in a lower queue: only the
        first copy of a still-queued URL is fetched."""
        return self.store.urls.status_of(fp) != Status.QUEUED

    def _reschedule(self, host: str) -> None:
        """Put ``host`` on the heap if it has a back queue and may fetch."""
        if host in self.back.queue_of:
            ready = self.politeness.ready_at(host)
            if ready < INFINITY:
                self.heap.schedule(host, ready)
            else:
                self.heap.remove(host)

    def _refill(self) -> None:
        if not self.back.free or not len(self.front):
            return
        assigned, _ = self.back.refill(self.front, self.refill_budget, self._key_of)
        for host in assigned:
            self._reschedule(host)
            if self.on_host_assigned is not None:
                self.on_host_assigned(host=host)
        self.stats.set_value("frontier/back_queues", self.back.in_use())

    def _key_of(self, entry: Entry) -> str:
        return self.hostkey.key(entry.host)

    # -- the wake-up timer ---------------------------------------------------
    def _arm_timer(self, now: float) -> None:
        """One pending timer, at the earliest due time (now when a refill
        ran out of budget); a later request for an earlier time replaces it."""
        due = self.heap.next_time()
        if self.back.free and len(self.front):
            due = now
        release = self.holds.next_release()
        if release is not None:
            due = release if due is None else min(due, release)
        if due is None or self.call_later is None or self.wake is None:
            return
        if self._timer is not None and self._timer_due <= due:
            return
        self._cancel_timer()
        self._timer_due = due
        self._timer = self.call_later(max(0.0, due - now), self._on_timer)
        self.stats.inc_value("frontier/wakeups_scheduled")

    def _on_timer(self) -> None:
        self._timer, self._timer_due = None, INFINITY
        if self.wake is not None:
            self.wake()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            if getattr(self._timer, "active", lambda: True)():
                self._timer.cancel()
            self._timer, self._timer_due = None, INFINITY

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
        if record is None:
            host = self.hostkey.of_request(request)
            self.politeness.observed(host, now, duration or 0.0)
            if host in self.heap:
                self._reschedule(host)
            return
        if not record.released:
            record.released = True
            taken = now - record.started if duration is None else float(duration)
            self.politeness.finished(record.host, now, taken)
            self._reschedule(record.host)
        if self.in_progress() is None:  # no engine to tell us when it is done
            self._finish(request)

    def _sweep(self) -> None:
        """Finish requests the engine no longer holds (including those a
        downloader middleware refused before they reached the downloader)."""
        in_progress = self.in_progress()
        if in_progress is None or not self.inflight:
            return
        for request in [r for r in self.inflight if r not in in_progress]:
            self._release(request, None)
            self._finish(request)

    def _finish(self, request: Request) -> None:
        record = self.inflight.pop(request, None)
        if record is None or record.excluded:
            return
        entry = record.entry
        if record.refused is not None:
            self._record_refused(entry, record.refused, self.wall_clock(), known=True)
            return
        if not record.ok and (self.holds or record.held) and self._kept_back(entry, True, record.held):
            return
        if entry.fingerprint in self._probes:
            self._probe_ended(entry)
        status = Status.DONE if record.ok else Status.FAILED
        self.store.urls.set_status(
            [entry.fingerprint], status, self.wall_clock(), only_from=Status.INFLIGHT
        )
        self.stats.inc_value(f"frontier/{status.name.lower()}")

    # -- hooks for robots.txt and other components ---------------------------
    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        """The robots.txt Crawl-delay of a host (None to forget it)."""
        self.politeness.set_crawl_delay(host, seconds)
        self.store.hosts.set_crawl_delay(host, seconds if seconds and seconds > 0 else None)
        if host in self.heap:
            self._reschedule(host)

    def robots_parsed(self, robotparser: Any, request: Request) -> None:
        """Scrapy's robots.txt middleware parsed a file: take its Crawl-delay."""
        parser = getattr(robotparser, "rp", None)
        crawl_delay = getattr(parser, "crawl_delay", None)
        if crawl_delay is None:
            return
        user_agent = request.headers.get(b"User-Agent", b"*").decode("latin-1", "replace")
        try:
            seconds = crawl_delay(user_agent)
        except Exception:  # noqa: BLE001 - a parser quirk must not end the crawl
            return
        if seconds:
            self.set_crawl_delay(self.hostkey.of_request(request), float(seconds))

    # -- origins held and deferred (robots.txt unreachable, circuit breaker) ---
    def origin_held(self, origin: str, delay: float, reason: str, request: Request | None = None) -> None:
        """Signal handler: park ``origin``'s URLs for ``delay`` seconds;
        ``request``, refused for it, comes back to its queue whenever its
        refusal is seen (even after the hold ended), never as a failure."""
        record = self.inflight.get(request) if request is not None else None
        if record is not None:
            record.held = True
        self.holds.hold(origin, self.clock() + max(0.0, delay), reason)
        self.stats.inc_value("frontier/origin_holds")
        logger.info("Holding %s for %.1fs: %s", origin, delay, reason)

    def origin_deferred(self, origin: str, reason: str) -> None:
        """Signal handler: ``origin``'s URLs are deferred for this run."""
        self._defer(self.holds.defer(origin, reason), origin, reason)

    # -- URLs refused for good (URL filter, trap filter, address policy) ------
    def urls_refused(self, refusals: Sequence[tuple[str, str]], request: Request | None = None) -> None:
        """Signal handler: each ``(url, reason)`` will not be crawled. An
        unknown URL gets a row with status ``refused`` (the reason in its
        ``extra``), so that the URL database says why it was never fetched;
        ``request``, if one we handed out, ends ``refused`` instead of failed."""
        record = self.inflight.get(request) if request is not None else None
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

    def _kept_back(self, entry: Entry, inflight: bool = False, refused: bool = False) -> bool:
        """Park or defer ``entry`` if its origin is held or deferred (a
        hold's probe goes through); whether it was kept back. ``refused``:
        a hold refused it in flight, and if that hold has ended since, it
        goes back to the front queues."""
        state = self.holds.state_of(entry.url)
        if state is None and refused:
            self._probes.discard(entry.fingerprint)
            self.store.urls.set_status([entry.fingerprint], Status.QUEUED, only_from=Status.INFLIGHT)
            self.front.push(entry)
            self.stats.inc_value("frontier/requeued_after_hold")
            return True
        if state is None or (not inflight and self.ledger is not None and self._stale_copy(entry.fingerprint)):
            return False  # a stale copy (AOPIC promotion) is skipped as usual
        if state == "deferred":
            self._probes.discard(entry.fingerprint)
            origin = origin_of(entry.url)
            self._defer([entry], origin, self.holds.deferred[origin])
            return True
        if state != "held" or (not inflight and entry.fingerprint in self._probes):
            return False
        self._probes.discard(entry.fingerprint)
        if inflight:
            self.store.urls.set_status([entry.fingerprint], Status.QUEUED, only_from=Status.INFLIGHT)
        self.holds.park(entry)
        self.stats.inc_value("frontier/parked")
        return True

    def _release_holds(self, now: float) -> None:
        """Holds whose time has come: one URL of each goes out as a probe."""
        for entry in self.holds.release_due(now):
            self._probes.add(entry.fingerprint)
            self.front.push(entry)
            self.stats.inc_value("frontier/hold_probes")

    def _probe_ended(self, entry: Entry) -> None:
        """A probe was fetched (or failed without a new hold): the rest of
        its origin's parked URLs go back to the front queues."""
        self._probes.discard(entry.fingerprint)
        for parked in self.holds.release(origin_of(entry.url)):
            self.front.push(parked)

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

    def exclude(self, request: Request) -> None:
        """A request handed out must not be fetched (robots.txt): record it
        excluded and free its host at once, without a politeness gap, since
        nothing was fetched."""
        self.mark_excluded(request.url)
        record = self.inflight.get(request)
        if record is not None:
            record.excluded = True
        if record is not None and not record.released:
            record.released = True
            state = self.politeness.hosts.get(record.host)
            if state is not None:
                state.in_flight = max(0, state.in_flight - 1)
            self._reschedule(record.host)

    def wait_for(self, request: Request) -> float:
        """Seconds until the host of ``request`` may be fetched again (after a
        robots.txt fetch the first page waits the usual gap)."""
        return self.politeness.wait(self.hostkey.of_request(request), self.clock())

    def host_of(self, request: Request) -> str:
        """The politeness key of ``request`` (Scrapy's downloader slot key)."""
        return self.hostkey.of_request(request)

    # -- AOPIC -----------------------------------------------------------------
    def take_cash(self, url: str) -> tuple[float, float]:
        """The page at ``url`` was fetched: move its cash to its history;
        return ``(cash, history)`` (zeros without AOPIC)."""
        if self.ledger is None:
            return 0.0, 0.0
        fp, _ = url_fingerprint(url)
        self._credited = {}
        return self.ledger.take(fp)[:2]

    def distribute(self, url: str, outlinks: Sequence[str]) -> float:
        """AOPIC credit assignment for a fetched page: its cash to its history,
        the tax to Lambda, the rest split over ``outlinks`` (known or new);
        queued URLs whose cash crosses a level move up. Return the history."""
        if self.ledger is None:
            return 0.0
        fp, _ = url_fingerprint(url)
        self._credited = {}  # valid from a credit to the next take only
        links = [canonical_fingerprint(link) for link in outlinks]
        # the page's and its links' cash in one read (with the links' URL
        # rows too where the store can: a promotion needs them)
        entries: dict[int, Entry] | None = None
        if self._read_cash_and_entries is not None:
            rows, entries = self._read_cash_and_entries([fp, *links])
        else:
            rows = self.ledger.read_rows([fp, *links])
        cash, history, visits = self.ledger.take(fp, rows)
        share = self.ledger.split(cash, len(outlinks))
        if share > 0:
            self.credit(links, share, rows, entries)
        if visits <= self.revisits:
            self._revisit(fp)
        return history

    def _revisit(self, fp: int) -> None:
        """OPIC revisits pages: back into the frontier at the level its cash
        (none, just after the fetch) earns; credits move it up as they come."""
        entry = self.store.urls.get_many([fp]).get(fp)
        if entry is None or fp in self.memory_only:
            return
        cash = self.ledger.cash_of(fp) or 0.0
        level = self.prioritizer.level(entry.priority, entry.depth,
                                       {"aopic_cash": cash, "aopic_mean": self.ledger.mean_cash()})
        again = entry._replace(level=level)
        self.store.urls.requeue(again, self.wall_clock())
        self.front.push(again)
        self.stats.inc_value("aopic/revisits")

    def credit(self, fingerprints: Sequence[int], amount: float,
               rows: dict[int, tuple[float, float, float, int]] | None = None,
               entries: dict[int, Entry] | None = None) -> None:
        """Add ``amount`` of cash to each URL (``rows``, ``entries``: their
        cash and URL rows, if read already); promote queued ones whose level rises."""
        ledger = self.ledger
        if ledger is None or not fingerprints:
            return
        changes = ledger.credit_many([(fp, amount) for fp in fingerprints], rows)
        dividend = ledger.dividend
        self._credited = {fp: (after, dividend) for fp, (_, after, _) in zip(fingerprints, changes)}
        mean = ledger.mean_cash()
        level_of = self.prioritizer.level
        rising = [fp for fp, (before, after, existed) in zip(fingerprints, changes)
                  if existed and level_of(0, 0, {"aopic_cash": after, "aopic_mean": mean})
                  > level_of(0, 0, {"aopic_cash": before, "aopic_mean": mean})]
        if rising:
            self._promote(rising, mean, entries)

    def _rows_of(self, fingerprints: list[int], known: dict[int, Entry] | None) -> dict[int, Entry]:
        """URL rows of ``fingerprints``: from ``known`` if read already, else the store."""
        if known is None:
            return self.store.urls.get_many(fingerprints)
        return {fp: known[fp] for fp in fingerprints if fp in known}

    def _promote(self, fingerprints: list[int], mean: float, known: dict[int, Entry] | None = None) -> None:
        entries = self._rows_of(fingerprints, known)
        now = self.wall_clock()
        for fp, entry in entries.items():
            if fp in self.memory_only or self.store.urls.status_of(fp) != Status.QUEUED:
                continue
            meta = {"aopic_cash": self._cash_now(fp) or 0.0, "aopic_mean": mean}
            level = self.prioritizer.level(entry.priority, entry.depth, meta)
            if level <= entry.level:
                continue
            moved = entry._replace(level=level)
            self.store.urls.requeue(moved, now)
            self.front.push(moved)
            self.stats.inc_value("aopic/promoted")

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

    # -- checkpoints, resume, rebuild ----------------------------------------
    def checkpoint(self) -> None:
        """Commit everything so far (and save the Bloom filter)."""
        try:
            if self.ledger is not None:
                self.ledger.save()
            self._sweep()
            self.politeness.prune(self.clock(), keep=set(self.back.queue_of))
            self._update_gauges()
            self._save_bloom()
            self.stats.inc_value("frontier/checkpoints")
        except (FrontierStoreError, OSError) as err:
            logger.error("Frontier checkpoint failed: %s", err)
            if self.on_store_error is not None:
                self.on_store_error(err)
            else:
                raise

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

    def _restore_clean(self) -> None:
        try:
            hosts = self.back.restore(self._key_of)
        except ValueError as err:
            logger.info("Back queues inconsistent (%s); rebuilding", err)
            self.back.drop_buffers()
            self._rebuild()
            return
        for host in hosts:
            self._reschedule(host)

    def _retry_deferred(self) -> None:
        """A resumed crawl retries the origins deferred by the run before,
        first: their URLs go to the highest front queue."""
        if not self.store.hosts.deferrals():
            return
        fingerprints = self.store.urls.take_deferred()
        self.store.hosts.clear_deferrals()
        top = len(self.front.queues) - 1
        for entry in self.store.urls.get_many(fingerprints).values():
            self.front.push(entry._replace(level=top))
        self.stats.set_value("frontier/deferred_retried", len(fingerprints))
        logger.info("Retrying %d URLs deferred by the previous run first", len(fingerprints))

    def _rebuild(self) -> None:
        self.heap = HostHeap()
        total = rebuild_queues(self.store, self.front, self.back)
        self.stats.set_value("frontier/rebuilt", total)
        logger.warning(
            "The frontier in %s was not closed cleanly; rebuilt its queues from %d URL rows",
            self.store.location, total,
        )

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
        stats = self.stats
        stats.set_value("frontier/back_queues", self.back.in_use())
        stats.set_value("frontier/hosts", self.store.hosts.host_count())
        stats.set_value("frontier/queued", len(self))
        stats.set_value("frontier/inflight", len(self.inflight))
        hits = stats.get_value("frontier/seen_cache_hit", 0)
        lookups = hits + stats.get_value("frontier/seen_cache_miss", 0)
        if lookups:
            stats.set_value("frontier/seen_cache_hit_rate", round(hits / lookups, 4))
        if self.bloom is not None:
            stats.set_value("frontier/bloom_size", self.bloom.size_bytes())
        round_trips = getattr(self.store, "round_trips", None)  # a networked store (Redis)
        if round_trips is not None:
            stats.set_value("frontier/store_round_trips", round_trips)
        if self.ledger is not None:
            stats.set_value("aopic/lambda_cash", round(self.ledger.lambda_cash, 6))
            stats.set_value("aopic/pages_with_cash", self.ledger.rows)
        self._memory_gauges()

    def _memory_gauges(self) -> None:
        """Memory per URL of a store that reports it (Redis: the crawl's, over
        every process; see CRAWL_WIDE_STATS). At checkpoints and close only."""
        usage = getattr(self.store, "memory_usage", None)
        report = usage() if usage is not None else None
        if report is None:
            return
        used, known = report
        self.stats.set_value("frontier/redis_memory_bytes", used)
        self.stats.set_value("frontier/redis_known_urls", known)
        if known:
            self.stats.set_value("frontier/redis_bytes_per_url", round(used / known, 1))

    def entries_in_memory(self) -> int:
        """Request entries the frontier holds in memory (buffers + in flight)."""
        return self.front.in_memory() + self.back.in_memory() + len(self.inflight) + len(self.memory_only)

    def fingerprints_in_memory(self) -> int:
        """Fingerprints held in memory (the URL-seen cache and skip set)."""
        return len(self.seen.cache) + len(self.excluded)
