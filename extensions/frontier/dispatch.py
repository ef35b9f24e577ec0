"""Host dispatch: which host fetches next. The frontier composes one
:class:`HostDispatch`, local (:mod:`.localdispatch`) or a backend's shared one,
given :class:`FrontierParts`; both order due hosts by :func:`ready_order`."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from scrapy import Request
from scrapy.resolver import dnscache

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.admission import Admission
from extensions.frontier.holds import OriginHolds
from extensions.frontier.inflight import InFlightTable
from extensions.frontier.politeness import Politeness
from extensions.frontier.urlseen import URLSeen
from extensions.frontier.store import Entry, FrontierStore
from extensions.urls.split import host_of as url_host

if TYPE_CHECKING:
    from extensions.frontier.scheduler import WakeUpTimer

#: subtracted from a rate-limited host's order: ahead of every level
RATE_LIMITED_FIRST = 1 << 20


def ready_order(level: int, rate_limited: bool) -> float:
    """A due host's order among those ready at once (lowest first): its head URL's
    level; a host whose gap exceeds the common delay goes first."""
    return -level - (RATE_LIMITED_FIRST if rate_limited else 0)


DOWNLOAD_SLOT = "download_slot"  # scrapy.core.downloader.Downloader.DOWNLOAD_SLOT


class HostKey:
    """Politeness keys, exactly Scrapy's downloader slot keys (``download_slot``
    meta, else the host, or its IP when ``per_ip``)."""

    def __init__(self, per_ip: bool = False) -> None:
        self.per_ip = per_ip

    @staticmethod
    def host_of(request: Request) -> str:
        """The part stored with the URL: meta slot or host name."""
        meta_slot = request.meta.get(DOWNLOAD_SLOT)
        if meta_slot is not None:
            return str(meta_slot)
        return url_host(request.url)  # urlparse(url).hostname, lower case, "" if none

    def key(self, host: str, explicit_slot: bool = False) -> str:
        """The downloader slot key of a stored host (IP in per-IP mode)."""
        if self.per_ip and not explicit_slot:
            return dnscache.get(host, host)
        return host

    def of_request(self, request: Request) -> str:
        """Scrapy's ``Downloader.get_slot_key(request)``."""
        explicit = request.meta.get(DOWNLOAD_SLOT) is not None
        return self.key(self.host_of(request), explicit)


class Handout(Protocol):
    """What a host dispatch asks of the frontier about the URLs it hands out."""

    def request_of(self, entry: Entry, cash: float | None = None) -> Request | None:
        """A dequeued entry's request, or None when it must not be fetched now."""

    def note(self, key: str, message: str, *args: Any) -> None:
        """A noisy event: logged once, then counted."""

    def host_assigned(self, host: str) -> None:
        """``host`` got a queue in this process (the ``host_assigned`` signal)."""


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
    seen: URLSeen
    hostkey: HostKey
    ledger: AOPICLedger | None
    idle_close: float
    handout: Handout
    admission: Admission  # rows refused or deferred
    wakeup: WakeUpTimer  # wakes the engine at a due time
    #: a store failure outside a scheduler call (None: raise it)
    on_store_error: Callable[[Exception], None] | None = None
    memory_only: dict[int, Request] = field(default_factory=dict)
    unfiled: deque[Request] = field(default_factory=deque)


class HostDispatch(Protocol):
    """A host-dispatch strategy: the methods of
    :class:`~extensions.frontier.localdispatch.LocalDispatch`, with their contracts."""

    #: how a request that cannot be serialised is described in the log
    memory_only_note: str
    #: priority levels (front queues) it orders URLs by
    levels: int
    #: its store round trips' worker thread, with ``settle()`` (wait for the
    #: writes on their way) and ``worker`` (the running thread a shared ledger
    #: may pay through and the URL table count a host's URLs through, or None);
    #: None: the round trips are made on this thread
    io: Any
