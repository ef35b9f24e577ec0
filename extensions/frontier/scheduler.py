"""The Mercator URL frontier as Scrapy's scheduler: URL-seen, the store, the
prioritiser and one host dispatch; others reach it through signals."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.core.scheduler import BaseScheduler
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.admission import Admission
from extensions.frontier.codec import decode, encode
from extensions.frontier.credit import AOPICCredit
from extensions.frontier.dispatch import FrontierParts, HostDispatch, HostKey
from extensions.frontier.fingerprint import url_fingerprint, use_fingerprinter
from extensions.frontier.gauges import DictStats, update_gauges
from extensions.frontier.holds import OriginHolds
from extensions.frontier.inflight import InFlightTable
from extensions.frontier.linkrecord import REDIRECT_STATUSES, LinkRecorder
from extensions.frontier.localdispatch import LocalDispatch
from extensions.frontier.options import FrontierOptions, Runtime
from extensions.frontier.page import PageDone, PageVerdict, link_request, page_fingerprints
from extensions.frontier.politeness import INFINITY, Politeness
from extensions.frontier.prioritizer import DepthPrioritizer, Prioritizer
from extensions.frontier.revisits import RevisitSchedule
from extensions.frontier.urlseen import BloomSeen, URLSeen
from extensions.urls.recent import RecentLinks, TwoGenerationCache
from extensions.signals import host_assigned, origin_deferred, origin_held, politeness_widened, request_excluded, robots_rules_parsed, urls_refused
from extensions.frontier.store import FLAG_MEMORY, Entry, FrontierStore, FrontierStoreError, Status

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.spiders import Spider

logger = logging.getLogger(__name__)


class WakeUpTimer:
    """Wakes the engine when the first host is due: at most one pending call."""

    def __init__(self, call_later: Callable[..., Any] | None, wake: Callable[[], None] | None,
                 stats: Any) -> None:
        self.call_later, self.wake, self.stats = call_later, wake, stats
        self._timer: Any = None
        self.due = INFINITY  # when the pending timer fires (inf: none pending)

    def arm(self, due: float | None, now: float) -> None:
        """Wake the engine at ``due`` (None: never) unless an earlier timer is pending."""
        if due is None or self.call_later is None or self.wake is None:
            return
        due = max(due, now)
        if self._timer is not None and self.due <= due:
            return
        self.cancel()
        self.due = due
        self._timer = self.call_later(due - now, self._fire)
        self.stats.inc_value("frontier/wakeups_scheduled")

    def cancel(self) -> None:
        if self._timer is not None:
            if getattr(self._timer, "active", lambda: True)():  # a fired DelayedCall is not active
                self._timer.cancel()
            self._timer, self.due = None, INFINITY

    def _fire(self) -> None:
        self._timer, self.due = None, INFINITY
        self.stats.inc_value("frontier/wakeups_fired")
        if self.wake is not None:
            self.wake()


class WriteAhead:
    """Runs ``commit`` once before the reactor's next I/O poll, however often asked."""

    def __init__(self, commit: Callable[[], None], call_soon: Callable[[Callable[[], None]], Any] | None) -> None:
        self.commit = commit
        self.call_soon = call_soon
        self.due = False

    def request(self) -> None:
        if self.call_soon is None:
            self.commit()
        elif not self.due:
            self.due = True
            self.call_soon(self._run)

    def _run(self) -> None:
        if self.due:  # not cancelled since
            self.due = False
            self.commit()

    def cancel(self) -> None:
        self.due = False


class Frontier(BaseScheduler):
    """Scrapy scheduler composing URL-seen, prioritiser and a host dispatch."""

    def __init__(
        self,
        store: FrontierStore,
        dispatch: HostDispatch | None = None,
        *,
        prioritizer: Prioritizer | None = None,
        politeness: Politeness | None = None,
        hostkey: HostKey | None = None,
        ledger: AOPICLedger | None = None,
        bloom: BloomSeen | None = None,
        revisit_schedule: RevisitSchedule | None = None,
        options: FrontierOptions = FrontierOptions(),
        runtime: Runtime = Runtime(),
    ) -> None:
        self.store = store
        self.dispatch: HostDispatch = dispatch if dispatch is not None else LocalDispatch()
        self.prioritizer = prioritizer or DepthPrioritizer(self.dispatch.levels)
        self.politeness = politeness or Politeness()
        self.seen = URLSeen(store.urls, options.seen_cache_size, bloom)
        self.bloom, self.bloom_path = bloom, options.bloom_path
        self.hostkey = hostkey or HostKey()
        self.options, self.runtime = options, runtime
        self.clock, self.wall_clock = runtime.clock, runtime.wall_clock
        self.stats = runtime.stats if runtime.stats is not None else DictStats()
        self.wakeup = WakeUpTimer(runtime.call_later, runtime.wake, self.stats)
        self.write_ahead = WriteAhead(self._write_ahead, runtime.call_soon)  # FRONTIER_WRITE_AHEAD
        self.inflight = InFlightTable(self.politeness, runtime.in_progress)
        self.spider: Spider | None = None
        self._known_hosts = TwoGenerationCache(4096)
        self._loop: Any = None
        self._checkpoints = 0
        self._logged: set[str] = set()  # noisy events logged once (see note)
        self.send: Callable[..., Any] | None = None  # the crawler's send_catch_log (None: nothing sent)
        self.recent = RecentLinks(options.recent_links)
        self.holds = OriginHolds()  # origins that cannot be crawled now (see .holds)
        self.memory_only: dict[int, Request] = {}  # requests that cannot be serialised, by fingerprint
        self.admission = Admission(store, self.seen, self.stats, self.wall_clock, self.memory_only,
                                   options.host_budget, options.record_refusals, self.dispatch)
        self.excluded = self.admission.excluded  # excluded while queued: skip at dequeue
        self.parts = FrontierParts(
            store=store, politeness=self.politeness, holds=self.holds, inflight=self.inflight,
            stats=self.stats, clock=self.clock, wall_clock=self.wall_clock,
            seen=self.seen, hostkey=self.hostkey, ledger=ledger, idle_close=options.idle_close,
            handout=self, admission=self.admission, wakeup=self.wakeup, on_store_error=runtime.on_store_error,
            memory_only=self.memory_only)
        self.dispatch.bind(self.parts)
        self.ledger = ledger
        self.aopic = None if ledger is None else AOPICCredit(
            ledger, self.prioritizer, store, self.dispatch, self.stats, self.memory_only, options.revisits)
        self.unfiled = self.parts.unfiled
        self.link_record = LinkRecorder(store.links, self.stats, options.linkgraph_record)
        self.revisits = revisit_schedule  # continuous crawling (REVISIT_ENABLED), see .revisits
        if revisit_schedule is not None:  # files due URLs ahead of new ones
            revisit_schedule.dispatch = self.dispatch

    # -- construction from a crawler ----------------------------------------
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Frontier:
        from extensions.frontier.config import frontier_kwargs  # noqa: PLC0415 - config imports the parts
        use_fingerprinter(crawler.request_fingerprinter, crawler.settings["REQUEST_FINGERPRINTER_CLASS"])
        frontier = cls(**frontier_kwargs(crawler))  # the one place settings are read
        connect = crawler.signals.connect
        connect(frontier.request_left_downloader, signals.request_left_downloader)
        connect(frontier.request_dropped, signals.request_dropped)
        connect(frontier.response_received, signals.response_received)
        # a redirect or retry replaces the response before response_received
        connect(frontier.response_received, signals.response_downloaded)
        connect(frontier.robots_rules_parsed, robots_rules_parsed)
        connect(frontier.politeness_widened, politeness_widened)
        connect(frontier.request_excluded, request_excluded)
        connect(frontier.origin_held, origin_held)
        connect(frontier.origin_deferred, origin_deferred)
        connect(frontier.urls_refused, urls_refused)
        frontier.send = crawler.signals.send_catch_log
        return frontier

    # -- Scrapy's scheduler interface ----------------------------------------
    def open(self, spider: Spider | None) -> None:
        """Open the store, resume or rebuild, start checkpointing."""
        self.spider = spider
        self.store.open()
        self.dispatch.open()
        self.politeness.crawl_delays.update(self.store.hosts.crawl_delays())
        self._learn_widened()
        if self.ledger is not None:
            self.ledger.load()
        self.dispatch.resume()
        bloom, path, tag = self.bloom, self.bloom_path, self.store.get_meta("bloom_tag")
        if bloom is not None and path is not None and not (tag and bloom.load(path, tag)):
            count = bloom.rebuild(fp for fp, _ in self.store.urls.iter_all(10_000))  # it does not match the store
            if count:
                logger.info("Rebuilt the URL-seen Bloom filter from %d URL rows", count)
        update_gauges(self)
        if len(self):
            logger.info("Resuming crawl (%d requests in the frontier, %s)", len(self), self.store.location)
        looping_call, interval = self.runtime.looping_call, self.options.checkpoint_interval
        self.dispatch.start(looping_call)
        if looping_call is not None and interval > 0:
            self._loop = looping_call(self.checkpoint)
            self._loop.start(interval, now=False)

    def close(self, reason: str) -> None:
        """Pause cleanly: requeue what is unfinished, spill buffers, commit."""
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.wakeup.cancel()
        self.write_ahead.cancel()
        self._sweep()
        self.dispatch.close(self.inflight.drain())
        if self.ledger is not None:
            self.ledger.save()
        update_gauges(self)
        self.dispatch.leave(reason)
        self._save_bloom()
        self.store.close(clean=True)
        if self.options.cleanup_dir is not None:
            shutil.rmtree(self.options.cleanup_dir, ignore_errors=True)

    def __len__(self) -> int:
        return len(self.dispatch)

    def has_pending_requests(self) -> bool:
        return self.dispatch.has_pending() or bool(self.revisits and self.revisits.pending(self.wall_clock()))

    def enqueue_request(self, request: Request, credit: tuple[float, float] | None = None) -> bool:
        """URL-seen test, prioritiser, dispatch; ``dont_filter`` bypasses URL-seen except
        for a start request's first copy. ``credit``: its page's AOPIC (cash, dividend)."""
        try:
            fp, host = url_fingerprint(request.url, request.method, request.body, request)
        except ValueError:  # no host to be polite to (``data:``): handed out as it is
            self.unfiled.append(request)
            self.note("unfiled", "Request %s cannot be filed by host; handed out unfiled", request)
            return True
        admission = self.admission
        bypass = request.dont_filter and not admission.first_seed_copy(request, fp)
        if not bypass and admission.known(fp):
            return self._duplicate()
        host = self.dispatch.host_of(request, host)
        depth = int(request.meta.get("depth", 0))
        # the URL's own cash, never a copy's (a seed's copy would get cash of its own)
        meta = request.meta if self.aopic is None else self.aopic.cash_meta(request, fp, credit)
        level = self.prioritizer.level(request.priority, depth, meta)
        if bypass:
            if self.dispatch.io is not None:  # an earlier copy's enqueue must be in before the test
                self.dispatch.io.settle()
            fp = admission.distinct_copy(fp)
        entry = encode(request, fp, host, level, self.spider)
        if not bypass and admission.over_budget(entry):
            return False  # refused or a duplicate, counted
        if not self.dispatch.enqueue(entry, bypass):
            return self._duplicate()
        if not bypass:
            admission.spend(entry)
        if request.meta.get("is_start_request"):
            admission.seeds_this_run.add(fp)
        if entry.flags & FLAG_MEMORY:
            self.memory_only[fp] = request
            self.note("unserializable", "Request %s cannot be serialised; %s", request,
                             self.dispatch.memory_only_note)
        if not self._known_hosts.hit(host):
            self._known_hosts.add(host)
            self.store.hosts.add_hosts([host], self.wall_clock())
        self.stats.inc_value("frontier/enqueued")
        return True

    def next_request(self) -> Request | None:
        """The best URL politeness allows now; if none, arm the wake-up timer."""
        if self.unfiled:
            self.stats.inc_value("frontier/dequeued")
            return self.unfiled.popleft()
        now = self.clock()
        self._sweep()  # before holds end: a request refused by a hold is parked, not failed
        if self.revisits is not None:
            self.revisits.pump(self.wall_clock(), len(self))
        request = self.dispatch.next_request(now)
        if request is None:
            self._arm_timer(now)
        else:
            self.stats.inc_value("frontier/dequeued")
        if self.options.write_ahead:
            self.write_ahead.request()
        return request

    def _arm_timer(self, now: float) -> None:
        due = self.dispatch.next_due(now)
        if self.revisits is not None:  # or the next URL due again, if earlier
            due = self.revisits.wake_at(due, now, self.wall_clock())
        self.wakeup.arm(due, now)

    def request_of(self, entry: Entry, cash: float | None = None) -> Request | None:
        """The request of a dequeued entry, or None when it must not be fetched
        (lost or undecodable ones marked failed); ``cash``: the entry's, if known."""
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
                self.note("lost", "Request for %s was memory-only and is gone", entry.url)
                self.store.urls.set_status([fp], Status.FAILED)
            return request
        try:
            request = decode(entry, self.spider)
        except Exception as err:  # noqa: BLE001 - one bad row must not end the crawl
            self.note("undecodable", "Cannot rebuild the request for %s: %s", entry.url, err)
            self.store.urls.set_status([fp], Status.FAILED)
            return None
        validators = self.revisits.handed_out(entry) if self.revisits is not None else None
        if validators:  # a re-visit: the conditional GET middleware sends them
            request.meta["revisit_validators"] = validators
        return request

    # -- fetch end -------------------------------------------------------------
    def fetch_finished(self, request: Request, duration: float | None = None, ok: bool = True) -> None:
        """A fetch of a request we handed out ended."""
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
            if response.status in REDIRECT_STATUSES:  # its Location is its outlink (link graph)
                self.link_record.redirected(request.url, response.status, response.headers.get(b"Location"), response.url)
                if self.revisits is not None:  # re-visited: its target may change
                    self.revisits.redirected(request.url, self.wall_clock())

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
        if self.inflight.in_progress() is None:  # no engine to tell us when it is done
            self._finish(request)

    def _sweep(self) -> None:
        for request in self.inflight.gone():
            self._release(request, None)
            self._finish(request)

    def _finish(self, request: Request) -> None:
        record = self.inflight.pop(request, None)
        if record is not None:
            self.dispatch.finish(record)

    # -- the page's verdict (the last item pipeline) ---------------------------
    def page_done(self, page: PageVerdict) -> PageDone | Deferred[PageDone]:
        """The one entry point for a judged page: records its outlinks, pays AOPIC,
        stores its group and files the outlinks; the history (maybe a Deferred)."""
        fp, source = page_fingerprints(page)  # the requested and the final URL's, once
        if page.content_group is not None:
            self.store.groups.set_content_group(fp, page.content_group, page.duplicate)
        if page.not_modified and self.dispatch.io is not None:  # a 304 reads its stored outlinks:
            self.dispatch.io.settle()  # earlier pages' writes must be in
        if self.revisits is not None:  # its next visit; a 304 gets its stored outlinks back
            page = self.revisits.page_done(page, source, self.wall_clock())
        fingerprints = self.link_record.page_done(page, source)  # computed once, for AOPIC too
        stored = page.links if page.not_modified else None
        if self.aopic is None:
            return self._follow(page, PageDone(links=stored))
        done = self.aopic.page_done(page, fp, fingerprints, stored)
        if isinstance(done, Deferred):
            return done.addCallback(lambda answer: self._follow(page, answer))
        return self._follow(page, done)

    def _follow(self, page: PageVerdict, done: PageDone) -> PageDone:
        """File the outlinks as Scrapy's Depth and Referer middlewares would."""
        links = done.links if done.links is not None else page.links  # a 304: the stored ones
        if not page.follow:
            self.stats.inc_value("links/not_followed_duplicate", len(links))
            return done
        depth = page.depth + 1
        referer = page.final_url or page.url
        fresh, credit, recent = self.recent.fresh, done.credit, 0
        for url in links:
            if not fresh(url, depth):
                recent += 1
                continue
            request = link_request(url, depth, referer)
            if self._scheduled(request) and not self.enqueue_request(request, credit.get(url)) \
                    and self.send is not None:
                self.send(signals.request_dropped, request=request, spider=self.spider)
        if recent:
            self.stats.inc_value("links/recent_duplicates", recent)
        if links and self.runtime.wake is not None:
            self.runtime.wake()
        return done

    def note(self, key: str, message: str, *args: Any) -> None:
        """A noisy event: ``frontier/<key>`` counted, the first of each key logged."""
        self.stats.inc_value(f"frontier/{key}")
        if key not in self._logged:
            self._logged.add(key)
            logger.warning(message + " (further cases only counted in frontier/%s)", *args, key)

    def _scheduled(self, request: Request) -> bool:
        """``request_scheduled`` as ``engine.crawl`` sends it; whether nobody refused."""
        if self.send is None:
            return True
        for _, result in self.send(signals.request_scheduled, request=request, spider=self.spider,
                                   dont_log=IgnoreRequest):
            if isinstance(result, Failure) and isinstance(result.value, IgnoreRequest):
                return False
        return True

    def host_assigned(self, host: str) -> None:
        if self.send is not None:
            self.send(host_assigned, host=host)

    # -- signals from robots.txt and other components -----------------------------
    def robots_rules_parsed(self, origin: str, crawl_delay: float | None) -> float:
        """``origin``'s Crawl-delay becomes its host's; seconds until the host may be fetched."""
        host = self.hostkey.of_request(Request(origin + "/"))
        self.set_crawl_delay(host, crawl_delay)
        return self.politeness.wait(host, self.clock())

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        self.politeness.set_crawl_delay(host, seconds)
        self.store.hosts.set_crawl_delay(host, seconds if seconds and seconds > 0 else None)
        if self.dispatch.scheduled(host):
            self.dispatch.reschedule(host)

    def politeness_widened(self, origin: str, delay: float) -> None:
        """``origin``'s host waits at least ``delay`` seconds between fetches (stored)."""
        host = self.hostkey.of_request(Request(origin + "/"))
        self.politeness.widen(host, delay)
        self.store.hosts.set_widened(host, self.politeness.widened[host])

    def _learn_widened(self) -> None:
        for host, delay in self.store.hosts.widened().items():
            self.politeness.widen(host, delay)

    def request_excluded(self, request: Request, reason: str) -> None:
        """A handed-out request must not be fetched: excluded, its host freed without a gap."""
        record = self.inflight.get(request)
        self.admission.mark_excluded(request.url, handed_out=record is not None)
        if record is not None:
            record.excluded = True
            if self.inflight.free_unfetched(record):
                self.dispatch.reschedule(record.host)

    def origin_held(self, origin: str, delay: float, reason: str, request: Request | None = None, wait_out: bool = False) -> None:
        """Park ``origin``'s URLs for ``delay`` seconds; ``request``, refused for it, is requeued."""
        if (record := self.inflight.get(request)) is not None:  # refused, not fetched (a 429's response neither)
            record.held, record.ok = True, False
        self.holds.hold(origin, self.clock() + max(0.0, delay), reason, wait_out)
        self.stats.inc_value("frontier/origin_holds")
        logger.info("Holding %s for %.1fs: %s", origin, delay, reason)
        self.dispatch.origin_held(origin, delay, reason)

    def origin_deferred(self, origin: str, reason: str) -> None:
        self.admission.defer(self.holds.defer(origin, reason), origin, reason)
        self.dispatch.origin_deferred(origin)

    def urls_refused(self, refusals: Sequence[tuple[str, str]], request: Request | None = None) -> None:
        """Each ``(url, reason)`` will not be crawled; ``request``, if handed out, ends refused."""
        record = self.inflight.get(request)
        if record is not None:
            record.refused = refusals[0][1] if refusals else "refused"
            return
        self.admission.refuse(refusals)

    # -- checkpoints ---------------------------------------------------------------
    def checkpoint(self) -> None:
        try:
            if self.ledger is not None:
                self.ledger.save()
            self._sweep()
            self._learn_widened()
            self.politeness.prune(self.clock(), keep=self.dispatch.hosts_in_use())
            update_gauges(self)
            self._save_bloom()
            self.stats.inc_value("frontier/checkpoints")
        except (FrontierStoreError, OSError) as err:
            self._store_failed("checkpoint", err)
        self.dispatch.checkpoint()

    def _write_ahead(self) -> None:
        try:
            self.store.commit(self.ledger.save if self.ledger is not None else None)
        except FrontierStoreError as err:
            self._store_failed("commit", err)

    def _store_failed(self, what: str, err: Exception) -> None:
        """Log; the engine's hook decides (pause the crawl), else raise."""
        logger.error("Frontier %s failed: %s", what, err)
        if self.runtime.on_store_error is None:
            raise err
        self.runtime.on_store_error(err)

    def _save_bloom(self) -> None:
        """Commit the store with a new Bloom tag, then write the filter with it."""
        self._checkpoints += 1
        tag, bloom, path = f"{self._checkpoints}-{self.wall_clock():.6f}", self.bloom, self.bloom_path
        write = bloom is not None and path is not None and (bloom.dirty or not path.exists())
        if write:
            self.store.set_meta("bloom_tag", tag)
        self.store.checkpoint()
        if write:
            bloom.save(path, tag)  # type: ignore[union-attr]

    # -- stats and introspection ---------------------------------------------
    def _duplicate(self) -> bool:
        self.stats.inc_value("frontier/duplicates")
        return False

    def entries_in_memory(self) -> int:
        return self.dispatch.in_memory() + len(self.inflight) + len(self.memory_only)
