"""Host dispatch: the part of the frontier that decides which host fetches next.

The frontier composes exactly one :class:`HostDispatch`: Mercator's front
queues, back queues and host heap in one process
(:mod:`.localdispatch`), or a backend's shared one (hosts taken under a
lease, several processes on one frontier). Both order due hosts by
:func:`ready_order`, and get the frontier's shared parts as
:class:`FrontierParts`.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from scrapy import Request

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.admission import Admission
from extensions.frontier.announce import FrontierSignals
from extensions.frontier.handout import HandOut
from extensions.frontier.holds import OriginHolds
from extensions.frontier.hostkey import HostKey
from extensions.frontier.inflight import InFlight, InFlightTable
from extensions.frontier.politeness import Politeness
from extensions.frontier.prioritizer import Prioritizer
from extensions.frontier.noisy import OnceLog
from extensions.frontier.urlseen import URLSeen
from extensions.frontier.wakeup import WakeUpTimer
from extensions.frontier.store import Entry, FrontierStore

#: subtracted from a rate-limited host's order: ahead of every level
RATE_LIMITED_FIRST = 1 << 20


def ready_order(level: int, rate_limited: bool) -> float:
    """The order of a due host among those ready at once (lowest first): by its
    head URL's level, except that a host whose politeness gap is longer than
    the common delay is served as soon as it is due; it takes only one fetch
    per gap, so it cannot crowd the others out, and a Crawl-delay host left to
    wait by level would make the crawl's tail."""
    return -level - (RATE_LIMITED_FIRST if rate_limited else 0)


@dataclass(eq=False)
class FrontierParts:
    """What the frontier shares with its host-dispatch strategy."""

    store: FrontierStore
    politeness: Politeness
    holds: OriginHolds
    inflight: InFlightTable
    stats: Any
    clock: Callable[[], float]
    wall_clock: Callable[[], float]
    prioritizer: Prioritizer
    seen: URLSeen
    hostkey: HostKey
    ledger: AOPICLedger | None
    idle_close: float
    handout: HandOut  # a dequeued entry -> the request to fetch, or None
    admission: Admission  # rows refused or deferred
    noisy: OnceLog  # noisy events: logged once, then counted
    signals: FrontierSignals  # host_assigned: a host got a queue here (DNS prefetch)
    wakeup: WakeUpTimer  # wakes the engine at a due time
    #: a store failure outside a scheduler call (None: raise it)
    on_store_error: Callable[[Exception], None] | None = None
    memory_only: dict[int, Request] = field(default_factory=dict)
    unfiled: deque[Request] = field(default_factory=deque)


class StoreIO(Protocol):
    """A worker thread that carries a shared dispatch's store round trips."""

    #: the running worker a shared AOPIC ledger may send a page's payment
    #: through without the reactor waiting, or None: pay at once
    worker: Any

    def settle(self) -> None:
        """Wait for the writes on their way, so a read on the store sees them."""


class HostDispatch(Protocol):
    """A host-dispatch strategy (see the module docstring)."""

    #: how a request that cannot be serialised is described in the log
    memory_only_note: str
    #: priority levels (front queues) it orders URLs by
    levels: int
    #: its store round trips' worker thread (None: they are made on this thread)
    io: StoreIO | None

    def bind(self, parts: FrontierParts) -> None:
        """Take the frontier's parts (called once, by the frontier)."""

    def open(self) -> None:
        """The store is open: check it suits this strategy, set up."""

    def resume(self) -> None:
        """The ledger is loaded: restore or rebuild queues, retry deferred origins, join the crawl."""

    def start(self, looping_call: Callable[[Callable[[], None]], Any] | None) -> None:
        """Start periodic work of the strategy's own (lease renewals)."""

    def close(self, records: list[InFlight]) -> None:
        """Closing: put unfinished requests (``records``) back, spill buffers."""

    def leave(self, reason: str) -> None:
        """After the closing gauges: leave the crawl, log the close."""

    def checkpoint(self) -> None:
        """After the frontier's checkpoint: the strategy's own."""

    def __len__(self) -> int:
        """Requests queued for this process (plus the unfiled ones)."""

    def has_pending(self) -> bool:
        """Whether there is work anywhere (Scrapy's has_pending_requests)."""

    def host_of(self, request: Request, host: str) -> str:
        """The politeness key filed with ``request`` (``host``: its URL's host)."""

    def enqueue(self, entry: Entry, bypass: bool) -> bool:
        """File a new entry (``bypass``: a dont_filter copy); whether it was new."""

    def next_request(self, now: float) -> Request | None:
        """The best request of a host that may fetch now (in flight after)."""

    def next_due(self, now: float) -> float | None:
        """When the engine should ask again (None: on its own events only)."""

    def reschedule(self, host: str) -> None:
        """``host``'s politeness changed: its place on the host heap."""

    def scheduled(self, host: str) -> bool:
        """Whether ``host`` is on the host heap."""

    def hosts_in_use(self) -> set[str]:
        """The hosts this process serves now (their politeness state stays)."""

    def in_memory(self) -> int:
        """Queue entries buffered in memory."""

    def queued_by_level(self) -> dict[int, int]:
        """URLs waiting in each front queue (empty: no front queues kept)."""

    def finish(self, record: InFlight) -> None:
        """The engine is done with a request: its row's final status."""

    def promote(self, entry: Entry, level: int) -> bool:
        """A queued URL's cash rose to ``level``: move it up; whether it moved."""

    def revisit(self, entry: Entry, level: int) -> None:
        """AOPIC revisits a fetched page: queue it again at ``level``."""

    def origin_held(self, origin: str, delay: float, reason: str) -> None:
        """After the frontier held ``origin``: the strategy's part."""

    def origin_deferred(self, origin: str) -> None:
        """After the frontier deferred ``origin``: the strategy's part."""
