"""The shared dispatch's Redis round trips off the reactor thread.

In a crawl the per-page lease commands of
:class:`~extensions.backends.redis.dispatch.SharedDispatch` (enqueues, takes,
finishes, put-backs, polls, acquisitions, idle releases) go through one
worker thread (:mod:`extensions.backends.redis.worker`), in one FIFO, so a
page's FINISH reaches Redis after the ENQUEUEs of its links. A host whose
take or release is on its way is off the heap and counted in flight, so
politeness is unchanged. Renewals and hand-backs stay synchronous calls
through the same FIFO. Without a running reactor every call is answered at
once (:class:`~extensions.backends.redis.worker.DirectIO`).
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
    taking: bool = False  # a take or release is on its way (off the heap until it answers)
    parked_until: float = 0.0

    @property
    def parked(self) -> bool:
        """Its queue holds only URLs a hold keeps back (look again at ``parked_until``)."""
        return self.parked_until > 0.0


class OffReactor:
    """The asynchronous side of one shared dispatch."""

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
        """Send what the worker holds; lease commands go through the store again."""
        if self.worker is not None:
            self.worker.stop()
            self.dispatch.leases.io = DirectIO(self.dispatch.store)
            self.worker = None

    def timing(self) -> dict[str, float]:
        """``redis/*`` stats: the store's connection and the worker's, added."""
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
        """Wait (the reactor too) for the worker's answers and their callbacks,
        which may send more, up to ``rounds`` times; whether nothing is left."""
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
        self.dispatch.leases.enqueue(entry.host, [entry], bypass,
                                     lambda results: answered.append(self._enqueued(entry, bypass, results[0], late)))
        late = True  # not answered at once: the worker thread answers later
        return answered[0] if answered else True

    def _enqueued(self, entry: Any, bypass: bool, result: Any, late: bool = False) -> bool:
        """Redis' answer to an enqueue; whether the URL was new. ``late``: it
        was counted as new already, a duplicate is counted now."""
        dispatch = self.dispatch
        host, parts = entry.host, dispatch.parts
        if not result.new and not bypass:
            if late:
                parts.stats.inc_value("frontier/enqueued", -1)
                parts.stats.inc_value("frontier/duplicates")
                parts.memory_only.pop(entry.fingerprint, None)
            return False
        if result.listed:  # the heap count seen last is stale
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
        came at once (never through the worker). At or above its share a
        process takes one host per poll, so idle processes get new hosts first."""
        dispatch = self.dispatch
        held = dispatch.held
        room = min(dispatch.max_hosts - len(held), POLL_BATCH if len(held) < dispatch.share() else 1)
        if room <= 0 or now < dispatch.polls.next_poll or self.polling:
            return False
        before = len(held)
        self.poll(room, now)
        return len(held) > before

    def polled(self, poll: Poll, acquired: list[Acquired], now: float) -> bool:
        """The hosts a poll acquired are held here; whether any came."""
        dispatch = self.dispatch
        parts = dispatch.parts
        stats = parts.stats
        dispatch.polls.hosts, dispatch.polls.checked = poll.hosts, now
        if acquired:  # know holds made since our last renewal before a take
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
        self._wake()

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
                self._wake()

        dispatch.leases.release(host, wait, True, held.heap_score, released,
                                     lambda err: self._busy_failed(host))

    def poll(self, room: int, now: float) -> None:
        """Poll the shared heap and acquire due hosts (answer: :meth:`polled`,
        at ``now`` if answered at once)."""
        self.polling = True
        leases = self.dispatch.leases

        def polled(poll: Poll) -> None:
            candidates = [(host, score) for host, score in poll.due if host not in self.dispatch.held][:room]
            try:
                leases.acquire(candidates, lambda acquired: self._acquired(poll, acquired, now),
                               self._poll_failed)
            except Exception:
                self.polling = False  # or this process never polls again (it starves)
                raise

        leases.poll(room, polled, self._poll_failed)

    def _acquired(self, poll: Poll, acquired: list[Any], now: float) -> None:
        self.polling = False
        self.polled(poll, acquired, now if self.worker is None else self.dispatch.parts.clock())
        self._wake()

    def _wake(self) -> None:
        """Wake the engine at the dispatch's next due time (now, after the worker's answer)."""
        if self.worker is None:  # answered at once, inside the engine's own call
            return
        now = self.dispatch.parts.clock()
        self.dispatch.parts.wakeup.arm(self.dispatch.next_due(now), now)

    def _poll_failed(self, err: Exception) -> None:
        self.polling = False
