"""The Mercator frontier shared by several crawler processes on one Redis.

``-s FRONTIER_BACKEND=redis`` (with ``FRONTIER_DISTRIBUTED``, on by
default) makes :class:`DistributedFrontier` the scheduler: any number of
``scrapy crawl web`` processes started on the same ``REDIS_URL`` and
``FRONTIER_REDIS_PREFIX`` crawl one frontier. What each process does:

* **enqueue** -- the URL-seen test and the host's shared back queue in one
  script (:data:`~extensions.frontier.leases.ENQUEUE`); a host that was idle
  goes on the shared host heap.
* **readiness** -- when none of the hosts it holds may be fetched now and it
  holds fewer than ``FRONTIER_BACK_QUEUES`` hosts, the process polls the host
  heap (at most every ``FRONTIER_LEASE_POLL_INTERVAL`` seconds while polls
  find nothing, less often the more hosts it holds) and takes due hosts
  with a lease. A process takes hosts only when it has nothing to do, so
  work goes to whoever is free, not by a static split; a process too busy
  to serve a held host within ``FRONTIER_LEASE_MAX_LATENESS`` seconds of its
  due time gives it back, and one holding more than its share (hosts with
  work / live processes, plus one) gives back the excess.
* **politeness** -- only the lease holder fetches a host; inside the
  process the usual :class:`~extensions.frontier.politeness.Politeness`
  applies (one fetch in flight per host, end-to-start gap); the host's next
  allowed fetch time is written with every renewal and release and read
  with every acquisition, so the gap holds across processes.
* **dispatch** -- the host's best queued URL is moved to its in-flight set
  (one round trip); the fetch end marks it done (buffered); a host whose
  queue is empty is released.
* **leases** -- renewed every third of ``FRONTIER_LEASE_TTL``; a killed
  process's leases expire and whoever acquires its hosts next puts its
  in-flight URLs back in their queues.
* **the end** -- the crawl is over when the host heap is empty (every host
  with work is on it, held or not); a process that sees it empty first lists
  any orphaned host (:meth:`~extensions.frontier.leases.HostLeases.sweep_orphans`).
  Until then an idle process keeps polling, so no work is left behind.
* **holds** -- a held origin (robots.txt unreachable, circuit breaker) is
  held crawl-wide and, when no process has had other work for
  ``FRONTIER_IDLE_CLOSE`` seconds, deferred in every process, so the crawl
  ends (:mod:`~extensions.frontier.sharedholds`); the first process of a
  resumed run retries deferred URLs first. Origins are independent, the
  politeness key is the host: the take parks a held origin's URLs behind
  the host's other URLs in its shared queue, which go on at the host's pace;
  a host with nothing but parked URLs is looked at again when its first hold
  ends (at least once a lease TTL), and a hold that ends puts its host's
  parked URLs back in their places.
* **stats** -- each process adds its stat changes to ``P:stats`` at every
  checkpoint and at close (``redis-cli HGETALL web:stats``); at close the
  sums so far are also in the process's own stats as ``distributed/total/*``.

Differences from the single-process frontier: priority (the front-queue
level) orders URLs within a host's queue and the choice among a process's
due hosts, instead of Mercator's global front queues; the politeness key is
the URL's host name (``CONCURRENT_REQUESTS_PER_IP`` and the
``download_slot`` meta are single-process features); AOPIC's ledger is
:class:`~extensions.aopic.shared.SharedLedger`, whose scalars (Lambda, the
dividend) live in Redis and change atomically with the cash rows, so cash
is conserved across processes; requests that cannot be serialised stay in
the process that made them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request

from extensions.aopic.shared import SharedLedger
from extensions.frontier.codec import encode
from extensions.frontier.fingerprint import canonical_fingerprint, url_fingerprint
from extensions.frontier.holds import origin_of
from extensions.frontier.leases import (
    MAX_LEVELS,
    HostLeases,
    is_parked,
    level_of_score,
    parked_score,
    process_id,
    queue_score,
)
from extensions.frontier.politeness import INFINITY
from extensions.frontier.scheduler import CRAWL_WIDE_STATS, Frontier, InFlight, ready_order
from extensions.frontier.sharedholds import SharedHolds
from extensions.store.base import FLAG_MEMORY, Entry, FrontierStoreError, Status

if TYPE_CHECKING:
    from scrapy.spiders import Spider

logger = logging.getLogger(__name__)

POLL_BATCH = 16  # hosts taken per poll at most
CLUSTER_HEAP_SHARDS = 16  # host heap shards in a Redis Cluster (one on a single Redis)


@dataclass(slots=True)
class HeldHost:
    """A host this process holds a lease on."""

    queued: int  # its back-queue length at our last look
    head: float  # back-queue score of its best queued URL (inf: none)
    heap_score: float  # the lease expiry we last put on the heap (ms)
    since: float  # when we took it (local clock)
    inflight: int = 0
    # when to look at its queue again: it holds only held origins' URLs (0: not so)
    parked_until: float = 0.0

    @property
    def parked(self) -> bool:
        """Its queue holds only URLs a hold keeps back (at our last look)."""
        return self.parked_until > 0.0


@lru_cache(maxsize=4096)
def host_of_origin(origin: str) -> str:
    """The politeness key (host name) of an origin ``scheme://netloc``."""
    return (urlsplit(origin).hostname or "").lower()


class DistributedFrontier(Frontier):
    """:class:`~extensions.frontier.scheduler.Frontier` whose back queues,
    host heap and politeness live in Redis, shared by every process of the
    crawl (see the module docstring)."""

    def __init__(self, store: Any, *, lease_ttl: float = 10.0, poll_interval: float = 0.1,
                 max_lateness: float = 1.0, lease_clock: Callable[[], float] | None = None,
                 owner: str | None = None, **kwargs: Any) -> None:
        super().__init__(store, **kwargs)
        if self.ledger is not None and not isinstance(self.ledger, SharedLedger):
            # one ledger for every process: its state in Redis, not in each process
            self.ledger = SharedLedger(store, self.ledger.initial_cash, self.ledger.tax)
        if len(self.front.queues) > MAX_LEVELS:
            raise ValueError(f"FRONTIER_FRONT_QUEUES must be <= {MAX_LEVELS} with FRONTIER_BACKEND=redis, "
                             f"got {len(self.front.queues)}")
        if lease_ttl <= 0 or poll_interval <= 0 or max_lateness <= 0:
            raise ValueError(f"lease TTL, poll interval and lateness must be > 0; got {lease_ttl!r}, "
                             f"{poll_interval!r}, {max_lateness!r}")
        self.lease_ttl, self.poll_interval, self.max_lateness = lease_ttl, poll_interval, max_lateness
        self.lease_clock = lease_clock
        self.owner = owner or process_id()
        self.max_hosts = len(self.back.queues)
        self.leases: HostLeases | None = None
        self.shared_holds: SharedHolds | None = None
        self.held: dict[str, HeldHost] = {}
        self._next_poll = 0.0
        self._heap_hosts: int | None = None  # hosts on the shared heap at the last poll
        self._alive = 1  # crawler processes alive at the last heartbeat
        self._failures_seen = 0  # the store's failed calls at the last in-flight repair
        self._heap_checked = -INFINITY
        self._swept_at = -INFINITY
        self._lease_loop: Any = None
        self._pushed: dict[str, float] = {}

    # -- lifecycle -----------------------------------------------------------
    def open(self, spider: Spider | None) -> None:
        self.spider = spider
        self.store.open()
        if any(True for _ in self.store.scan(self.store.keys.queue_pattern)):
            self.store.abandon()
            raise FrontierStoreError(
                f"{self.store.location} holds a single-process frontier's queues: resume it with "
                "FRONTIER_DISTRIBUTED=False, or choose another FRONTIER_REDIS_PREFIX")
        self.leases = HostLeases(self.store, self.owner, self.lease_ttl, self._heap_shards(),
                                 clock=self.lease_clock)
        self.shared_holds = SharedHolds(self.store, clock=self.lease_clock)
        self.politeness.crawl_delays.update(self.store.hosts.crawl_delays())
        if self.ledger is not None:
            self.ledger.load()
        if not self.shared_holds.others_alive():
            self._retry_deferred_shared()
        self.shared_holds.mark_active()  # a process joining starts a new idle period
        self._alive = self.leases.heartbeat(self.lease_ttl)
        self._adopt_holds()
        logger.info("Frontier %s shared with %d other crawler process(es) (%s)",
                    self.owner, self._alive - 1, self.store.location)
        if self.looping_call is not None:
            self._lease_loop = self.looping_call(self.renew_leases)
            self._lease_loop.start(self.lease_ttl / 3, now=False)
            if self.checkpoint_interval > 0:
                self._loop = self.looping_call(self.checkpoint)
                self._loop.start(self.checkpoint_interval, now=False)

    def _heap_shards(self) -> int:
        """Fixed for the crawl at its first open (stored in the meta hash)."""
        default = CLUSTER_HEAP_SHARDS if self.store.cluster else 1
        self.store.call(("HSETNX", self.store.keys.meta, "heap_shards", default))
        return int(self.store.get_meta("heap_shards") or default)

    def close(self, reason: str) -> None:
        """Give every held host back (in-flight URLs to their queues), add
        this process's stats to the crawl's, leave; the crawl's keys are
        deleted (``SCHEDULER_PERSIST`` off) only by the last process."""
        for loop in (self._loop, self._lease_loop):
            if loop is not None and loop.running:
                loop.stop()
        self._cancel_timer()
        self._sweep()
        for record in self.inflight.values():
            self.leases.put_back(record.host, record.entry.fingerprint, record.entry.level)
        self.inflight.clear()
        now = self.clock()
        for host, held in list(self.held.items()):
            self.leases.release(host, self.politeness.wait(host, now), False, held.heap_score)
        self.held.clear()
        if self.ledger is not None:
            self.ledger.save()
        self._adopt_holds()  # the report lists what other processes deferred too
        self._update_gauges()
        self._share_stats()
        totals = self.leases.stats_totals()
        for name in ("frontier/done", "frontier/failed", "frontier/enqueued", "frontier/dequeued",
                     "response_received_count"):
            if name in totals:
                self.stats.set_value(f"distributed/total/{name}", totals[name])
        others = self.leases.leave()
        if others and not self.store.persist:
            logger.info("%d other crawler process(es) still running: the crawl's keys stay", others)
            self.store.persist = True
        self._save_bloom()
        self.store.close(clean=True)
        logger.info("Frontier %s closed (%s)", self.owner, reason)

    def __len__(self) -> int:
        return sum(held.queued for held in self.held.values()) + len(self.unfiled)

    def has_pending_requests(self) -> bool:
        """Work anywhere in the crawl: held hosts, requests in flight here,
        or hosts on the shared heap (checked at most every poll interval)."""
        if self.held or self.inflight or self.unfiled:
            return True
        now = self.clock()
        if self._heap_hosts is None or now - self._heap_checked >= self.poll_interval:
            self._heap_hosts, self._heap_checked = self.leases.poll(0).hosts, now
        if self._heap_hosts == 0 and now - self._swept_at >= self.lease_ttl:
            self._swept_at = now
            if self.leases.sweep_orphans():
                self.stats.inc_value("frontier/orphans_listed")
                self._heap_hosts = None
                return True
        return bool(self._heap_hosts)

    # -- enqueue ---------------------------------------------------------------
    def enqueue_request(self, request: Request) -> bool:
        """URL-seen test and the host's shared back queue, in one script;
        never raises on a request Scrapy accepts. ``dont_filter`` bypasses
        the URL-seen test (a retry, seeds' included; identical requests: each
        is fetched), except for a start request's first copy in this
        process: another process or an earlier run may have filed that seed
        already. A URL the frontier cannot file (``data:``) goes out
        unfiled, from this process only."""
        try:
            fp, host = url_fingerprint(request.url, request.method, request.body)
        except ValueError:
            return self._unfiled(request)
        bypass = request.dont_filter and not self._first_seed_copy(request, fp)
        if not bypass and self._cached(fp):
            return self._duplicate()
        depth = int(request.meta.get("depth", 0))
        # the URL's own cash, never a copy's (a seed's copy would get cash of its own)
        level = self.prioritizer.level(request.priority, depth, self._cash_meta(request, fp))
        if bypass:
            fp = self._distinct_copy(fp)
        entry = encode(request, fp, host, level, self.spider)
        if not bypass and self.host_budget and (verdict := self._over_budget(fp, host)):
            if verdict == "budget" and self.record_refusals:
                self._record_refused(entry, "budget", self.wall_clock())
            return False
        result = self.leases.enqueue(host, [entry], force=bypass)[0]
        self.seen.remember(fp)
        if not result.new and not bypass:
            return self._duplicate()
        if request.meta.get("is_start_request"):
            self._seeds_this_run.add(fp)
        if entry.flags & FLAG_MEMORY:
            self.memory_only[fp] = request
            self._count_once("unserializable", "Request %s cannot be serialised; only this process "
                             "can fetch it", request)
        if result.listed and self._alive == 1:
            self._next_poll = 0.0  # a host is due on the heap and nobody else polls
        if result.mine and host in self.held:
            held = self.held[host]
            held.queued, held.head = result.queued, result.head
            if not is_parked(result.head):
                held.parked_until = 0.0  # work again (a held origin's URL is parked at its take)
            self._reschedule(host)
        if not self._known_hosts.hit(host):
            self._known_hosts.add(host)
            self.store.hosts.add_hosts([host])
        self.stats.inc_value("frontier/enqueued")
        return True

    def _cached(self, fp: int) -> bool:
        hits = self.seen.cache_hits
        known = self.seen.known(fp)
        self.stats.inc_value("frontier/seen_cache_hit" if self.seen.cache_hits > hits
                             else "frontier/seen_cache_miss")
        return known

    # -- dispatch --------------------------------------------------------------
    def next_request(self) -> Request | None:
        """The best URL among the held hosts that may be fetched now (the
        lowest head score: highest level, then earliest discovered); if
        there is none, take more hosts from the shared heap first."""
        if self.unfiled:  # no host, no politeness: at once, as in one process
            self.stats.inc_value("frontier/dequeued")
            return self.unfiled.popleft()
        now = self.clock()
        self._sweep()  # before holds end: a request refused by a hold goes back, not failed
        if self.holds.held:
            self._end_holds(now)
        request = self._dispatch_ready(now)
        if request is None and self._poll(now):
            request = self._dispatch_ready(now)
        if request is None:
            self._arm_timer(now)
        return request

    def _dispatches(self, host: str) -> bool:
        return host in self.held  # a host given away meanwhile is someone else's

    def _ready_order(self, host: str) -> float:
        """As in one process (:func:`ready_order`): hosts of one level go in
        the order they became ready, not by their head URL's discovery
        order, which kept a host found late waiting behind earlier ones."""
        head = self.held[host].head
        return ready_order(-1 if head == INFINITY else level_of_score(head), self.politeness.rate_limited(host))

    def _share(self) -> int:
        """This process's share of the hosts with work (hosts on the heap /
        live processes, as last seen, rounded up)."""
        return max(1, -(-(self._heap_hosts or 0) // self._alive))

    def _below_share(self) -> bool:
        return len(self.held) < self._share()

    def _poll(self, now: float) -> bool:
        """Take due hosts from the shared heap if there is room; whether any
        came. The more hosts a process holds, the less often it polls, and
        at or above its share it takes one host per poll, so that idle
        processes get the new hosts first."""
        room = min(self.max_hosts - len(self.held), POLL_BATCH if self._below_share() else 1)
        if room <= 0 or now < self._next_poll:
            return False
        poll = self.leases.poll(room)
        self._heap_hosts, self._heap_checked = poll.hosts, now
        candidates = [(host, score) for host, score in poll.due if host not in self.held][:room]
        acquired = self.leases.acquire(candidates)
        for got in acquired:
            self.held[got.host] = HeldHost(got.queued, got.head, got.expires, now)
            self.politeness.hold(got.host, now + got.wait)
            self._reschedule(got.host)
            if got.taken_over:
                self.stats.inc_value("frontier/leases_taken_over")
                self.stats.inc_value("frontier/recovered", got.recovered)
                logger.info("Took over %s from an expired lease: %d in-flight URL(s) back in its queue",
                            got.host, got.recovered)
            if self.on_host_assigned is not None:
                self.on_host_assigned(host=got.host)
        self.stats.inc_value("frontier/heap_polls")
        self.stats.inc_value("frontier/leases_acquired", len(acquired))
        self.stats.set_value("frontier/back_queues", len(self.held))
        wait = self.poll_interval if poll.wait is None else min(self.poll_interval, max(poll.wait, 0.005))
        load = len(self.held) / self._share()
        self._next_poll = now if acquired and load < 1 else now + wait * (1 + load)
        return bool(acquired)

    def _dispatch(self, host: str, now: float) -> Request | None:
        held = self.held[host]
        taken = self.leases.take(host, self._held_origins(host))
        if taken.skipped:
            self.stats.inc_value("frontier/stale_entries", taken.skipped)
        if taken.parked:
            self.stats.inc_value("frontier/parked", taken.parked)
        if taken.state == "lost":
            self._lost(host)
            return None
        if taken.state != "taken":
            if taken.state != "empty":
                held.queued, held.head = taken.queued, taken.head
            else:
                held.queued = 0
            if taken.state == "stale":  # more to look at
                self.heap.schedule(host, now)
            elif taken.state == "held":  # only held origins' URLs are left
                self._park(host, now)
            elif not held.inflight:
                self._release_idle(host)
            return None
        entry: Entry = taken.entry  # type: ignore[assignment]
        held.queued, held.head = taken.queued, taken.head
        held.parked_until = 0.0
        cash = None
        if self.ledger is not None:  # the cash row came with the URL
            row = taken.cash
            cash = 0.0 if row is None else row[0] + (self.ledger.dividend - row[2])
        if self.holds and self._kept_back(entry):
            held.queued += self.holds.state_of(entry.url) == "held"  # back in its queue
            self._reschedule(host)
            return None
        request = self._request_of(entry, cash)
        if request is None:
            self.leases.finish(host, entry.fingerprint, None)
            self._reschedule(host)
            return None
        self.politeness.started(host, now)
        held.inflight += 1
        self._reschedule(host)
        self.inflight[request] = InFlight(entry, host, now)
        self.stats.inc_value("frontier/dequeued")
        return request

    def _stale_copy(self, fp: int) -> bool:
        return False  # one entry per URL: the back queues are sorted sets

    def _kept_back(self, entry: Entry, inflight: bool = False, refused: bool = False) -> bool:
        """A held origin's URL goes back to its host's shared queue, parked
        (behind every URL of the host's other origins, which keep their
        turns); a deferred origin's URL is finished as deferred. ``refused``:
        a hold refused it in flight; if the hold has ended, it just goes back."""
        state = self.holds.state_of(entry.url)
        if state is None and refused:
            self.leases.put_back(entry.host, entry.fingerprint, entry.level)
            self.stats.inc_value("frontier/requeued_after_hold")
            return True
        if state is None:
            return False
        origin = origin_of(entry.url)
        if state == "deferred":
            self.leases.finish(entry.host, entry.fingerprint, Status.DEFERRED, self.wall_clock())
            self._defer([], origin, self.holds.deferred[origin])
            self.stats.inc_value("frontier/deferred")
            return True
        self.leases.put_back(entry.host, entry.fingerprint, entry.level, parked=True)
        if not inflight and entry.host in self.held:
            # the take should have parked it (it knows the host's held
            # origins): look again later, never at once, or it comes straight back
            self._park(entry.host, self.clock())
        self.stats.inc_value("frontier/parked")
        return True

    def _held_origins(self, host: str) -> list[str]:
        """The held origins of ``host`` (their URLs are parked as they are met)."""
        if not self.holds.held:
            return []
        return [origin for origin in self.holds.held if host_of_origin(origin) == host]

    def _park(self, host: str, now: float) -> None:
        """Only held origins' URLs are queued for ``host``: look at it again
        when the first of its holds ends, and at least once a lease TTL
        (another process may queue URLs of another origin meanwhile)."""
        ends = [self.holds.held[origin].until for origin in self._held_origins(host)]
        until = min([*ends, now + self.lease_ttl])
        self.held[host].parked_until = max(until, now + self.poll_interval)
        self._reschedule(host)

    def _end_holds(self, now: float) -> None:
        """Holds whose time has come end (nothing is kept here: the parked
        URLs are in Redis); the parked URLs of the hosts held here go back
        to their places in the queues."""
        due = self.holds.next_release()
        if due is None or due > now:
            return
        before = set(self.holds.held)
        self.holds.release_due(now)
        self._unpark(before - set(self.holds.held), now)

    def _unpark(self, origins: Iterable[str], now: float) -> None:
        for host in {host_of_origin(origin) for origin in origins}:
            held = self.held.get(host)
            if held is None:
                continue  # its owner, or its next one, takes the parked URLs in turn
            count, head = self.leases.unpark(host)
            if count:
                self.stats.inc_value("frontier/unparked", count)
                held.head = head
            held.parked_until = 0.0
            self._reschedule(host)
        self._arm_timer(now)

    # -- held and deferred origins, crawl-wide (see extensions/frontier/sharedholds.py) --
    def origin_held(self, origin: str, delay: float, reason: str, request: Request | None = None) -> None:
        """As in one process, and the hold is shared: every process keeps
        the origin's URLs back until it ends."""
        super().origin_held(origin, delay, reason, request)
        if self.shared_holds is not None:
            self.shared_holds.hold(origin, delay, reason)

    def origin_deferred(self, origin: str, reason: str) -> None:
        """As in one process; a host parked for the origin is served again
        at once (its URLs are finished as deferred as they are taken)."""
        super().origin_deferred(origin, reason)
        self._serve_parked(self.clock(), {host_of_origin(origin)})

    def _busy_here(self) -> bool:
        """Work here that no hold keeps back: an unfiled request, a request
        in flight for an origin not held, or a held host whose queue may
        have such URLs (not parked: at our last look it had URLs of an
        origin not held)."""
        if self.unfiled or any(held.queued and not held.parked for held in self.held.values()):
            return True
        return any(not record.held and self.holds.state_of(record.entry.url) is None
                   for record in self.inflight.values())

    def _share_holds(self) -> None:
        """At each lease renewal: mark the crawl active if this process is
        busy; else, if no process has been for the idle bound, defer every
        origin held anywhere (the idle close); then adopt the crawl's holds
        and deferrals."""
        found = {}
        if self._busy_here():
            self.shared_holds.mark_active()
        else:
            idle = max(self.idle_close, 2 * self.lease_ttl)  # a killed process's hosts are taken over first
            found = self.shared_holds.defer_idle(idle)
        for origin, (_, reason) in found.items():
            why = f"held when nothing else was left: {reason}"
            self.holds.defer(origin, why)
            self._defer([], origin, why)
        self._adopt_holds(unpark=bool(found))

    def _adopt_holds(self, unpark: bool = False) -> None:
        """Hold and defer here what any process of the crawl held or deferred;
        hosts parked by an origin deferred now are served again at once (their
        URLs are finished as deferred as they are taken)."""
        now = self.clock()
        for origin, (left, reason) in self.shared_holds.held().items():
            if origin not in self.holds.deferred:
                self.holds.hold(origin, now + left, reason)
        for origin, (reason, _) in self.store.hosts.deferrals().items():
            if origin not in self.holds.deferred:
                self.holds.defer(origin, reason)
                self._defer([], origin, reason)
                unpark = True
        if unpark:
            self._serve_parked(now)

    def _serve_parked(self, now: float, hosts: set[str] | None = None) -> None:
        """Parked hosts (of ``hosts``, default all) are due again at their
        politeness time: their held origins were deferred."""
        parked = [host for host, held in self.held.items()
                  if held.parked and (hosts is None or host in hosts)]
        for host in parked:
            self.held[host].parked_until = 0.0
            self._reschedule(host)
        if parked:
            self._arm_timer(now)

    def _retry_deferred_shared(self) -> None:
        """The first process of a run retries the URLs the run before
        deferred, first: back in their hosts' queues at the top level."""
        if not self.shared_holds.take_deferrals():
            return
        fingerprints = self.store.urls.take_deferred()
        top = len(self.front.queues) - 1
        by_host: dict[str, list[Entry]] = {}
        for entry in self.store.urls.get_many(fingerprints).values():
            by_host.setdefault(entry.host, []).append(entry._replace(level=top))
        for host, entries in by_host.items():
            self.leases.enqueue(host, entries, force=True)
        self.stats.set_value("frontier/deferred_retried", len(fingerprints))
        logger.info("Retrying %d URLs deferred by the previous run first", len(fingerprints))

    def _reschedule(self, host: str) -> None:
        if host in self.held:
            ready = max(self.politeness.ready_at(host), self.held[host].parked_until)
            if ready < INFINITY:
                self.heap.schedule(host, ready)
            else:
                self.heap.remove(host)

    def _arm_timer(self, now: float) -> None:
        due = self.heap.next_time()
        if len(self.held) < self.max_hosts and self._heap_hosts != 0:
            due = self._next_poll if due is None else min(due, self._next_poll)
        if due is None or self.call_later is None or self.wake is None:
            return
        due = max(due, now)
        if self._timer is not None and self._timer_due <= due:
            return
        self._cancel_timer()
        self._timer_due = due
        self._timer = self.call_later(due - now, self._on_timer)
        self.stats.inc_value("frontier/wakeups_scheduled")

    # -- fetch end -------------------------------------------------------------
    def _finish(self, request: Request) -> None:
        record = self.inflight.pop(request, None)
        if record is None:
            return
        host, fp = record.host, record.entry.fingerprint
        held = self.held.get(host)
        kept = not record.ok and not record.excluded and record.refused is None and (
            bool(self.holds) or record.held) and self._kept_back(
            record.entry, True, record.held)
        if kept:
            pass
        elif record.refused is not None:
            self.leases.finish(host, fp, Status.REFUSED, self.wall_clock())
            if self.store.trims:  # a trimmed row keeps only its count
                self.stats.inc_value("frontier/refused")
            else:
                self._record_refused(record.entry, record.refused, self.wall_clock(), known=True)
        elif record.excluded:
            self.leases.finish(host, fp, None)
        else:
            status = Status.DONE if record.ok else Status.FAILED
            self.leases.finish(host, fp, status, self.wall_clock())
            self.stats.inc_value(f"frontier/{status.name.lower()}")
        if held is None:
            return
        held.inflight = max(0, held.inflight - 1)
        state = self.holds.state_of(record.entry.url)
        if kept and state != "deferred":  # back in its queue (parked if still held)
            held.queued += 1
            score = queue_score(record.entry.level, 0)
            held.head = min(held.head, parked_score(score) if state == "held" else score)
        if not held.inflight and not held.queued:
            self._release_idle(host)

    def _release_idle(self, host: str) -> None:
        """Give back a host whose queue looks empty, unless work came meanwhile."""
        held = self.held[host]
        state, queued, head = self.leases.release(host, self._wait(host), True, held.heap_score)
        if state == 0:
            held.queued, held.head = queued, head
            self._reschedule(host)
            return
        self._drop(host)
        self.stats.inc_value("frontier/leases_released")

    def _wait(self, host: str) -> float:
        """Seconds until ``host``'s next fetch, for the next owner; while a
        fetch is in flight, as if it ended now."""
        now = self.clock()
        wait = self.politeness.wait(host, now)
        held = self.held.get(host)
        if held is not None and held.inflight:
            state = self.politeness.hosts.get(host)
            wait = max(wait, self.politeness.gap(host, state.last_duration if state else 0.0))
        return wait

    def _drop(self, host: str) -> None:
        self.held.pop(host, None)
        self.heap.remove(host)
        self.stats.set_value("frontier/back_queues", len(self.held))

    def _lost(self, host: str) -> None:
        self._drop(host)
        self._count_once("leases_lost", "Lease on %s taken over by another process (this one "
                         "stalled longer than FRONTIER_LEASE_TTL)", host)

    # -- leases, checkpoints -------------------------------------------------------
    def renew_leases(self) -> None:
        """Extend every held lease (with the host's politeness state), give
        back hosts this process is too busy to serve, beat the heart."""
        try:
            for host, expires in self.leases.renew({host: self._wait(host) for host in self.held}).items():
                if expires == -1:
                    self._lost(host)
                elif host in self.held:
                    self.held[host].heap_score = expires
            self._alive = max(1, self.leases.heartbeat(self.lease_ttl))
            self._share_holds()
            if self.store.failures != self._failures_seen:
                self._failures_seen = self.store.failures
                self._repair_inflight()
            self._heap_hosts, self._heap_checked = self.leases.poll(0).hosts, self.clock()
            self._give_away_late()
            self._rebalance()
        except FrontierStoreError as err:
            logger.error("Renewing the frontier's host leases failed: %s", err)
            if self.on_store_error is not None:
                self.on_store_error(err)

    def _repair_inflight(self) -> None:
        """After a failed Redis call was retried: put back every URL in a
        held host's in-flight set that this process is not fetching. A take
        whose answer was lost to a time-out, then retried, ran twice and
        left the first URL in flight for nobody; the lease being ours and
        renewed, nothing else would ever return it, and the crawl would
        never end."""
        mine: dict[str, set[int]] = {}
        for record in self.inflight.values():
            mine.setdefault(record.host, set()).add(record.entry.fingerprint)
        orphans = {host: [fp for fp in found if fp not in mine.get(host, ())]
                   for host, found in self.leases.inflight_of(list(self.held)).items()}
        lost = [fp for found in orphans.values() for fp in found]
        if not lost:
            return
        levels = {fp: entry.level for fp, entry in self.store.urls.get_many(lost).items()}
        for host, found in orphans.items():
            for fp in found:
                self.leases.put_back(host, fp, levels.get(fp, 0))
            if found and host in self.held:
                self.held[host].queued += len(found)
                self.held[host].parked_until = 0.0  # they may be any origin's
                self._reschedule(host)
        self.stats.inc_value("frontier/inflight_repaired", len(lost))
        logger.warning("%d URL(s) left in flight by a retried Redis call went back to their queues", len(lost))

    def _fetching(self) -> set[str]:
        """Hosts with a request of ours in flight, from the requests
        themselves: a held host's count misses one taken under an earlier
        lease on the host (lost, then taken again), and giving such a host
        away would put a URL we are fetching back in its queue."""
        return {record.host for record in self.inflight.values()}

    def _give_away_late(self) -> None:
        now = self.clock()
        fetching = self._fetching()
        for host, held in list(self.held.items()):
            due = max(self.politeness.ready_at(host), held.since, held.parked_until)
            if held.inflight or host in fetching or not held.queued or now - due <= self.max_lateness:
                continue
            state, _, _ = self.leases.release(host, self._wait(host), False, held.heap_score)
            self._drop(host)
            self.stats.inc_value("frontier/leases_given_away")

    def _rebalance(self) -> None:
        """Holding more than one host above its share while other processes
        run, give the excess back (those longest held, none with a fetch in
        flight): an idle process takes them at its next poll."""
        excess = len(self.held) - self._share() - 1
        if self._alive < 2 or excess <= 0:
            return
        fetching = self._fetching()
        for host in [host for host, held in self.held.items() if not held.inflight and host not in fetching][:excess]:
            self.leases.release(host, self._wait(host), False, self.held[host].heap_score)
            self._drop(host)
            self.stats.inc_value("frontier/leases_rebalanced")

    def checkpoint(self) -> None:
        super().checkpoint()
        try:
            self._share_stats()
            self.store.checkpoint()
        except FrontierStoreError as err:
            logger.error("Sharing the crawl's stats failed: %s", err)

    def _share_stats(self) -> None:
        values = getattr(self.stats, "get_stats", lambda: getattr(self.stats, "values", {}))()
        deltas = []
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or name.startswith("distributed/"):
                continue
            if name in CRAWL_WIDE_STATS:  # the same value in every process: the latest, not a sum
                self.leases.set_stat(name, value)
                continue
            delta = value - self._pushed.get(name, 0)
            if delta:
                deltas.append((name, delta))
                self._pushed[name] = value
        self.leases.add_stats(deltas)

    def _update_gauges(self) -> None:
        super()._update_gauges()
        self.stats.set_value("frontier/back_queues", len(self.held))

    # -- AOPIC -------------------------------------------------------------------
    def distribute(self, url: str, outlinks: Sequence[str]) -> float:
        """AOPIC credit assignment for a fetched page, as in one process,
        but the page's take, the tax and the credits are one script of the
        shared ledger (with its links' URL rows read in the same round
        trip); queued links whose cash crosses a level move up."""
        if self.ledger is None:
            return 0.0
        fp, _ = url_fingerprint(url)
        self._credited = {}
        links = [canonical_fingerprint(link) for link in outlinks]
        paid, entries = self.ledger.distribute(fp, links, entries_of=links)
        if links and paid.changes:
            dividend, mean = self.ledger.dividend, self.ledger.mean_cash()
            self._credited = {link: (after, dividend) for link, (_, after, _) in zip(links, paid.changes)}
            level_of = self.prioritizer.level
            rising = [link for link, (before, after, existed) in zip(links, paid.changes)
                      if existed and level_of(0, 0, {"aopic_cash": after, "aopic_mean": mean})
                      > level_of(0, 0, {"aopic_cash": before, "aopic_mean": mean})]
            if rising:
                self._promote(rising, mean, entries)
        if paid.visits <= self.revisits:
            self._revisit(fp)
        return paid.history

    def _revisit(self, fp: int) -> None:
        entry = self.store.urls.get_many([fp]).get(fp)
        if entry is None or fp in self.memory_only:
            return
        cash = self.ledger.cash_of(fp) or 0.0
        level = self.prioritizer.level(entry.priority, entry.depth,
                                       {"aopic_cash": cash, "aopic_mean": self.ledger.mean_cash()})
        self.leases.enqueue(entry.host, [entry._replace(level=level)], force=True)
        self.stats.inc_value("aopic/revisits")

    def _promote(self, fingerprints: list[int], mean: float, known: dict[int, Entry] | None = None) -> None:
        """Move queued URLs up their host's queue (no row rewrite: another
        process may be taking them)."""
        for fp, entry in self._rows_of(fingerprints, known).items():
            meta = {"aopic_cash": self._cash_now(fp) or 0.0, "aopic_mean": mean}
            level = self.prioritizer.level(entry.priority, entry.depth, meta)
            if level > entry.level:
                self.leases.requeue(entry.host, fp, level)
                self.stats.inc_value("aopic/promoted")
