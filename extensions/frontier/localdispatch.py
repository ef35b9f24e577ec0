"""Mercator's host dispatch in one process: front queues, back queues, host heap. A held
origin's URLs are parked and released through one probe; after a crash the queues are
rebuilt from the URL table, after a clean close restored if the queue counts match."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from scrapy import Request

from extensions.frontier.dispatch import FrontierParts, ready_order
from extensions.frontier.queues import BackQueues, BiasedSelector, FrontQueues
from extensions.frontier.holds import origin_of
from extensions.frontier.hostheap import HostHeap
from extensions.frontier.inflight import InFlight
from extensions.frontier.store import FLAG_REVISIT, Entry, QueuedStore, Status

logger = logging.getLogger(__name__)


_BATCH = 10_000


class LocalDispatch:
    """Front queues, back queues and a host heap over the frontier's store."""

    memory_only_note = "kept in memory only"
    io = None  # the store's writes are made on this thread

    def __init__(self, front_queues: int = 8, back_queues: int = 48, queue_buffer: int = 256,
                 selector: BiasedSelector | None = None, refill_budget: int = 1024) -> None:
        self.levels = front_queues  # priority levels: one front queue each
        self.back_queues, self.queue_buffer = back_queues, queue_buffer
        self.selector, self.refill_budget = selector, refill_budget
        self.heap = HostHeap()
        self._probes: set[int] = set()  # one released URL per ended hold
        self._idle_since: float | None = None

    def bind(self, parts: FrontierParts) -> None:
        if not isinstance(parts.store, QueuedStore):
            raise TypeError("the frontier's own host dispatch keeps its queues in the store: "
                            f"{type(parts.store).__name__} has no request queues (a QueuedStore)")
        self.parts = parts
        self.store = parts.store
        self.front = FrontQueues(parts.store, self.levels, self.queue_buffer, self.selector)
        self.back = BackQueues(parts.store, self.back_queues, self.queue_buffer)

    # -- lifecycle -------------------------------------------------------------
    def open(self) -> None:
        """The store is open: check it suits this strategy, set up."""
        for queue in self.front.queues + self.back.queues:
            queue.drop_buffers()  # empty before open; this syncs the counts
        stored = (self.store.get_meta("front_queues"), self.store.get_meta("back_queues"))
        if stored not in ((None, None), self._shape()):  # written with other queue counts
            logger.info("Queue counts changed; rebuilding the frontier queues")
            self.store.clean = False

    def resume(self) -> None:
        """The ledger is loaded: restore or rebuild queues, retry deferred origins."""
        if self.store.clean:
            self._restore_clean()
        else:
            self._rebuild()
        self._retry_deferred()

    def start(self, looping_call: Callable[[Callable[[], None]], Any] | None) -> None:
        """Start periodic work of the strategy's own (none here)."""

    def close(self, records: list[InFlight]) -> None:
        """Closing: put unfinished requests (``records``) back, spill buffers."""
        for record in records:
            fp = record.entry.fingerprint
            self.store.urls.set_status([fp], Status.QUEUED, only_from=Status.INFLIGHT)
            self.store.queues.push_front(f"front/{self.front.level_of(record.entry)}", [fp])
        for hold in self.parts.holds.held.values():  # parked URLs are queued rows
            for entry in hold.parked.values():
                self.front.push(entry)
        for queue in self.front.queues:
            queue.spill()
        self.back.spill()
        self._record_shape()

    def leave(self, reason: str) -> None:
        """After the closing gauges: leave the crawl, log the close."""
        logger.info("Frontier closed (%s): %d requests left", reason,
                    self.parts.stats.get_value("frontier/queued", 0))

    def checkpoint(self) -> None:
        """After the frontier's checkpoint: the strategy's own (none here)."""

    def _shape(self) -> tuple[str, str]:
        return str(len(self.front.queues)), str(len(self.back.queues))

    def _record_shape(self) -> None:
        front, back = self._shape()
        self.store.set_meta("front_queues", front)
        self.store.set_meta("back_queues", back)

    def _restore_clean(self) -> None:
        try:
            hosts = self.back.restore(self._key_of)
        except ValueError as err:
            logger.info("Back queues inconsistent (%s); rebuilding", err)
            self.back.drop_buffers()
            self._rebuild()
            return
        for host in hosts:
            self.reschedule(host)

    def _retry_deferred(self) -> None:
        """A resumed crawl retries the previous run's deferred origins first (top front queue)."""
        if not self.store.hosts.deferrals():
            return
        fingerprints = self.store.urls.take_deferred()
        self.store.hosts.clear_deferrals()
        top = len(self.front.queues) - 1
        for entry in self.store.urls.get_many(fingerprints).values():
            self.front.push(entry._replace(level=top))
        self.parts.stats.set_value("frontier/deferred_retried", len(fingerprints))
        logger.info("Retrying %d URLs deferred by the previous run first", len(fingerprints))

    def _rebuild(self) -> None:
        """Refill the front queues from the URL table (see the module docstring)."""
        self.heap = HostHeap()
        store = self.store
        store.queues.clear()
        top = len(self.front.queues) - 1
        batches: dict[int, list[int]] = {}
        total = 0
        for fp, level in store.urls.iter_pending(_BATCH):
            level = min(top, max(0, level))
            batch = batches.setdefault(level, [])
            batch.append(fp)
            total += 1
            if len(batch) >= _BATCH:
                store.queues.push(f"front/{level}", batch)
                batches[level] = []
        for level, batch in batches.items():
            store.queues.push(f"front/{level}", batch)
        store.urls.requeue_inflight()
        for queue in self.front.queues:
            queue.drop_buffers()
        self.back.drop_buffers()
        self._record_shape()
        store.checkpoint()
        self.parts.stats.set_value("frontier/rebuilt", total)
        logger.warning(
            "The frontier in %s was not closed cleanly; rebuilt its queues from %d URL rows",
            self.store.location, total,
        )

    # -- queue state -----------------------------------------------------------
    def __len__(self) -> int:
        return len(self.front) + len(self.back) + len(self.parts.unfiled)

    def has_pending(self) -> bool:
        """Work to hand out; parked URLs alone for ``idle_close`` seconds are deferred."""
        holds = self.parts.holds
        if not holds.held:
            return len(self) > 0
        now = self.parts.clock()
        if self._busy() or holds.waiting_out():  # a pushback's pause is waited out, not deferred
            self._idle_since = None
            return True
        if self._idle_since is None:
            self._idle_since = now
        if now - self._idle_since < self.parts.idle_close:
            return True
        for origin, (reason, entries) in holds.defer_all_held("held when nothing else was left").items():
            self.parts.admission.defer(entries, origin, reason)
        self._probes.clear()
        return len(self) > 0

    def _busy(self) -> bool:
        """Work other than the probes of held origins."""
        if self.parts.unfiled:
            return True
        inflight = {record.entry.fingerprint for record in self.parts.inflight.values()}
        queued = len(self.front) + len(self.back)
        return queued > len(self._probes - inflight) or bool(inflight - self._probes)

    def hosts_in_use(self) -> set[str]:
        """The hosts this process serves now (their politeness state stays)."""
        return set(self.back.queue_of)

    def in_memory(self) -> int:
        return self.front.in_memory() + self.back.in_memory()

    def queued_by_level(self) -> dict[int, int]:
        """Each front queue's URLs (those already moved to a host's back queue not counted)."""
        return {level: queue.count for level, queue in enumerate(self.front.queues)}

    def host_of(self, request: Request, host: str) -> str:
        """The request's ``download_slot`` meta, else its host (Scrapy's slot key)."""
        return self.parts.hostkey.host_of(request) or host

    def _key_of(self, entry: Entry) -> str:
        return self.parts.hostkey.key(entry.host)

    # -- enqueue ---------------------------------------------------------------
    def enqueue(self, entry: Entry, bypass: bool) -> bool:
        """Insert the URL row (the URL-seen test) and push to its front queue."""
        now = self.parts.wall_clock()
        if bypass:
            self.store.urls.requeue(entry, now)
            self.parts.seen.remember(entry.fingerprint)
        elif not self.parts.seen.add(entry, now):
            return False
        self.front.push(entry)
        return True

    def promote(self, entry: Entry, level: int) -> bool:
        """A second copy at the higher level (the first becomes stale)."""
        fp = entry.fingerprint
        if level <= entry.level or fp in self.parts.memory_only:  # before the status look-up
            return False
        if self.store.urls.status_of(fp) != Status.QUEUED:
            return False
        moved = entry._replace(level=level)
        self.store.urls.requeue(moved, self.parts.wall_clock())
        self.front.push(moved)
        return True

    def revisit(self, entry: Entry, level: int) -> None:
        """A page queued again at ``level`` (a re-visit to its host's back queue, if any)."""
        again = entry._replace(level=level)
        self.store.urls.requeue(again, self.parts.wall_clock())
        host = self._key_of(again)
        if again.flags & FLAG_REVISIT and host in self.back.queue_of:
            self.back.push_revisit(host, again)
        else:
            self.front.push(again)

    def stale_copy(self, fingerprint: int) -> bool:
        """Whether this copy is stale (an AOPIC promotion fetched the other)."""
        return self.store.urls.status_of(fingerprint) != Status.QUEUED

    def _request_of(self, entry: Entry) -> Request | None:
        if self.parts.ledger is not None and self.stale_copy(entry.fingerprint):
            self.parts.stats.inc_value("frontier/stale_copies")
            return None
        return self.parts.handout.request_of(entry, None)

    # -- dispatch --------------------------------------------------------------
    def next_request(self, now: float) -> Request | None:
        """The best URL of the hosts politeness allows now (:func:`ready_order`)."""
        if self.parts.holds.held:
            self._release_holds(now)
        self._refill()
        politeness = self.parts.politeness
        return self.heap.serve_due(
            now, lambda host: ready_order(self.back.head_level(host), politeness.rate_limited(host)),
            lambda host: self._dispatch(host, now), politeness.ready_at, self.reschedule)

    def _dispatch(self, host: str, now: float) -> Request | None:
        """Take the head of ``host``'s back queue; None if it was unusable."""
        if host not in self.back.queue_of:
            return None
        entry = self.back.pop(host)
        while entry is not None and self.parts.holds and self._kept_back(entry):
            entry = self.back.pop(host)  # a held origin's URL: parked; the host's next
        request = None if entry is None else self._request_of(entry)
        if request is not None:  # before a refill can give the host a queue again
            self.parts.politeness.started(host, now)
        if entry is None or not self.back.length(host):
            self.back.release(host)
            self._refill()  # Mercator: an emptied back queue refills at once
        else:
            self.reschedule(host)
        if entry is None or request is None:
            return None
        self.parts.inflight.add(request, entry, host, now)
        self.store.urls.set_status([entry.fingerprint], Status.INFLIGHT)
        return request

    def reschedule(self, host: str) -> None:
        """``host``'s politeness changed: on the heap at its ready time if it has a back queue."""
        if host in self.back.queue_of:
            self.heap.place(host, self.parts.politeness.ready_at(host))

    def scheduled(self, host: str) -> bool:
        return host in self.heap

    def _refill(self) -> None:
        if not self.back.free or not len(self.front):
            return
        assigned = self.back.refill(self.front, self.refill_budget, self._key_of)
        for host in assigned:
            self.reschedule(host)
            self.parts.handout.host_assigned(host)
        self.parts.stats.set_value("frontier/back_queues", self.back.in_use())

    def next_due(self, now: float) -> float | None:
        """The earliest due host, or the end of the first hold."""
        due = self.heap.next_time()
        if self.back.free and len(self.front):
            due = now
        release = self.parts.holds.next_release()
        if release is not None:
            due = release if due is None else min(due, release)
        return due

    # -- fetch end -------------------------------------------------------------
    def finish(self, record: InFlight) -> None:
        """The engine is done with a request: its row's final status."""
        if record.excluded:
            return
        entry, parts = record.entry, self.parts
        if record.refused is not None:
            parts.admission.record_refused(entry, record.refused, parts.wall_clock(), known=True)
            return
        if not record.ok and (parts.holds or record.held) and self._kept_back(entry, True, record.held):
            return
        if entry.fingerprint in self._probes:
            self._probe_ended(entry)
        status = Status.DONE if record.ok else Status.FAILED
        self.store.urls.set_status([entry.fingerprint], status, parts.wall_clock(), only_from=Status.INFLIGHT)
        parts.stats.inc_value(f"frontier/{status.name.lower()}")

    # -- origins held and deferred ----------------------------------------------
    def origin_held(self, origin: str, delay: float, reason: str) -> None:
        """After the frontier held ``origin``: nothing more, URLs are parked as they are met."""

    def origin_deferred(self, origin: str) -> None:
        """After the frontier deferred ``origin``: nothing more, its parked URLs were deferred."""

    def _kept_back(self, entry: Entry, inflight: bool = False, refused: bool = False) -> bool:
        """Park or defer ``entry`` if its origin is held or deferred (a probe goes
        through); ``refused``: a hold refused it in flight."""
        parts = self.parts
        state = parts.holds.state_of(entry.url, bool(entry.flags & FLAG_REVISIT))
        if state is None and refused:
            self._probes.discard(entry.fingerprint)
            self.store.urls.set_status([entry.fingerprint], Status.QUEUED, only_from=Status.INFLIGHT)
            self.front.push(entry)
            parts.stats.inc_value("frontier/requeued_after_hold")
            return True
        if state is None or (not inflight and parts.ledger is not None and self.stale_copy(entry.fingerprint)):
            return False  # a stale copy (AOPIC promotion) is skipped as usual
        if state == "deferred":
            self._probes.discard(entry.fingerprint)
            origin = origin_of(entry.url)
            parts.admission.defer([entry], origin, parts.holds.deferred[origin])
            return True
        if state != "held" or (not inflight and entry.fingerprint in self._probes):
            return False
        self._probes.discard(entry.fingerprint)
        if inflight:
            self.store.urls.set_status([entry.fingerprint], Status.QUEUED, only_from=Status.INFLIGHT)
        parts.holds.park(entry)
        parts.stats.inc_value("frontier/parked")
        return True

    def _release_holds(self, now: float) -> None:
        """Holds whose time has come: one URL of each goes out as a probe."""
        for entry in self.parts.holds.release_due(now):
            self._probes.add(entry.fingerprint)
            self.front.push(entry)
            self.parts.stats.inc_value("frontier/hold_probes")

    def _probe_ended(self, entry: Entry) -> None:
        """A probe ended without a new hold: its origin's parked URLs are queued again."""
        self._probes.discard(entry.fingerprint)
        for parked in self.parts.holds.release(origin_of(entry.url)):
            self.front.push(parked)
