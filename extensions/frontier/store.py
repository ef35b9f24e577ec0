"""The frontier's storage seams, one narrow protocol per concern (as Frontera).

The :class:`URLTable` is authoritative: the queues can be rebuilt from its
queued and in-flight rows. A :class:`FrontierStore` hands out the tables; a
:class:`QueuedStore` the request queues too, for the frontier's local dispatch."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from enum import IntEnum
from typing import NamedTuple, Protocol, runtime_checkable


class FrontierStoreError(RuntimeError):
    """The store cannot be opened or written; the message names the file."""


class Status(IntEnum):
    """Status of a URL row, stored as a small int."""

    QUEUED = 0
    INFLIGHT = 1
    DONE = 2
    FAILED = 3
    EXCLUDED = 4
    DEFERRED = 5  # its origin could not be crawled in this run (see HostTable.deferrals)
    REFUSED = 6  # a URL filter, the trap filter, the host budget or the address policy said no


#: meta key: the origins a single-process frontier holds (JSON origin -> reason), for tools
HELD_META = "held_origins"

#: Entry.flags bits.
FLAG_DONT_FILTER = 1
FLAG_BLOB = 2  # the request is in Entry.blob (request_to_dict + pickle)
FLAG_MEMORY = 4  # the request could not be serialised; kept in memory only
FLAG_HAS_DEPTH = 8  # request.meta had a 'depth' key
FLAG_REVISIT = 16  # queued again by the re-visit schedule (its request carries the validators)


class Entry(NamedTuple):
    """One URL as the frontier stores it; ``level`` is its front queue."""

    fingerprint: int
    url: str
    host: str
    level: int = 0
    priority: int = 0
    depth: int = 0
    referer: str | None = None
    flags: int = 0
    extra: str | None = None  # JSON of the compact meta keys and callback names
    blob: bytes | None = None


@runtime_checkable
class RequestQueues(Protocol):
    """Named FIFO queues of fingerprints (signed 64-bit ints)."""

    def push(self, name: str, fingerprints: Sequence[int]) -> None:
        """Append at the tail, in order."""

    def push_front(self, name: str, fingerprints: Sequence[int]) -> None:
        """Put back at the head, so that ``fingerprints[0]`` pops first."""

    def pop(self, name: str, count: int) -> list[int]:
        """Remove and return up to ``count`` fingerprints from the head."""

    def length(self, name: str) -> int:
        """How many fingerprints ``name`` holds."""

    def clear(self) -> None:
        """Empty every queue (before a rebuild from the URL table)."""


@runtime_checkable
class URLTable(Protocol):
    """Every known URL by fingerprint; authoritative for resume."""

    def insert_new(self, entries: Sequence[Entry], now: float) -> list[bool]:
        """Insert each unknown entry as queued; per entry, whether it was new."""

    def requeue(self, entry: Entry, now: float) -> None:
        """Insert or overwrite ``entry`` with status queued (``dont_filter``)."""

    def get_many(self, fingerprints: Sequence[int]) -> dict[int, Entry]:
        """The entries of the known ``fingerprints``."""

    def set_status(
        self,
        fingerprints: Iterable[int],
        status: Status,
        now: float | None = None,
        only_from: Status | None = None,
    ) -> None:
        """Set the status (and fetch time ``now``); ``only_from``: only rows in that status."""

    def status_of(self, fingerprint: int) -> Status | None:
        """The status of one URL, None if unknown."""

    def iter_all(self, batch: int = 10_000) -> Iterator[tuple[int, int]]:
        """``(fingerprint, level)`` of every known URL (to rebuild a Bloom filter)."""

    def count_host(self, fingerprint: int, host: str) -> int:
        """How many URLs of ``host`` are known (``fingerprint``: any of them)."""

    def count_by_status(self) -> dict[Status, int]:
        """How many URLs in each status."""

    def take_deferred(self) -> list[int]:
        """Every deferred URL back to queued; their fingerprints."""


@runtime_checkable
class QueuedURLTable(URLTable, Protocol):
    """The URL table of a :class:`QueuedStore`, from which the local dispatch rebuilds its queues."""

    def iter_pending(self, batch: int = 10_000) -> Iterator[tuple[int, int]]:
        """``(fingerprint, level)`` of every queued or in-flight URL, in discovery order."""

    def requeue_inflight(self) -> int:
        """Every in-flight URL back to queued; return how many."""


@runtime_checkable
class SeenSet(Protocol):
    """An add-if-new set of fingerprints (possibly probabilistic)."""

    def add_if_new(self, fingerprints: Sequence[int]) -> list[bool]:
        """Add each fingerprint; True where it was (probably) not there."""

    def size_bytes(self) -> int:
        """Memory (or storage) the set takes, for ``frontier/bloom_size``."""


@runtime_checkable
class HostTable(Protocol):
    """Per-host state that survives a resume."""

    def add_hosts(self, hosts: Iterable[str]) -> None:
        """Record hosts (:meth:`host_count` counts them; the write may be buffered)."""

    def host_count(self) -> int:
        """How many distinct hosts are known."""

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        """Remember a host's robots.txt Crawl-delay (None: forget it)."""

    def crawl_delays(self) -> dict[str, float]:
        """Every host with a known Crawl-delay."""

    def set_widened(self, host: str, seconds: float) -> None:
        """Remember a host's delay widened after it pushed back (429, 503)."""

    def widened(self) -> dict[str, float]:
        """Every host whose delay was widened, with that delay."""

    def defer_origin(self, origin: str, reason: str, now: float) -> None:
        """Record why ``origin``'s URLs were deferred."""

    def deferrals(self) -> dict[str, tuple[str, float]]:
        """origin -> (reason, when) of every deferred origin."""

    def clear_deferrals(self) -> None:
        """Forget the deferrals (a resume retries them)."""


@runtime_checkable
class CashTable(Protocol):
    """AOPIC's per-URL cash, history and dividend mark (rows only for URLs given cash)."""

    def get_cash(self, fingerprints: Sequence[int]) -> dict[int, tuple[float, float, float, int]]:
        """``(cash, history, mark, visits)`` of the known ``fingerprints``."""

    def cash_count(self) -> int:
        """How many URLs have a cash row (Lambda's dividend is split among them)."""


@runtime_checkable
class WritableCashTable(CashTable, Protocol):
    """The cash table of a store whose rows :class:`~extensions.aopic.ledger.AOPICLedger`
    writes (a backend whose own ledger writes them, as Redis' scripts do, has none)."""

    def put_cash(self, rows: Sequence[tuple[int, float, float, float, int]]) -> None:
        """Insert or overwrite ``(fingerprint, cash, history, mark, visits)`` rows."""


@runtime_checkable
class ContentGroups(Protocol):
    """The content-seen test's verdict per URL: its group and whether it was a duplicate."""

    def set_content_group(self, fingerprint: int, group_id: int, duplicate: bool) -> None:
        """Record the URL's group (buffered until the next checkpoint)."""

    def content_group(self, fingerprint: int) -> int | None:
        """The URL's group, None if none was recorded."""


@runtime_checkable
class LinkTable(Protocol):
    """Per fetched page, its accepted outlinks' fingerprints in order, each once."""

    def record(self, source: int, targets: Sequence[int], url: str = "", target_urls: Sequence[str] = ()) -> None:
        """``source``'s outlinks, replacing an earlier list; URLs for stores that name nodes."""

    def targets_of(self, source: int) -> list[int] | None:
        """``source``'s recorded outlinks, None if it has no list."""

    def sources(self) -> int:
        """How many pages have a recorded list."""

    def scan(self, batch: int = 10_000) -> Iterator[list[tuple[int, list[int]]]]:
        """Every recorded ``(source, targets)`` once, in lists of up to ``batch``."""

    def node_urls(self) -> dict[int, str] | None:
        """The URL of every recorded node by fingerprint; None: see the URL table."""


class RevisitRecord(NamedTuple):
    """A fetched URL's re-visit history and next due time (filled by :mod:`extensions.revisit.policy`)."""

    fingerprint: int  # the URL's (URL database key)
    due: float  # wall-clock time it is next due; math.inf: not scheduled (taken, or gone)
    interval: float  # the current re-visit interval, seconds
    visits: int = 0  # fetches answered (200, 304, 404/410)
    changes: int = 0  # visits that found the page changed (the first fetch is not a change)
    first_visit: float = 0.0  # wall time of the first fetch
    last_visit: float = 0.0  # wall time of the latest fetch
    last_change: float = 0.0  # wall time the latest change was seen (first fetch: its time)
    content: int | None = None  # exact content fingerprint of the latest 200 (signed 64-bit)
    etag: str | None = None  # validators of the latest 200
    last_modified: str | None = None
    gone: int = 0  # consecutive 404/410 answers after a 200 (0: alive)


class RevisitCounts(NamedTuple):
    """The re-visit table in numbers, for stats."""

    records: int  # URLs with a record
    scheduled: int  # records with a finite due time
    gone: int  # records with ``gone > 0``


@runtime_checkable
class RevisitTable(Protocol):
    """Per-URL re-visit records and their due order (wall-clock; ``math.inf``: not scheduled)."""

    def get(self, fingerprints: Sequence[int]) -> dict[int, RevisitRecord]:
        """The records of the known ``fingerprints``."""

    def put(self, records: Sequence[RevisitRecord]) -> None:
        """Insert or replace each record (the last of a fingerprint wins)."""

    def take_due(self, now: float, limit: int) -> list[RevisitRecord]:
        """Up to ``limit`` records due at ``now``, earliest first, atomically unscheduled."""

    def next_due(self) -> float | None:
        """The earliest finite due time, None if nothing is scheduled."""

    def count_due(self, now: float) -> int:
        """How many records have ``due <= now``."""

    def counts(self) -> RevisitCounts:
        """Records, scheduled and gone (may scan the table: not per page)."""

    def scan(self, batch: int = 10_000) -> Iterator[list[RevisitRecord]]:
        """Every record once, in lists of up to ``batch``."""


class HostLoad(NamedTuple):
    """One host's share of the URL table (:meth:`URLCensus.census`)."""

    host: str
    queued: int  # its queue length: URLs waiting
    inflight: int  # handed out, not finished
    done: int  # fetched (rows trimmed on a Bloom-mode Redis store are not counted)
    last_fetch: float | None  # wall time its latest fetch ended, None if never
    next_due: float | None = None  # wall time its next fetch may start, where the store keeps it


class URLEvent(NamedTuple):
    """A finished URL row: a failed fetch (an error), or a refusal or exclusion (an outcome)."""

    url: str
    host: str
    status: Status
    at: float | None  # when: its fetch's end, else its discovery (None where not kept)
    reason: str | None  # why (a refusal's reason); None where the row keeps none


class Census(NamedTuple):
    """The URL table summed up in one pass (see :meth:`URLCensus.census`)."""

    busiest: list[HostLoad]  # most queued first, then in flight, then done
    errors: list[URLEvent]  # failed rows, newest first
    refusals: list[URLEvent]  # refused and excluded rows (outcomes, not errors), newest first
    fetched: int  # rows with a fetch time
    first_fetch: float | None  # earliest fetch end among them
    last_fetch: float | None  # latest
    fetched_since: int  # rows whose fetch ended at or after ``since``
    #: origin -> (reason, until wall time) of origins held now; None where
    #: holds are not kept in the store (a single process keeps them in memory)
    held: dict[str, tuple[str, float]] | None = None


@runtime_checkable
class URLCensus(Protocol):
    """Read-only summaries of the URL table for tools; it may scan every row."""

    def census(self, hosts: int, errors: int, since: float) -> Census:
        """The ``hosts`` busiest hosts, ``errors`` newest errors and refusals, fetches since ``since``."""


@runtime_checkable
class FrontierStore(Protocol):
    """One table object per concern plus the lifecycle; every store implements all of it."""

    urls: URLTable
    hosts: HostTable
    cash: CashTable
    groups: ContentGroups
    links: LinkTable
    revisits: RevisitTable
    census: URLCensus
    #: Whether the previous run closed cleanly.
    clean: bool
    #: Where the store lives (a file name, a Redis URL), for messages.
    location: str
    #: Requests sent to a networked store so far (0 for an embedded one).
    round_trips: int

    def open(self) -> None:
        """Open or create; raise :class:`FrontierStoreError` naming the file."""

    def checkpoint(self) -> None:
        """Make every change so far durable (one transaction commit)."""

    def close(self, clean: bool = True) -> None:
        """Checkpoint, record whether this was a clean close, release."""

    def get_meta(self, key: str) -> str | None:
        """A small persistent string (schema version, settings used)."""

    def set_meta(self, key: str, value: str) -> None:
        """Store a small persistent string (durable at the next checkpoint)."""

    def abandon(self) -> None:
        """Release without writing anything more (a simulated crash)."""

    def memory_usage(self) -> tuple[int, int] | None:
        """``(bytes, URLs)`` of the crawl in a server's memory; None where not measured."""


@runtime_checkable
class QueuedStore(FrontierStore, Protocol):
    """A store whose backend leaves the host dispatch to the frontier (``host_dispatch`` None)."""

    queues: RequestQueues
    urls: QueuedURLTable


@runtime_checkable
class WriteAheadStore(Protocol):
    """A store cheap enough to commit before every hand-out (``FRONTIER_WRITE_AHEAD``)."""

    def commit(self, before: Callable[[], None] | None = None) -> bool:
        """If anything changed: run ``before``, commit, return True; else False."""
