"""The shared dispatch's Redis round trips off the reactor thread.

In a crawl (a running reactor) the per-page lease commands of
:class:`~extensions.backends.redis.dispatch.SharedDispatch` go through a
worker thread with its own Redis connection
(:mod:`extensions.backends.redis.worker`), in one FIFO, batched into one
pipeline per round trip, while Scrapy's synchronous scheduler calls return
at once:

* ``enqueue`` hands the ENQUEUE script to the worker and returns True (the
  URL-seen cache said new); Redis' answer comes back on the reactor thread
  and, for a URL another process knew, moves the count from
  ``frontier/enqueued`` to ``frontier/duplicates``;
* ``next_request`` sends the take of each due held host (at most
  :data:`TAKES_AHEAD` on their way) and hands out the answered ones
  (:meth:`OffReactor.hand_out`); a host whose take or idle release is on
  its way is off the heap and counted in flight, so politeness is
  unchanged: one request per host in flight, and only under our lease;
* finishes, requeues and put-backs are writes in the same FIFO, so a page's
  FINISH reaches Redis after the ENQUEUEs of its links: a ``kill -9`` that
  loses queued jobs loses links only with their page's "done" (the page,
  in flight in Redis, is fetched again after its lease expires);
* AOPIC's payment of a fetched page (the ledger's CASH script and its
  links' rows, :meth:`~extensions.backends.redis.ledger.SharedLedger.distribute_then`)
  goes the same way on a single Redis: the last item pipeline schedules the
  links when the answer is in, while the engine still holds the page's
  request, so their ENQUEUEs precede its FINISH here too;
* polls of the shared heap and acquisitions go the same way; every answer
  wakes the engine (the dispatch's ``next_due`` is now);
* the end of the crawl: a process that holds nothing and fetches nothing
  waits for what is on the worker's way before it answers whether work is
  pending (:meth:`OffReactor.settle`): an enqueue may list a host yet, a
  poll acquire one; merely answering "yes" while a poll was on its way kept
  an idle process open for ever, since each engine cycle sends a poll just
  before it asks.

On a Redis Cluster too: each command's keys share one slot (a host's
``{T}``, a heap shard's ``{heap-N}``), so the worker's pipelines may mix
slots; only the order *between* masters within one round trip is not
kept, and nothing relies on it (what follows from an answer goes in the
next round trip). Lease renewals, hand-backs of late or excess hosts, holds and the
end-of-crawl checks stay synchronous calls (per host or per third of the
TTL, not per page), through the same FIFO. A take answered but not handed
out at close goes back to its queue; so does one answered for a host lost
meanwhile. Without a running reactor (tests, tools) every call is answered
at once (:class:`~extensions.backends.redis.worker.DirectIO`), as before.
"""

from __future__ import annotations

import logging
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import Request

from extensions.backends.redis.leases import Acquired, Poll, Taken, is_parked
from extensions.backends.redis.worker import (
    DirectIO,
    RedisWorker,
    running_reactor,
    start_worker,
)
from extensions.frontier.politeness import INFINITY
from extensions.frontier.store import FrontierStoreError

if TYPE_CHECKING:
    from extensions.backends.redis.dispatch import SharedDispatch

logger = logging.getLogger(__name__)

POLL_BATCH = 16  # hosts taken per poll at most
TAKES_AHEAD = 16  # takes (and idle releases) on their way to Redis at most
SETTLE_ROUNDS = 4  # waits for the worker's answers (and what they send) in has_pending


@dataclass(slots=True)
class HeldHost:
    """A host this process holds a lease on."""

    queued: int  # its back-queue length at our last look
    head: float  # back-queue score of its best queued URL (inf: none)
    heap_score: float  # the lease expiry we last put on the heap (ms)
    since: float  # when we took it (local clock)
    inflight: int = 0  # requests of ours in flight, and a take waiting for its answer
    taking: bool = False  # a take or release is on its way to Redis (off the heap until it answers)
    # when to look at its queue again: it holds only held origins' URLs (0: not so)
    parked_until: float = 0.0

    @property
    def parked(self) -> bool:
        """Its queue holds only URLs a hold keeps back (at our last look)."""
        return self.parked_until > 0.0


class OffReactor:
    """The asynchronous side of one shared dispatch (see the module docstring)."""

    def __init__(self, dispatch: SharedDispatch) -> None:
        self.dispatch = dispatch
        self.worker: RedisWorker | None = None
        #: answered takes, waiting for next_request: (host, what the take found)
        self.arrived: deque[tuple[str, Taken]] = deque()
        self.busy = 0  # takes and releases on their way
        self.polling = False  # a poll of the shared heap is on its way

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        """Start the worker thread if a reactor runs (a crawl)."""
        reactor = running_reactor()
        if reactor is not None:
            self.worker = start_worker(self.dispatch.store, reactor.callFromThread, self._failed)
            self.dispatch.leases.io = self.worker

    def drain(self) -> list[tuple[str, Taken]]:
        """Wait for every answer; the takes answered and not handed out."""
        if self.worker is not None:
            self.worker.drain()
        left, self.arrived = list(self.arrived), deque()
        return left

    def stop(self) -> None:
        """Send what the worker holds; lease commands go the store's way again."""
        if self.worker is not None:
            self.worker.stop()
            self.dispatch.leases.io = DirectIO(self.dispatch.store)
            self.worker = None

    def timing(self) -> dict[str, float]:
        """Round trips and seconds waiting for Redis (``redis/*`` stats),
        the store's connection and the worker's added."""
        timing = self.dispatch.store.connection.timing()
        if self.worker is not None:
            for name, value in self.worker.timing().items():
                timing[name] = round(timing.get(name, 0) + value, 6)
        return timing

    def failures(self) -> int:
        """Failed Redis calls so far (retried), the worker's included."""
        worker = 0 if self.worker is None else self.worker.connection.failures
        return self.dispatch.store.failures + worker

    def idle(self) -> bool:
        """Whether nothing sent through the worker is still on its way."""
        return self.worker is None or self.worker.idle()

    def settle(self, rounds: int = SETTLE_ROUNDS) -> bool:
        """Wait (the reactor too) for what the worker has on its way and
        run its callbacks, which may send more (an acquisition after a
        poll, a listing after an enqueue), up to ``rounds`` times; whether
        nothing is left. For an idle process only: the engine asks
        :meth:`SharedDispatch.has_pending` just after ``next_request``,
        whose poll of the heap is then always on its way."""
        for _ in range(rounds):
            if self.idle():
                return True
            try:
                self.worker.drain()  # type: ignore[union-attr]
            except FrontierStoreError:
                return False  # reported to on_error by the worker
        return self.idle()

    def pending(self) -> bool:
        """Whether a take or release is on its way, or a take answered and not handed out."""
        return bool(self.arrived or self.busy)

    def _failed(self, err: Exception) -> None:
        """A Redis command sent by the worker failed after its retries."""
        logger.error("The shared frontier's Redis commands failed: %s", err)
        if self.dispatch.parts.on_store_error is not None:
            self.dispatch.parts.on_store_error(err)

    # -- enqueue -------------------------------------------------------------------
    def enqueue(self, entry: Any, bypass: bool) -> bool:
        """File ``entry``; whether it was new (True while Redis has not answered)."""
        answered: list[bool] = []
        late = False
        self.dispatch.leases.enqueue_then(entry.host, [entry], bypass,
                                 lambda results: answered.append(self._enqueued(entry, bypass, results[0], late)))
        late = True  # not answered at once: the worker thread answers later
        return answered[0] if answered else True

    def _enqueued(self, entry: Any, bypass: bool, result: Any, late: bool = False) -> bool:
        """Redis' answer to an enqueue; whether the URL was new. ``late``:
        the enqueue was counted as new already, a duplicate is counted now."""
        dispatch = self.dispatch
        host, parts = entry.host, dispatch.parts
        if not result.new and not bypass:
            if late:  # counted as enqueued when it was handed to the worker
                parts.stats.inc_value("frontier/enqueued", -1)
                parts.stats.inc_value("frontier/duplicates")
                parts.memory_only.pop(entry.fingerprint, None)
            return False
        if result.listed:  # the heap count seen last is stale (its LIST is sent before any later call)
            dispatch.polls.checked = -INFINITY
            if dispatch.polls.alive == 1:
                dispatch.polls.next_poll = 0.0  # a host is due on the heap and nobody else polls
        if result.mine and host in dispatch.held:
            held = dispatch.held[host]
            held.queued, held.head = result.queued, result.head
            if not is_parked(result.head):
                held.parked_until = 0.0  # work again (a held origin's URL is parked at its take)
            dispatch.reschedule(host)
        if late:  # the engine may have been told there was nothing to do
            parts.wakeup.arm(dispatch.next_due(parts.clock()), parts.clock())
        return True

    def poll_heap(self, now: float) -> bool:
        """Take due hosts from the shared heap if there is room; whether any
        came (through the worker thread: never at once, the answer wakes the
        engine). The more hosts a process holds, the less often it polls, and
        at or above its share it takes one host per poll, so that idle
        processes get the new hosts first."""
        dispatch = self.dispatch
        held = dispatch.held
        room = min(dispatch.max_hosts - len(held), POLL_BATCH if len(held) < dispatch.share() else 1)
        if room <= 0 or now < dispatch.polls.next_poll:
            return False
        if self.worker is not None:
            self.poll(room)
            return False
        poll = dispatch.leases.poll(room)
        return self.polled(poll, dispatch.leases.acquire(self._candidates(poll, room)), now)

    def _candidates(self, poll: Poll, room: int) -> list[tuple[str, bytes]]:
        return [(host, score) for host, score in poll.due if host not in self.dispatch.held][:room]

    def polled(self, poll: Poll, acquired: list[Acquired], now: float) -> bool:
        """The hosts a poll acquired are held here; whether any came."""
        dispatch = self.dispatch
        parts = dispatch.parts
        stats = parts.stats
        dispatch.polls.hosts, dispatch.polls.checked = poll.hosts, now
        if acquired:  # a host given away may have an origin held since our last renewal: know it before a take
            dispatch.upkeep.adopt_holds()
        for got in acquired:
            dispatch.held[got.host] = HeldHost(got.queued, got.head, got.expires, now)
            parts.politeness.hold(got.host, now + got.wait)
            dispatch.reschedule(got.host)
            if got.taken_over:
                stats.inc_value("frontier/leases_taken_over")
                stats.inc_value("frontier/recovered", got.recovered)
                logger.info("Took over %s from an expired lease: %d in-flight URL(s) back in its queue",
                            got.host, got.recovered)
            parts.signals.host_assigned(got.host)
        stats.inc_value("frontier/heap_polls")
        stats.inc_value("frontier/leases_acquired", len(acquired))
        stats.set_value("frontier/back_queues", len(dispatch.held))
        interval = dispatch.poll_interval
        wait = interval if poll.wait is None else min(interval, max(poll.wait, 0.005))
        load = len(dispatch.held) / dispatch.share()
        dispatch.polls.next_poll = now if acquired and load < 1 else now + wait * (1 + load)
        return bool(acquired)

    # -- takes -------------------------------------------------------------------
    def _send(self, host: str) -> Any:
        """Mark ``host`` busy (off the heap, one more in flight)."""
        held = self.dispatch.held[host]
        held.taking, held.inflight = True, held.inflight + 1
        self.busy += 1
        self.dispatch.heap.remove(host)
        return held

    def _answered(self, host: str) -> Any:
        """``host``'s take or release is answered: not busy any more; its HeldHost, if still held."""
        self.busy -= 1
        held = self.dispatch.held.get(host)
        if held is not None:
            held.taking, held.inflight = False, max(0, held.inflight - 1)
        return held

    def take(self, host: str) -> None:
        """Send ``host``'s take; :meth:`hand_out` gives its request later."""
        self._send(host)
        self.dispatch.leases.take(host, self.dispatch.held_origins(host),
                                       lambda taken: self._take_answered(host, taken),
                                       lambda err: self._busy_failed(host))

    def _take_answered(self, host: str, taken: Taken) -> None:
        held = self._answered(host)
        if held is not None:
            held.inflight += 1  # until hand_out uses it
        self.arrived.append((host, taken))
        self.dispatch.parts.wakeup.arm(self.dispatch.next_due(self.dispatch.parts.clock()), self.dispatch.parts.clock())  # next_due is now: the engine asks

    def _busy_failed(self, host: str) -> None:
        if self._answered(host) is not None:
            self.dispatch.reschedule(host)

    def hand_out(self, now: float) -> Request | None:
        """A request from the answered takes, in the order they were sent."""
        dispatch = self.dispatch
        while self.arrived:
            host, taken = self.arrived.popleft()
            held = dispatch.held.get(host)
            if held is None:  # given away meanwhile (lease lost): its URL goes back
                if taken.entry is not None:
                    dispatch.leases.put_back(host, taken.entry.fingerprint, taken.entry.level)
                continue
            held.inflight = max(0, held.inflight - 1)
            request = dispatch.use_taken(host, taken, now)
            if request is not None:
                return request
        return None

    # -- idle releases and polls ---------------------------------------------------
    def release_idle(self, host: str) -> None:
        """Give back a host whose queue looked empty, unless work came meanwhile."""
        dispatch = self.dispatch
        wait = dispatch.wait(host)
        held = self._send(host)

        def released(outcome: tuple[int, int, float]) -> None:
            if self._answered(host) is not None:
                dispatch.released(host, outcome)
                dispatch.parts.wakeup.arm(dispatch.next_due(dispatch.parts.clock()), dispatch.parts.clock())

        dispatch.leases.release(host, wait, True, held.heap_score, released,
                                     lambda err: self._busy_failed(host))

    def poll(self, room: int) -> None:
        """Poll the shared heap and acquire due hosts through the worker; the answer goes to :meth:`polled`."""
        if self.polling:
            return
        self.polling = True
        leases = self.dispatch.leases

        def polled(poll: Poll) -> None:
            try:
                leases.acquire(self._candidates(poll, room),
                                    lambda acquired: self._acquired(poll, acquired), self._poll_failed)
            except Exception:
                self.polling = False  # or this process never polls again (it starves)
                raise

        leases.poll(room, polled, self._poll_failed)

    def _acquired(self, poll: Poll, acquired: list[Any]) -> None:
        self.polling = False
        now = self.dispatch.parts.clock()
        self.polled(poll, acquired, now)
        self.dispatch.parts.wakeup.arm(self.dispatch.next_due(now), now)

    def _poll_failed(self, err: Exception) -> None:
        self.polling = False
