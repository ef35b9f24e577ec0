"""Host dispatch shared by several crawler processes through Redis host leases.

This process holds a few hosts under a lease (:mod:`.leases`), serves them
with the usual politeness from a local host heap, and takes more from the
shared host heap when none of its hosts may fetch now. Periodic upkeep:
:mod:`.leaseupkeep`; round trips off the reactor: :mod:`.dispatch_worker`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from heapq import heappop as heapq_pop
from heapq import heappush as heapq_push
from typing import Any

from scrapy import Request

from extensions.aopic.ledger import AOPICLedger
from extensions.backends.redis.dispatch_worker import TAKES_AHEAD, HeldHost, OffReactor
from extensions.backends.redis.holds import SharedHolds
from extensions.backends.redis.leases import (
    MAX_LEVELS,
    HostLeases,
    Taken,
    level_of_score,
    parked_score,
    process_id,
    queue_score,
)
from extensions.backends.redis.leaseupkeep import LeaseUpkeep
from extensions.backends.redis.ledger import SharedLedger
from extensions.frontier.dispatch import FrontierParts, ready_order
from extensions.frontier.holds import host_of_origin, origin_of
from extensions.frontier.hostheap import HostHeap
from extensions.frontier.inflight import InFlight
from extensions.frontier.politeness import INFINITY
from extensions.frontier.store import Entry, FrontierStoreError, Status

logger = logging.getLogger(__name__)

CLUSTER_HEAP_SHARDS = 16  # host heap shards in a Redis Cluster (one on a single Redis)


def shared_ledger(ledger: AOPICLedger | None, store: Any) -> AOPICLedger | None:
    """One ledger for every process: its state in Redis, not in each process."""
    if ledger is None or isinstance(ledger, SharedLedger):
        return ledger
    return SharedLedger(store, ledger.initial_cash, ledger.tax)


@dataclass(slots=True)
class HeapPolls:
    """What this process knows of the shared host heap and the crawl's processes."""

    alive: int = 1  # crawler processes alive at the last heartbeat
    hosts: int | None = None  # hosts on the shared heap at the last poll (None: poll again)
    checked: float = -INFINITY  # when the heap was last polled
    next_poll: float = 0.0  # when this process may poll again


class SharedDispatch:
    """Hosts served under Redis leases (see the module docstring)."""

    memory_only_note = "only this process can fetch it"

    def __init__(self, levels: int = 8, max_hosts: int = 48, *, lease_ttl: float = 10.0,
                 poll_interval: float = 0.1, max_lateness: float = 1.0,
                 lease_clock: Callable[[], float] | None = None, owner: str | None = None,
                 io_thread: bool = False) -> None:
        if levels > MAX_LEVELS:
            raise ValueError(f"FRONTIER_FRONT_QUEUES must be <= {MAX_LEVELS} with FRONTIER_BACKEND=redis, "
                             f"got {levels}")
        for name, value in (("TTL", lease_ttl), ("POLL_INTERVAL", poll_interval), ("MAX_LATENESS", max_lateness)):
            if value <= 0:
                raise ValueError(f"FRONTIER_LEASE_{name} must be > 0, got {value!r}")
        self.levels, self.max_hosts = levels, max_hosts
        self.lease_ttl, self.poll_interval, self.max_lateness = lease_ttl, poll_interval, max_lateness
        self.lease_clock = lease_clock
        self.io_thread = io_thread
        self.off_reactor = OffReactor(self)
        self.io = self.off_reactor  # the worker thread (StoreIO)
        self.owner = owner or process_id()
        self.heap = HostHeap()
        self.leases: HostLeases | None = None
        self.shared_holds: SharedHolds | None = None
        self.held: dict[str, HeldHost] = {}
        self.upkeep = LeaseUpkeep(self)
        self._ready: list[tuple[float, bool, int, str]] = []
        #: hosts given back the URLs the run before deferred: first among their level
        self.retried: set[str] = set()
        self._ready_seq = 0
        self.polls = HeapPolls()
        self._swept_at = -INFINITY
        self._lease_loop: Any = None

    def bind(self, parts: FrontierParts) -> None:
        self.parts = parts
        self.store = parts.store
        if parts.ledger is not None and not parts.ledger.shared:
            raise ValueError("the shared host dispatch needs the shared AOPIC ledger (RedisBackend.ledger)")

    # -- lifecycle -----------------------------------------------------------
    def open(self) -> None:
        if any(True for _ in self.store.scan(self.store.keys.queue_pattern)):
            self.store.abandon()
            raise FrontierStoreError(
                f"{self.store.location} holds a single-process frontier's queues: resume it with "
                "FRONTIER_DISTRIBUTED=False, or choose another FRONTIER_REDIS_PREFIX")
        self.leases = HostLeases(self.store, self.owner, self.lease_ttl, self._heap_shards(),
                                 clock=self.lease_clock)
        self.shared_holds = SharedHolds(self.store, clock=self.lease_clock)

    def resume(self) -> None:
        if not self.shared_holds.others_alive():
            self.upkeep.retry_deferred()
        self.shared_holds.mark_active()  # a process joining starts a new idle period
        self.polls.alive = self.leases.heartbeat(self.lease_ttl)
        self.upkeep.adopt_holds()
        logger.info("Frontier %s shared with %d other crawler process(es) (%s)",
                    self.owner, self.polls.alive - 1, self.store.location)

    def start(self, looping_call: Callable[[Callable[[], None]], Any] | None) -> None:
        if self.io_thread and looping_call is not None:
            self.off_reactor.start()
        if looping_call is not None:
            self._lease_loop = looping_call(self.renew_leases)
            self._lease_loop.start(self.lease_ttl / 3, now=False)

    def _heap_shards(self) -> int:
        """Fixed for the crawl at its first open (stored in the meta hash)."""
        default = CLUSTER_HEAP_SHARDS if self.store.cluster else 1
        self.store.call(("HSETNX", self.store.keys.meta, "heap_shards", default))
        return int(self.store.get_meta("heap_shards") or default)

    def close(self, records: list[InFlight]) -> None:
        """Give every held host back (in-flight URLs to their queues)."""
        if self._lease_loop is not None and self._lease_loop.running:
            self._lease_loop.stop()
        for host, taken in self.off_reactor.drain():  # taken, not handed out: back
            if taken.entry is not None:
                self.leases.put_back(host, taken.entry.fingerprint, taken.entry.level)
        for record in records:
            self.leases.put_back(record.host, record.entry.fingerprint, record.entry.level)
        now = self.parts.clock()
        for host, held in list(self.held.items()):
            self.leases.release(host, self.parts.politeness.wait(host, now), False, held.heap_score)
        self.held.clear()
        self.upkeep.adopt_holds()  # the report lists what other processes deferred too

    def leave(self, reason: str) -> None:
        """Add this process's stats to the crawl's, leave; the crawl's keys
        are deleted (``SCHEDULER_PERSIST`` off) only by the last process."""
        self.upkeep.leave()
        self.off_reactor.stop()
        logger.info("Frontier %s closed (%s)", self.owner, reason)

    def checkpoint(self) -> None:
        try:
            self.upkeep.share_stats()
            self.store.checkpoint()
        except FrontierStoreError as err:
            logger.error("Sharing the crawl's stats failed: %s", err)

    def renew_leases(self) -> None:
        """Extend held leases, give hosts away, share holds (:mod:`.leaseupkeep`)."""
        self.upkeep.renew()

    # -- queue state -----------------------------------------------------------
    def __len__(self) -> int:
        return sum(held.queued for held in self.held.values()) + len(self.parts.unfiled)

    def has_pending(self) -> bool:
        """Work anywhere in the crawl: held hosts, requests in flight here,
        or hosts on the shared heap (checked at most every poll interval)."""
        if self.held or self.parts.inflight or self.parts.unfiled:
            return True
        # wait for what is on the worker's way (an enqueue may list a host, a
        # poll acquire one): answering True would keep an idle process open
        was_idle = self.off_reactor.idle()
        if not self.off_reactor.settle() or self.held:
            return True
        now = self.parts.clock()
        # a poll answered meanwhile may predate listings: look at the heap again
        if not was_idle or self.polls.hosts is None or now - self.polls.checked >= self.poll_interval:
            self.polls.hosts, self.polls.checked = self.leases.poll(0).hosts, now
        if self.polls.hosts == 0 and now - self._swept_at >= self.lease_ttl:
            self._swept_at = now
            if self.leases.sweep_orphans():
                self.parts.stats.inc_value("frontier/orphans_listed")
                self.polls.hosts = None
                return True
        return bool(self.polls.hosts)

    def hosts_in_use(self) -> set[str]:
        return set(self.held)

    def in_memory(self) -> int:
        """Nothing buffered: the queues are in Redis."""
        return 0

    def queued_by_level(self) -> dict[int, int]:
        """None: no front queues; each host's queue orders its URLs by level."""
        return {}

    def host_of(self, request: Request, host: str) -> str:
        """The URL's host name (``download_slot`` meta is a single-process feature)."""
        return host

    # -- enqueue -----------------------------------------------------------------
    def enqueue(self, entry: Entry, bypass: bool) -> bool:
        """The URL-seen test and the host's shared back queue, in one script
        (True until the worker thread answers)."""
        self.parts.seen.remember(entry.fingerprint)
        return self.off_reactor.enqueue(entry, bypass)

    def promote(self, entry: Entry, level: int) -> bool:
        """Move a queued URL up its host's queue (its row stays as it is)."""
        if level <= entry.level:
            return False
        self.leases.requeue(entry.host, entry.fingerprint, level)
        return True

    def revisit(self, entry: Entry, level: int) -> None:
        self.leases.enqueue(entry.host, [entry._replace(level=level)], force=True)

    # -- dispatch --------------------------------------------------------------
    def next_request(self, now: float) -> Request | None:
        """The best URL among the held hosts that may be fetched now; if there
        is none, take more hosts from the shared heap first."""
        if self.parts.holds.held:
            self.upkeep.end_holds(now)
        request = self.off_reactor.hand_out(now)
        if request is None:
            request = self._dispatch_ready(now)
        if request is None and not self.off_reactor.pending() and self.off_reactor.poll_heap(now):
            request = self._dispatch_ready(now)
        return request

    def _dispatch_ready(self, now: float) -> Request | None:
        """Move the due held hosts to the ready heap (:func:`ready_order`,
        retried hosts first), then dispatch from the best one that may fetch."""
        ready, politeness = self._ready, self.parts.politeness
        while (host := self.heap.pop_due(now)) is not None:
            if host in self.held:  # a host given away meanwhile is someone else's
                head = self.held[host].head
                self._ready_seq += 1
                level = -1 if head == INFINITY else level_of_score(head)
                order = ready_order(level, politeness.rate_limited(host))
                heapq_push(ready, (order, host not in self.retried, self._ready_seq, host))
        while ready and self.off_reactor.busy < TAKES_AHEAD:
            host = heapq_pop(ready)[3]
            if host in self.heap or host not in self.held or self.held[host].taking:
                continue
            if politeness.ready_at(host) > now:
                self.reschedule(host)
                continue
            request = self._dispatch(host, now)
            if request is not None:
                return request
        return None

    def share(self) -> int:
        """This process's share of the hosts with work (heap hosts / live processes, rounded up)."""
        return max(1, -(-(self.polls.hosts or 0) // self.polls.alive))

    def _dispatch(self, host: str, now: float) -> Request | None:
        """Take ``host``'s best URL: answered at once without a worker thread,
        else later (:meth:`.OffReactor.hand_out` gives the engine its request)."""
        self.off_reactor.take(host)
        return self.off_reactor.hand_out(now)

    def use_taken(self, host: str, taken: Taken, now: float) -> Request | None:
        """What a take of ``host`` found: the request to fetch, or None."""
        held, parts = self.held[host], self.parts
        if taken.skipped:
            parts.stats.inc_value("frontier/stale_entries", taken.skipped)
        if taken.parked:
            parts.stats.inc_value("frontier/parked", taken.parked)
        if taken.state == "lost":
            self.upkeep.lost(host)
            return None
        if taken.state != "taken":
            held.queued, held.head = (taken.queued, taken.head) if taken.state != "empty" else (0, held.head)
            if taken.state == "stale":  # more to look at
                self.heap.schedule(host, now)
            elif taken.state == "held":  # only held origins' URLs are left
                self.park(host, now)
            elif not held.inflight:
                self.off_reactor.release_idle(host)
            return None
        entry: Entry = taken.entry  # type: ignore[assignment]
        held.queued, held.head = taken.queued, taken.head
        held.parked_until = 0.0
        cash = None
        if parts.ledger is not None:  # the cash row came with the URL
            row = taken.cash
            cash = 0.0 if row is None else row[0] + (parts.ledger.dividend - row[2])
        if parts.holds and self._kept_back(entry):
            held.queued += parts.holds.state_of(entry.url) == "held"  # back in its queue
            self.reschedule(host)
            return None
        request = parts.handout.request_of(entry, cash)
        if request is None:
            if self.off_reactor.worker is not None:  # its status (excluded, failed) first: the store buffers it
                self.store.connection.flush()
            self.leases.finish(host, entry.fingerprint, None)
            self.reschedule(host)
            return None
        parts.politeness.started(host, now)
        held.inflight += 1
        self.reschedule(host)
        parts.inflight.add(request, entry, host, now)
        return request

    def reschedule(self, host: str) -> None:
        if host in self.held and self.held[host].taking:
            self.heap.remove(host)  # back on the heap when its take answers
        elif host in self.held:
            self.heap.place(host, max(self.parts.politeness.ready_at(host), self.held[host].parked_until))

    def scheduled(self, host: str) -> bool:
        return host in self.heap

    def next_due(self, now: float) -> float | None:
        """The first held host's due time, or the next poll while there is room."""
        if self.off_reactor.arrived:
            return now
        due = self.heap.next_time()
        if len(self.held) < self.max_hosts and self.polls.hosts != 0:
            due = self.polls.next_poll if due is None else min(due, self.polls.next_poll)
        return due

    # -- fetch end -------------------------------------------------------------
    def finish(self, record: InFlight) -> None:
        parts = self.parts
        host, fp = record.host, record.entry.fingerprint
        held = self.held.get(host)
        kept = not record.ok and not record.excluded and record.refused is None and (
            bool(parts.holds) or record.held) and self._kept_back(record.entry, True, record.held)
        if kept:
            pass
        elif record.refused is not None:
            self.leases.finish(host, fp, Status.REFUSED, parts.wall_clock())
            if self.store.urls.trims:  # a trimmed row keeps only its count
                parts.stats.inc_value("frontier/refused")
            else:
                parts.admission.record_refused(record.entry, record.refused, parts.wall_clock(), known=True)
        elif record.excluded:  # the status with the FINISH: the worker sends it before the store's buffer
            self.leases.finish(host, fp, Status.EXCLUDED)
        else:
            status = Status.DONE if record.ok else Status.FAILED
            self.leases.finish(host, fp, status, parts.wall_clock())
            parts.stats.inc_value(f"frontier/{status.name.lower()}")
        if held is None:
            return
        held.inflight = max(0, held.inflight - 1)
        state = parts.holds.state_of(record.entry.url)
        if kept and state != "deferred":  # back in its queue (parked if still held)
            held.queued += 1
            score = queue_score(record.entry.level, 0)
            held.head = min(held.head, parked_score(score) if state == "held" else score)
        if not held.inflight and not held.queued:
            self.off_reactor.release_idle(host)

    def released(self, host: str, outcome: tuple[int, int, float]) -> None:
        state, queued, head = outcome
        if state == 0:
            held = self.held[host]
            held.queued, held.head = queued, head
            self.reschedule(host)
            return
        self.drop(host)
        self.parts.stats.inc_value("frontier/leases_released")

    def wait(self, host: str) -> float:
        """Seconds until ``host``'s next fetch (a fetch in flight as if it ended now)."""
        politeness = self.parts.politeness
        wait = politeness.wait(host, self.parts.clock())
        held = self.held.get(host)
        if held is not None and held.inflight:
            state = politeness.hosts.get(host)
            wait = max(wait, politeness.gap(host, state.last_duration if state else 0.0))
        return wait

    def drop(self, host: str) -> None:
        self.held.pop(host, None)
        self.retried.discard(host)
        self.heap.remove(host)
        self.parts.stats.set_value("frontier/back_queues", len(self.held))

    # -- held and deferred origins, crawl-wide (holds.py) -----------------------
    def origin_held(self, origin: str, delay: float, reason: str) -> None:
        """The hold is shared: every process keeps the origin's URLs back until it ends."""
        if self.shared_holds is not None:
            self.shared_holds.hold(origin, delay, reason)

    def origin_deferred(self, origin: str) -> None:
        """A host parked for the origin is served again at once."""
        self.upkeep.serve_parked(self.parts.clock(), {host_of_origin(origin)})

    def _kept_back(self, entry: Entry, inflight: bool = False, refused: bool = False) -> bool:
        """Whether a hold keeps ``entry`` back: a held origin's URL goes back
        to its queue parked, a deferred one's is finished as deferred.
        ``refused``: a hold refused it in flight (ended: it just goes back)."""
        parts = self.parts
        state = parts.holds.state_of(entry.url)
        if state is None and refused:
            self.leases.put_back(entry.host, entry.fingerprint, entry.level)
            parts.stats.inc_value("frontier/requeued_after_hold")
            return True
        if state is None:
            return False
        origin = origin_of(entry.url)
        if state == "deferred":
            self.leases.finish(entry.host, entry.fingerprint, Status.DEFERRED, parts.wall_clock())
            parts.admission.defer([], origin, parts.holds.deferred[origin])
            parts.stats.inc_value("frontier/deferred")
            return True
        self.leases.put_back(entry.host, entry.fingerprint, entry.level, parked=True)
        if not inflight and entry.host in self.held:
            # look again later, never at once, or it comes straight back
            self.park(entry.host, parts.clock())
        parts.stats.inc_value("frontier/parked")
        return True

    def held_origins(self, host: str) -> list[str]:
        """The held origins of ``host`` (their URLs are parked as they are met)."""
        if not self.parts.holds.held:
            return []
        return [origin for origin in self.parts.holds.held if host_of_origin(origin) == host]

    def park(self, host: str, now: float) -> None:
        """Only held origins' URLs are queued for ``host``: look again when the
        first of its holds ends, and at least once a lease TTL."""
        ends = [self.parts.holds.held[origin].until for origin in self.held_origins(host)]
        until = min([*ends, now + self.lease_ttl])
        self.held[host].parked_until = max(until, now + self.poll_interval)
        self.reschedule(host)
