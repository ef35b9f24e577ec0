"""Host dispatch shared by several crawler processes through Redis host leases (:mod:`.leases`):
this process serves a few leased hosts politely from a local host heap and takes more from the
shared heap when none may fetch now. Lease commands go through one FIFO (:mod:`.worker`), so a
page's FINISH reaches Redis after the ENQUEUEs of its links."""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from scrapy import Request

from extensions.backends.redis.leases import (
    MAX_LEVELS,
    Acquired,
    HostLeases,
    Poll,
    Taken,
    is_parked,
    level_of_score,
    parked_score,
    queue_score,
)
from extensions.backends.redis.registry import process_id
from extensions.backends.redis.worker import (
    DirectIO,
    RedisWorker,
    running_reactor,
    start_worker,
)
from extensions.frontier.dispatch import FrontierParts, ready_order
from extensions.frontier.gauges import CRAWL_WIDE_STATS
from extensions.frontier.holds import host_of_origin, origin_of
from extensions.frontier.hostheap import HostHeap
from extensions.frontier.inflight import InFlight
from extensions.frontier.politeness import INFINITY
from extensions.frontier.store import FLAG_REVISIT, Entry, FrontierStoreError, Status

logger = logging.getLogger(__name__)

CLUSTER_HEAP_SHARDS = 16  # host heap shards in a Redis Cluster (one on a single Redis)
POLL_BATCH = 16  # hosts taken per poll at most
TAKES_AHEAD = 16  # takes (and idle releases) on their way to Redis at most
SETTLE_ROUNDS = 4  # waits for the worker's answers (and what they send) in has_pending


@dataclass(slots=True)
class HeldHost:
    queued: int  # its back-queue length at our last look
    head: float  # back-queue score of its best queued URL (inf: none)
    heap_score: float  # the lease expiry we last put on the heap (ms)
    since: float  # when we took it (local clock)
    inflight: int = 0  # requests of ours in flight, and a take waiting for its answer
    taking: bool = False  # a take or release is on its way (off the heap until it answers)
    releasing: bool = False  # an idle release is on its way (a renewal may find it gone first)
    parked_until: float = 0.0

    @property
    def parked(self) -> bool:
        return self.parked_until > 0.0


class SharedDispatch:
    """Hosts served under Redis leases (see the module docstring)."""

    memory_only_note = "only this process can fetch it"

    def __init__(self, levels: int = 8, max_hosts: int = 48, *, lease_ttl: float = 10.0,
                 poll_interval: float = 0.1, max_lateness: float = 1.0,
                 lease_clock: Callable[[], float] | None = None, owner: str | None = None,
                 io_thread: bool = False, window: int = 0) -> None:
        if levels > MAX_LEVELS:
            raise ValueError(f"FRONTIER_FRONT_QUEUES must be <= {MAX_LEVELS} with FRONTIER_BACKEND=redis, "
                             f"got {levels}")
        for name, value in (("TTL", lease_ttl), ("POLL_INTERVAL", poll_interval), ("MAX_LATENESS", max_lateness)):
            if value <= 0:
                raise ValueError(f"FRONTIER_LEASE_{name} must be > 0, got {value!r}")
        self.levels, self.max_hosts = levels, max_hosts
        self.lease_ttl, self.poll_interval, self.max_lateness = lease_ttl, poll_interval, max_lateness
        self.lease_clock = lease_clock
        self.io_thread, self.window = io_thread, window
        self.io = self  # the StoreIO of the frontier: worker and settle()
        self.worker: RedisWorker | None = None
        #: answered takes, waiting for next_request: (host, what the take found)
        self.arrived: deque[tuple[str, Taken]] = deque()
        self.busy = 0  # takes and releases on their way
        self.polling = False  # a poll of the shared heap is on its way
        self.owner = owner or process_id()
        self.heap = HostHeap()
        self.leases: HostLeases | None = None
        self.held: dict[str, HeldHost] = {}
        #: hosts given back the URLs the run before deferred: first among their level
        self.retried: set[str] = set()
        self.alive = 1  # crawler processes alive at the last heartbeat
        self.heap_hosts: int | None = None  # hosts on the shared heap at the last poll (None: poll again)
        self.heap_checked = -INFINITY  # when the heap was last polled
        self.listings = 0  # hosts this process's enqueues listed on the heap (a poll sent before is stale)
        self.next_poll = 0.0  # when this process may poll again
        self._swept_at = -INFINITY
        self._lease_loop: Any = None
        self._failures_seen = 0  # the store's failed calls at the last in-flight repair
        self._pushed: dict[str, float] = {}  # stats shared so far
        self.upkeep_round_trips = 0  # stat redis/upkeep_reactor_round_trips
        self._refilled_ahead = 0  # leases.refilled_ahead counted in the stats so far

    def bind(self, parts: FrontierParts) -> None:
        self.parts = parts
        self.store = parts.store

    # -- lifecycle -----------------------------------------------------------
    def open(self) -> None:
        self.leases = HostLeases(self.store, self.owner, self.lease_ttl, self._heap_shards(),
                                 clock=self.lease_clock, window=self.window)
        if self.window:  # readers of the rows read the tails too (meta "tails")
            self.store.set_meta("tails", "1")
            self.store.urls.tails = True

    def resume(self) -> None:
        if not self.leases.others_alive():
            self.retry_deferred()
        self.leases.mark_active()  # a process joining starts a new idle period
        self.alive = self.leases.heartbeat(self.lease_ttl)
        self.adopt_holds()
        logger.info("Frontier %s shared with %d other crawler process(es) (%s)",
                    self.owner, self.alive - 1, self.store.location)

    def start(self, looping_call: Callable[[Callable[[], None]], Any] | None) -> None:
        reactor = running_reactor()
        if self.io_thread and looping_call is not None and reactor is not None:  # a crawl
            self.worker = start_worker(self.store, reactor.callFromThread, self._failed)
            self.leases.io = self.worker
        if looping_call is not None:
            self._lease_loop = looping_call(self.renew)  # leases, hand-backs, holds
            self._lease_loop.start(self.lease_ttl / 3, now=False)

    def _heap_shards(self) -> int:
        """Fixed for the crawl at its first open."""
        default = CLUSTER_HEAP_SHARDS if self.store.cluster else 1
        self.store.call(("HSETNX", self.store.keys.meta, "heap_shards", default))
        return int(self.store.get_meta("heap_shards") or default)

    def close(self, records: list[InFlight]) -> None:
        """Give every held host back (in-flight URLs to their queues)."""
        if self._lease_loop is not None and self._lease_loop.running:
            self._lease_loop.stop()
        if self.worker is not None:
            self.worker.drain()
        for host, taken in self.arrived:  # taken, not handed out: back
            if taken.entry is not None:
                self.leases.put_back(host, taken.entry.fingerprint, taken.entry.level)
        self.arrived.clear()
        for record in records:
            self.leases.put_back(record.host, record.entry.fingerprint, record.entry.level)
        now = self.parts.clock()
        for host, held in list(self.held.items()):
            self.leases.release(host, self.parts.politeness.wait(host, now), False, held.heap_score)
        self.held.clear()
        self.adopt_holds()  # the report lists what other processes deferred too

    def leave(self, reason: str) -> None:
        """Add this process's stats to the crawl's, leave; the last one out deletes the keys."""
        self.share_stats()
        totals = self.leases.stats_totals()
        for name in ("frontier/done", "frontier/failed", "frontier/enqueued", "frontier/dequeued",
                     "response_received_count"):
            if name in totals:
                self.parts.stats.set_value(f"distributed/total/{name}", totals[name])
        others = self.leases.leave()
        if others and not self.store.persist:
            logger.info("%d other crawler process(es) still running: the crawl's keys stay", others)
            self.store.persist = True
        if self.worker is not None:  # what it holds is sent; lease commands go through the store again
            self.worker.stop()
            self.leases.io = DirectIO(self.store)
            self.worker = None
        logger.info("Frontier %s closed (%s)", self.owner, reason)

    def checkpoint(self) -> None:
        try:
            self.share_stats()
            self.store.checkpoint()
        except FrontierStoreError as err:
            logger.error("Sharing the crawl's stats failed: %s", err)

    # -- queue state -----------------------------------------------------------
    def __len__(self) -> int:
        return sum(held.queued for held in self.held.values()) + len(self.parts.unfiled)

    def has_pending(self) -> bool:
        """Work anywhere in the crawl (the shared heap checked at most every poll interval)."""
        if self.held or self.parts.inflight or self.parts.unfiled:
            return True
        # wait for what is on the worker's way (an enqueue may list a host, a
        # poll acquire one): answering True would keep an idle process open
        was_idle = self.idle()
        if not self.settle() or self.held:
            return True
        now = self.parts.clock()
        # a poll answered meanwhile may predate listings: look at the heap again
        if not was_idle or self.heap_hosts is None or now - self.heap_checked >= self.poll_interval:
            self.heap_hosts, self.heap_checked = self.leases.poll(0).hosts, now
        if self.heap_hosts == 0 and now - self._swept_at >= self.lease_ttl:
            self._swept_at = now
            if self.leases.sweep_orphans():
                self.parts.stats.inc_value("frontier/orphans_listed")
                self.heap_hosts = None
                return True
        return bool(self.heap_hosts)

    def hosts_in_use(self) -> set[str]:
        return set(self.held)

    def in_memory(self) -> int:
        return 0

    def queued_by_level(self) -> dict[int, int]:
        return {}

    def host_of(self, request: Request, host: str) -> str:
        return host

    # -- enqueue -----------------------------------------------------------------
    def enqueue(self, entry: Entry, bypass: bool) -> bool:
        """The URL-seen test and the host's back queue in one script (True until answered)."""
        self.parts.seen.remember(entry.fingerprint)
        answered: list[bool] = []
        late = False
        self.leases.enqueue(entry.host, [entry], bypass,
                            lambda results: answered.append(self._enqueued(entry, bypass, results[0], late)))
        late = True  # not answered at once: the worker thread answers later
        return answered[0] if answered else True

    def promote(self, entry: Entry, level: int) -> bool:
        if level <= entry.level:
            return False
        self.leases.requeue(entry.host, entry.fingerprint, level)
        return True

    def revisit(self, entry: Entry, level: int) -> None:
        self.leases.enqueue(entry.host, [entry._replace(level=level)], force=True)

    # -- dispatch --------------------------------------------------------------
    def next_request(self, now: float) -> Request | None:
        """The best URL of the held hosts that may fetch now, polling the shared heap if none."""
        if self.parts.holds.held:
            self.end_holds(now)
        request = self.hand_out(now)
        if request is None:
            request = self._dispatch_ready(now)
        if request is None and not self.pending() and self.poll_heap(now):
            request = self._dispatch_ready(now)
        return request

    def _dispatch_ready(self, now: float) -> Request | None:
        politeness = self.parts.politeness
        return self.heap.serve_due(now, self._ready_order, lambda host: self._dispatch(host, now),
                                   politeness.ready_at, self.reschedule, lambda: self.busy < TAKES_AHEAD)

    def _ready_order(self, host: str) -> tuple[float, bool] | None:
        """:func:`ready_order`, retried hosts first; None: given away meanwhile."""
        held = self.held.get(host)
        if held is None:
            return None
        level = -1 if held.head == INFINITY else level_of_score(held.head)
        return ready_order(level, self.parts.politeness.rate_limited(host)), host not in self.retried

    def share(self) -> int:
        """This process's share of the hosts with work (heap hosts / live processes, rounded up)."""
        return max(1, -(-(self.heap_hosts or 0) // self.alive))

    def _dispatch(self, host: str, now: float) -> Request | None:
        """Take ``host``'s best URL (:meth:`hand_out` hands it to the engine when answered)."""
        if host not in self.held or self.held[host].taking:
            return None
        self._send(host)
        self.leases.take(host, self.held_origins(host), lambda taken: self._take_answered(host, taken),
                         lambda err: self._busy_failed(host))
        return self.hand_out(now)

    def use_taken(self, host: str, taken: Taken, now: float) -> Request | None:
        held, parts = self.held[host], self.parts
        if taken.skipped:
            parts.stats.inc_value("frontier/stale_entries", taken.skipped)
        if taken.parked:
            parts.stats.inc_value("frontier/parked", taken.parked)
        ahead = self.leases.refilled_ahead
        refilled, self._refilled_ahead = taken.refilled + ahead - self._refilled_ahead, ahead
        if refilled:
            parts.stats.inc_value("frontier/tail_refilled", refilled)
        if taken.state == "lost":
            self.lost(host)
            return None
        if taken.state != "taken":
            held.queued, held.head = (taken.queued, taken.head) if taken.state != "empty" else (0, held.head)
            if taken.state == "stale":  # more to look at
                self.heap.schedule(host, now)
            elif taken.state == "held":  # only held origins' URLs are left
                self.park(host, now)
            elif not held.inflight:
                self.release_idle(host)
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
            if self.worker is not None:  # its status (excluded, failed) first: the store buffers it
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
        if self.arrived:
            return now
        due = self.heap.next_time()
        if len(self.held) < self.max_hosts and self.heap_hosts != 0:
            due = self.next_poll if due is None else min(due, self.next_poll)
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
            self.release_idle(host)

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

    # -- held and deferred origins, crawl-wide (leases.py) ----------------------
    def origin_held(self, origin: str, delay: float, reason: str) -> None:
        if self.leases is not None:
            self.leases.hold(origin, delay, reason)

    def origin_deferred(self, origin: str) -> None:
        self.serve_parked(self.parts.clock(), {host_of_origin(origin)})

    def _kept_back(self, entry: Entry, inflight: bool = False, refused: bool = False) -> bool:
        """Whether a hold keeps ``entry`` back (parked if held, finished if deferred);
        ``refused``: a hold refused it in flight."""
        parts = self.parts
        state = parts.holds.state_of(entry.url, bool(entry.flags & FLAG_REVISIT))
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
        if not self.parts.holds.held:
            return []
        return [origin for origin in self.parts.holds.held if host_of_origin(origin) == host]

    def park(self, host: str, now: float) -> None:
        """Look at ``host`` again when its first hold ends, at least once a lease TTL; within a
        poll interval if none is held any more (a take answered after its URLs were unparked)."""
        ends = [self.parts.holds.held[origin].until for origin in self.held_origins(host)]
        until = min([*ends, now + self.lease_ttl]) if ends else now
        self.held[host].parked_until = max(until, now + self.poll_interval)
        self.reschedule(host)

    # -- the worker thread ---------------------------------------------------------
    def timing(self) -> dict[str, float]:
        timing = self.store.connection.timing()
        if self.worker is not None:
            for name, value in self.worker.timing().items():
                timing[name] = round(timing.get(name, 0) + value, 6)
        return timing

    def failures(self) -> int:
        worker = 0 if self.worker is None else self.worker.connection.failures
        return self.store.failures + worker

    def idle(self) -> bool:
        return self.worker is None or self.worker.idle()

    def settle(self, rounds: int = SETTLE_ROUNDS) -> bool:
        """Wait for the worker's answers and their callbacks (up to ``rounds``); whether nothing is left."""
        for _ in range(rounds):
            if self.idle():
                return True
            try:
                self.worker.drain()  # type: ignore[union-attr]
            except FrontierStoreError:
                return False  # reported to on_error by the worker
        return self.idle()

    def pending(self) -> bool:
        return bool(self.arrived or self.busy)

    def _failed(self, err: Exception, message: str = "The shared frontier's Redis commands failed: %s") -> None:
        logger.error(message, err)
        if self.parts.on_store_error is not None:
            self.parts.on_store_error(err)

    def _enqueued(self, entry: Any, bypass: bool, result: Any, late: bool = False) -> bool:
        """Whether the URL was new; ``late``: counted as new already."""
        host, parts = entry.host, self.parts
        if not result.new and not bypass:
            if late:
                parts.stats.inc_value("frontier/enqueued", -1)
                parts.stats.inc_value("frontier/duplicates")
                parts.memory_only.pop(entry.fingerprint, None)
            return False
        if result.listed:  # the heap count seen last is stale
            self.listings += 1
            self.heap_checked = -INFINITY
            if self.alive == 1:
                self.next_poll = 0.0  # a host is due on the heap and nobody else polls
        if result.mine and host in self.held:
            held = self.held[host]
            held.queued, held.head = result.queued, result.head
            if not is_parked(result.head):
                held.parked_until = 0.0  # work again (a held origin's URL is parked at its take)
            self.reschedule(host)
        if late:  # the engine may have been told there was nothing to do
            parts.wakeup.arm(self.next_due(parts.clock()), parts.clock())
        return True

    def poll_heap(self, now: float) -> bool:
        """Take due hosts from the shared heap (one per poll at or above this
        process's share); whether any came at once."""
        held = self.held
        room = min(self.max_hosts - len(held), POLL_BATCH if len(held) < self.share() else 1)
        if room <= 0 or now < self.next_poll or self.polling:
            return False
        before, listings = len(held), self.listings
        self.polling = True

        def polled(poll: Poll) -> None:
            candidates = [(host, score) for host, score in poll.due if host not in held][:room]
            try:
                self.leases.acquire(candidates, lambda acquired: self._acquired(poll, acquired, now, listings),
                                    self._poll_failed)
            except Exception:
                self.polling = False  # or this process never polls again (it starves)
                raise

        self.leases.poll(room, polled, self._poll_failed)
        return len(held) > before

    def _acquired(self, poll: Poll, acquired: list[Acquired], now: float, listings: int) -> None:
        """``listings``: :attr:`listings` when the poll was sent (one answered since: the poll may
        predate its listing, the count is stale)."""
        parts = self.parts
        self.polling = False
        if self.worker is not None:  # answered later
            now = parts.clock()
        stats = parts.stats
        self.heap_hosts = poll.hosts
        self.heap_checked = now if listings == self.listings else -INFINITY
        if acquired:  # know holds made since our last renewal before a take
            self.adopt_holds()
        for got in acquired:
            self.held[got.host] = HeldHost(got.queued, got.head, got.expires, now)
            parts.politeness.hold(got.host, now + got.wait)
            self.reschedule(got.host)
            if got.taken_over:
                stats.inc_value("frontier/leases_taken_over")
                stats.inc_value("frontier/recovered", got.recovered)
                logger.info("Took over %s from an expired lease: %d in-flight URL(s) back in its queue",
                            got.host, got.recovered)
            parts.handout.host_assigned(got.host)
        stats.inc_value("frontier/heap_polls")
        stats.inc_value("frontier/leases_acquired", len(acquired))
        stats.set_value("frontier/back_queues", len(self.held))
        interval = self.poll_interval
        wait = interval if poll.wait is None else min(interval, max(poll.wait, 0.005))
        load = len(self.held) / self.share()
        self.next_poll = now if acquired and load < 1 else now + wait * (1 + load)
        self._wake()

    # -- takes -------------------------------------------------------------------
    def _send(self, host: str) -> Any:
        held = self.held[host]
        held.taking, held.inflight = True, held.inflight + 1
        self.busy += 1
        self.heap.remove(host)
        return held

    def _answered(self, host: str) -> Any:
        """``host``'s take or release is answered; its HeldHost, if still held."""
        self.busy -= 1
        held = self.held.get(host)
        if held is not None:
            held.taking, held.releasing, held.inflight = False, False, max(0, held.inflight - 1)
        return held

    def _take_answered(self, host: str, taken: Taken) -> None:
        held = self._answered(host)
        if held is not None:
            held.inflight += 1  # until hand_out uses it
        self.arrived.append((host, taken))
        self._wake()

    def _busy_failed(self, host: str) -> None:
        if self._answered(host) is not None:
            self.reschedule(host)

    def hand_out(self, now: float) -> Request | None:
        while self.arrived:
            host, taken = self.arrived.popleft()
            held = self.held.get(host)
            if held is None:  # given away meanwhile (lease lost): its URL goes back
                if taken.entry is not None:
                    self.leases.put_back(host, taken.entry.fingerprint, taken.entry.level)
                continue
            held.inflight = max(0, held.inflight - 1)
            request = self.use_taken(host, taken, now)
            if request is not None:
                return request
        return None

    # -- idle releases and polls ---------------------------------------------------
    def release_idle(self, host: str) -> None:
        wait = self.wait(host)
        held = self._send(host)

        def released(outcome: tuple[int, int, float]) -> None:
            state, queued, head = outcome
            if (current := self._answered(host)) is None:
                return
            if state == 0:  # work came meanwhile: kept
                current.queued, current.head = queued, head
                self.reschedule(host)
            else:
                self.drop(host)
                self.parts.stats.inc_value("frontier/leases_released")
            self._wake()

        held.releasing = True
        self.leases.release(host, wait, True, held.heap_score, released, lambda err: self._busy_failed(host))

    def _wake(self) -> None:
        if self.worker is None:  # answered at once, inside the engine's own call
            return
        now = self.parts.clock()
        self.parts.wakeup.arm(self.next_due(now), now)

    def _poll_failed(self, err: Exception) -> None:
        self.polling = False

    # -- periodic upkeep, every third of FRONTIER_LEASE_TTL ---------------------------
    def renew(self) -> None:
        """Extend the leases, repair in-flight sets, give back late or excess hosts, share holds."""
        trips = self.timing()["redis/reactor_round_trips"]
        try:
            waits = {host: self.wait(host) for host in self.held}
            for host, expires in self.leases.renew(waits).items():
                held = self.held.get(host)
                if held is None:
                    continue
                if expires != -1:
                    held.heap_score = expires
                elif not held.releasing:  # not our own release, whose answer comes later
                    self.lost(host)
            self.alive = max(1, self.leases.heartbeat(self.lease_ttl))
            self.share_holds()
            # not while a take is on its way: its URL is in flight in Redis, not yet here
            if self.failures() != self._failures_seen and not self.pending():
                self._failures_seen = self.failures()
                self.repair_inflight()
            self.heap_hosts, self.heap_checked = self.leases.poll(0).hosts, self.parts.clock()
            self.give_away_late()
            self.rebalance()
        except FrontierStoreError as err:
            self._failed(err, "Renewing the frontier's host leases failed: %s")
        finally:
            self.upkeep_round_trips += int(self.timing()["redis/reactor_round_trips"] - trips)

    def lost(self, host: str) -> None:
        self.drop(host)
        self.parts.handout.note("leases_lost", "Lease on %s taken over by another process (this one "
                                 "stalled longer than FRONTIER_LEASE_TTL)", host)

    def repair_inflight(self) -> None:
        """After a retried Redis call: put back in-flight URLs this process is not fetching."""
        mine: dict[str, set[int]] = {}
        for record in self.parts.inflight.values():
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
                self.reschedule(host)
        self.parts.stats.inc_value("frontier/inflight_repaired", len(lost))
        logger.warning("%d URL(s) left in flight by a retried Redis call went back to their queues", len(lost))

    def fetching(self) -> set[str]:
        """Hosts with a request of ours in flight (under this lease or an earlier one)."""
        return {record.host for record in self.parts.inflight.values()}

    def give_away_late(self) -> None:
        now = self.parts.clock()
        fetching = self.fetching()
        for host, held in list(self.held.items()):
            due = max(self.parts.politeness.ready_at(host), held.since, held.parked_until)
            if not (held.inflight or host in fetching or not held.queued or now - due <= self.max_lateness):
                self._give_back(host, "frontier/leases_given_away")

    def rebalance(self) -> None:
        """Give back hosts held above this process's share plus one (none fetching)."""
        excess = len(self.held) - self.share() - 1
        if self.alive < 2 or excess <= 0:
            return
        fetching = self.fetching()
        idle = [host for host, held in self.held.items() if not held.inflight and host not in fetching]
        for host in idle[:excess]:
            self._give_back(host, "frontier/leases_rebalanced")

    def _give_back(self, host: str, stat: str) -> None:
        self.leases.release(host, self.wait(host), False, self.held[host].heap_score)
        self.drop(host)
        self.parts.stats.inc_value(stat)

    def share_stats(self) -> None:
        stats, leases = self.parts.stats, self.leases
        for name, value in self.timing().items():
            stats.set_value(name, value)
        stats.set_value("redis/upkeep_reactor_round_trips", self.upkeep_round_trips)
        values = getattr(stats, "get_stats", lambda: getattr(stats, "values", {}))()
        deltas = []
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or name.startswith("distributed/"):
                continue
            if name in CRAWL_WIDE_STATS:  # the same value in every process: the latest, not a sum
                leases.set_stat(name, value)
                continue
            delta = value - self._pushed.get(name, 0)
            if delta:
                deltas.append((name, delta))
                self._pushed[name] = value
        leases.add_stats(deltas)

    # -- crawl-wide holds, shared at each renewal ---------------------------------------
    def busy_here(self) -> bool:
        """Work here that no hold keeps back, or a pushback's pause waited out."""
        parts = self.parts
        if parts.unfiled or parts.holds.waiting_out() or any(
                held.queued and not held.parked for held in self.held.values()):
            return True
        return any(not record.held and parts.holds.state_of(record.entry.url) is None
                   for record in parts.inflight.values())

    def share_holds(self) -> None:
        """Mark the crawl active, or after the idle bound defer every held origin; adopt the crawl's holds."""
        parts = self.parts
        found = {}
        if self.busy_here():
            self.leases.mark_active()
        else:
            idle = max(parts.idle_close, 2 * self.lease_ttl)  # a killed process's hosts are taken over first
            found = self.leases.defer_idle(idle)
        for origin, (_, reason) in found.items():
            why = f"held when nothing else was left: {reason}"
            parts.holds.defer(origin, why)
            parts.admission.defer([], origin, why)
        self.adopt_holds(unpark=bool(found))

    def adopt_holds(self, unpark: bool = False) -> None:
        """Hold and defer here what any process held or deferred."""
        parts = self.parts
        now = parts.clock()
        for origin, (left, reason) in self.leases.held().items():
            if origin not in parts.holds.deferred:
                parts.holds.hold(origin, now + left, reason)
        for origin, (reason, _) in self.store.hosts.deferrals().items():
            if origin not in parts.holds.deferred:
                parts.holds.defer(origin, reason)
                parts.admission.defer([], origin, reason)
                unpark = True
        if unpark:
            self.serve_parked(now)

    def retry_deferred(self) -> None:
        """The first process of a run requeues the previous run's deferred URLs at the top level."""
        if not self.leases.take_deferrals():
            return
        fingerprints = self.store.urls.take_deferred()
        top = self.levels - 1
        by_host: dict[str, list[Entry]] = {}
        for entry in self.store.urls.get_many(fingerprints).values():
            by_host.setdefault(entry.host, []).append(entry._replace(level=top))
        for host, entries in by_host.items():
            self.leases.enqueue(host, entries, force=True)
        self.retried.update(by_host)
        self.parts.stats.set_value("frontier/deferred_retried", len(fingerprints))
        logger.info("Retrying %d URLs deferred by the previous run first", len(fingerprints))

    def end_holds(self, now: float) -> None:
        """End the holds due and unpark their hosts held here."""
        holds = self.parts.holds
        due = holds.next_release()
        if due is None or due > now:
            return
        before = set(holds.held)
        holds.release_due(now)
        self.unpark(before - set(holds.held), now)

    def unpark(self, origins: Iterable[str], now: float) -> None:
        for host in {host_of_origin(origin) for origin in origins}:
            held = self.held.get(host)
            if held is None:
                continue  # its owner, or its next one, takes the parked URLs in turn
            count, head = self.leases.unpark(host)
            if count:
                self.parts.stats.inc_value("frontier/unparked", count)
                held.head = head
            held.parked_until = 0.0
            self.reschedule(host)
        self.parts.wakeup.arm(self.next_due(now), now)

    def serve_parked(self, now: float, hosts: set[str] | None = None) -> None:
        """Parked hosts (of ``hosts``, default all) are due again."""
        parked = [host for host, held in self.held.items()
                  if held.parked and (hosts is None or host in hosts)]
        for host in parked:
            self.held[host].parked_until = 0.0
            self.reschedule(host)
        if parked:
            self.parts.wakeup.arm(self.next_due(now), now)
