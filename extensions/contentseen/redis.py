"""The content-seen sets in Redis, shared by every crawler process of a crawl.

With the embedded sets (:mod:`~extensions.contentseen.exact`,
:mod:`~extensions.contentseen.nearindex`) each ``scrapy crawl`` process has
files of its own, so a page fetched by one process and its mirror fetched
by another are never compared. Here the exact set
(:class:`RedisContentSeen`, this module) and the near-duplicate index
(:class:`~extensions.contentseen.redisnear.RedisNearDuplicateIndex`) live
in one Redis, a single instance or a Redis Cluster, under the crawl's
prefix ``P`` (``FRONTIER_REDIS_PREFIX``), next to the shared frontier::

    P:contentseen:{X}:exact       hash  fingerprint (8 bytes, big-endian) -> first URL
    P:contentseen:{X}:near_docs   hash  simhash (8 bytes) -> records of the documents
                                        with it: doc id, group id (2 x 8 bytes),
                                        sketch and URL lengths (2 + 4 bytes),
                                        the sketch (256 bytes), the first URL
    P:contentseen:{tN-Y}:near_table  hash  permuted table N's key bits below its
                                        top 8 (3 bytes) -> simhashes (8 bytes each)
    P:contentseen:meta            hash  schema, distance, blocks (the index layout)
    P:contentseen:near_ids        int   document ids, reserved in blocks
    P:contentseen:clients         zset  process id -> heartbeat expiry (server ms)

``X`` is the top 12 bits of the fingerprint or simhash (three hex digits)
and ``Y`` the top 8 bits of the table's key: Redis Cluster hash tags, so a
3-master cluster spreads 4,096 exact partitions, 4,096 document partitions
and 10 x 256 table partitions over its shards; no key is hot (every page
touches different ones) and none grows past 1/4,096 of the crawl. The keys
are outside the frontier's ``P:{T}:*`` pattern, so each component deletes
only its own.

Round trips. A :class:`RedisContentStore` is one connection with one
non-transactional pipeline, shared by the exact set and the index: writes
whose answer nobody needs (storing a document in the index) wait and go
with the next read, the next page's exact test. Per page (counted by
``RedisContentStore.round_trips``, asserted in
``tests/test_contentseen_redis.py``):

=====================================  ==========================================
exact duplicate, or no text            1 (``HSETNX`` + ``HGET``)
new document                           1 (the index's candidates ride with the
                                       exact test, :meth:`RedisContentStore.ride`;
                                       storing it: 0)
near-duplicate or identical simhash    2 (+ the matched documents' records)
=====================================  ==========================================

A block of 1,024 document ids rides with a look-up, and the buffered writes
go with the next page or, at the latest, with the flush every
``CONTENTSEEN_FLUSH_INTERVAL`` seconds (no round trip when a page carried
them). First writer wins across processes: ``HSETNX`` keeps the first URL
of a fingerprint and ``HGET`` in the same pipeline reads whatever was kept.
Measured on loopback before schema 2 (100,000 new pages, 55-byte URLs):
330 microseconds and 390 bytes of Redis memory per page for both sets (75
exact, 140 the document, 165 its ten table entries), against SQLite's files
on disk; the sketch adds its 256 bytes to the document's record.

Lifetime (scrapy-redis conventions, as the frontier's Redis store):
``persist=False`` (``SCHEDULER_PERSIST`` off) deletes every content-seen key
of the crawl at a clean close, but only by the last process: each process
is in ``clients`` with an expiry renewed every third of ``ttl`` (riding on a
page's pipeline or the periodic flush), and a process that closes while
another one is alive leaves the keys, as
:class:`~extensions.frontier.distributed.DistributedFrontier` does with the
frontier's. ``flush_on_start`` (``SCHEDULER_FLUSH_ON_START``) deletes them at
open. Failures: Redis unreachable at open raises
:class:`~extensions.contentseen.exact.ContentStoreError` naming the URL
(password hidden); mid-crawl, errors are retried with back-off and each
retry logged (:class:`~extensions.store.redis.LoggingRetry`), then raise
``ContentStoreError``. Not thread-safe. Pure: no Scrapy.
"""

from __future__ import annotations

import logging
import os
import socket
import struct
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

from redis.exceptions import RedisError

from extensions.contentseen.exact import ContentStoreError
from extensions.store.redis_connection import LoggingRetry, connect, is_cluster, redact
from extensions.store.redis_keys import Keys, glob_escape

logger = logging.getLogger(__name__)

SCHEMA_VERSION = "2"  # 2: near_docs records carry a resemblance sketch
PARTITION_BITS = 12  # exact and document partitions: the top 12 bits (3 hex digits)
HEARTBEAT_TTL = 60.0  # seconds a process counts as alive without renewing
_U64 = struct.Struct(">Q")
_TEXT = ("utf-8", "surrogatepass")

#: A process is alive until now + ARGV[2] ms (server clock). KEYS: clients.
#: ARGV: id, TTL ms. Returns how many processes are alive.
HEARTBEAT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
return redis.call('ZCOUNT', KEYS[1], now, '+inf')
"""

#: A process leaves. KEYS: clients. ARGV: id. Returns how many others are alive.
LEAVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREM', KEYS[1], ARGV[1])
return redis.call('ZCOUNT', KEYS[1], now, '+inf')
"""


def pack64(value: int) -> bytes:
    """An unsigned 64-bit fingerprint or simhash as 8 bytes (a hash field)."""
    return _U64.pack(value)


def unpack64(data: bytes, offset: int = 0) -> int:
    return _U64.unpack_from(data, offset)[0]


def encode_url(url: str) -> bytes:
    return url.encode(*_TEXT)


def decode_url(data: bytes) -> str:
    return data.decode(*_TEXT)


class ContentKeys:
    """Every content-seen key name of one crawl (one prefix)."""

    def __init__(self, prefix: str) -> None:
        Keys(prefix)  # the frontier's check: non-empty, no braces or spaces
        self.prefix = prefix
        self.base = f"{prefix}:contentseen"
        self.meta = f"{self.base}:meta"
        self.ids = f"{self.base}:near_ids"
        self.clients = f"{self.base}:clients"
        literal = glob_escape(self.base)
        #: what deleting the content-seen sets removes
        self.patterns = tuple(f"{literal}:{{*}}:{kind}" for kind in ("exact", "near_docs", "near_table"))
        self.singles = (self.meta, self.ids, self.clients)

    def exact(self, fingerprint: int) -> str:
        return f"{self.base}:{{{fingerprint >> (64 - PARTITION_BITS):03x}}}:exact"

    def near_doc(self, simhash: int) -> str:
        return f"{self.base}:{{{simhash >> (64 - PARTITION_BITS):03x}}}:near_docs"

    def near_table(self, table: int, partition: int) -> str:
        return f"{self.base}:{{t{table}-{partition:02x}}}:near_table"


def process_id() -> str:
    """A name for this process among the crawl's, unique across restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class RedisContentStore:
    """One connection and pipeline for the content-seen sets of one crawl.

    Promises: :meth:`call` sends every buffered write before its own
    commands, in order, so a read sees every earlier write of this process;
    :meth:`close` deletes the crawl's content-seen keys only when ``persist``
    is off and no other process is alive in ``clients``. Shared by the exact
    set and the index: the first :meth:`attach` opens, the last :meth:`detach` closes.
    """

    def __init__(self, url: str, prefix: str = "web", *, persist: bool = True,
                 flush_on_start: bool = False, retries: int = 6, timeout: float | None = 10.0,
                 ttl: float = HEARTBEAT_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self.url, self.keys = url, ContentKeys(prefix)
        self.location = f"{redact(url)} (keys {self.keys.base}:*)"
        self.persist, self.flush_on_start = persist, flush_on_start
        self.retries, self.timeout, self.ttl, self.clock = retries, timeout, ttl, clock
        self.owner = process_id()
        self.round_trips = 0  # pipelines sent
        self.users = 0
        self._client: Any = None
        self._pipe: Any = None
        self._beat_due = 0.0
        self._riders: list[tuple[list[tuple[Any, ...]], Callable[[list[Any]], None]]] = []

    # -- lifecycle ---------------------------------------------------------------
    def open(self) -> RedisContentStore:
        """Connect (a clear error naming the URL if Redis is not there), flush
        on request, and join the crawl's processes."""
        try:
            self._client = connect(self.url, self.timeout, LoggingRetry(redact(self.url), self.retries))
        except ValueError as err:
            raise ContentStoreError(f"cannot use Redis at {redact(self.url)} for content-seen: {err}") from err
        except (RedisError, OSError) as err:
            raise ContentStoreError(
                f"cannot reach Redis at {redact(self.url)} for the content-seen sets: {err} "
                "(is redis-server running there? check REDIS_URL)") from err
        self._pipe = self._client.pipeline(transaction=False)
        if self.flush_on_start:
            self.delete_all()
        self._beat_due = 0.0
        self.call()  # the first heartbeat
        return self

    def attach(self) -> RedisContentStore:
        """One more user (the exact set, the index); opens on the first."""
        if self._client is None:
            self.open()
        self.users += 1
        return self

    def detach(self) -> None:
        """One user fewer; the last one closes."""
        self.users -= 1
        if self.users <= 0:
            self.close()

    def close(self) -> None:
        """Send the buffered writes and leave; delete the keys if ``persist``
        is off and this was the crawl's last process."""
        if self._client is None:
            return
        try:
            others = int(self.call(("EVAL", LEAVE, 1, self.keys.clients, self.owner))[0])
            if not self.persist and others == 0:
                self.delete_all()
            elif not self.persist:
                logger.info("%d other process(es) still use the content-seen sets at %s: their keys stay",
                            others, self.location)
        finally:
            self._client.close()
            self._client = self._pipe = None

    def delete_all(self) -> int:
        """Delete every content-seen key of this prefix; return how many."""
        keys = [key for pattern in self.keys.patterns for key in self.scan(pattern)]
        for key in [*keys, *self.keys.singles]:
            self.write("UNLINK", key)
        self.call()
        return len(keys)

    # -- the pipeline --------------------------------------------------------------
    def write(self, *command: Any) -> None:
        """Buffer a command whose answer nobody needs (sent with the next call)."""
        self._require().execute_command(*command)

    def pending(self) -> int:
        """Commands buffered."""
        return len(self._pipe) if self._pipe is not None else 0

    def ride(self, commands: list[tuple[Any, ...]], deliver: Callable[[list[Any]], None]) -> None:
        """Send ``commands`` with the next call and hand their answers to
        ``deliver``: a read that will probably be needed (the index's
        candidates) shares the round trip of the one made first (the
        exact test)."""
        self._riders.append((commands, deliver))

    def call(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Send the buffered writes (and a heartbeat when due), ``commands``
        and any riders in one round trip; the answers to ``commands``."""
        pipe = self._require()
        now = self.clock()
        if now >= self._beat_due:
            pipe.execute_command("EVAL", HEARTBEAT, 1, self.keys.clients, self.owner, int(self.ttl * 1000))
            self._beat_due = now + self.ttl / 3
        start = len(pipe)
        for command in commands:
            pipe.execute_command(*command)
        riders, self._riders = self._riders, []
        for ride, _ in riders:
            for command in ride:
                pipe.execute_command(*command)
        if not len(pipe):
            return []
        self.round_trips += 1
        try:
            results = pipe.execute(raise_on_error=False)
        except RedisError as err:
            raise ContentStoreError(f"Redis at {self.location} failed: {err}") from err
        for result in results:
            if isinstance(result, Exception):
                raise ContentStoreError(f"Redis at {self.location} refused a command: {result}") from result
        end = start + len(commands)
        for ride, deliver in riders:
            deliver(results[end:end + len(ride)])
            end += len(ride)
        return results[start:start + len(commands)]

    def flush(self) -> bool:
        """Send the buffered writes (and a due heartbeat); whether anything went."""
        before = self.round_trips
        self.call()
        return self.round_trips > before

    def scan(self, pattern: str) -> Iterator[bytes]:
        """Every key matching ``pattern`` (on every master of a cluster)."""
        self.call()
        try:
            yield from self._client.scan_iter(match=pattern, count=1000)
        except RedisError as err:
            raise ContentStoreError(f"Redis at {self.location} failed: {err}") from err

    @property
    def cluster(self) -> bool:
        """Whether the store talks to a Redis Cluster (after open)."""
        return is_cluster(self._client)

    def _require(self) -> Any:
        if self._pipe is None:
            raise ContentStoreError(f"the content-seen store {self.location} is not open")
        return self._pipe


class RedisContentPart:
    """What the exact set and the index share: a counted round trip on the
    shared connection, flush, close and the context manager."""

    def __init__(self, store: RedisContentStore, counters: tuple[str, ...]) -> None:
        self.store = store.attach()
        self.counters = dict.fromkeys((*counters, "round_trips", "flushes"), 0)

    def flush(self) -> None:
        """Send what the shared connection buffered (the index's writes)."""
        if self.store.flush():
            self.counters["flushes"] += 1

    def close(self) -> None:
        """Let go of the connection (the last user flushes and closes it);
        the object is unusable afterwards."""
        self.store.detach()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, *commands: tuple[Any, ...]) -> list[Any]:
        self.counters["round_trips"] += 1
        return self.store.call(*commands)


class RedisContentSeen(RedisContentPart):
    """The exact content-seen set in Redis, shared by every process of a crawl.

    Promises (those of :class:`~extensions.contentseen.exact.ContentSeen`,
    across processes): :meth:`add_or_get` returns the URL that first recorded
    a fingerprint in any process of the crawl, atomically (one ``HSETNX``
    wins); what the server acknowledged is durable on its terms (AOF), so
    :meth:`flush` has nothing of its own to write. One round trip per call.
    """

    def __init__(self, store: RedisContentStore) -> None:
        super().__init__(store, ("lookups", "added", "duplicates"))

    @classmethod
    def open(cls, url: str, prefix: str = "web", **options: Any) -> RedisContentSeen:
        """A set on a connection of its own (``options``: :class:`RedisContentStore`'s)."""
        return cls(RedisContentStore(url, prefix, **options))

    def add_or_get(self, fingerprint: int, url: str) -> str:
        """The first URL recorded for ``fingerprint``; records ``url`` if there is none.

        The content is a duplicate when the result is not ``url`` itself.
        """
        key, field = self.store.keys.exact(fingerprint), pack64(fingerprint)
        added, first = self._lookup(("HSETNX", key, field, encode_url(url)), ("HGET", key, field))
        if added:
            self.counters["added"] += 1
            return url
        found = decode_url(first)
        if found != url:
            self.counters["duplicates"] += 1
        return found

    def duplicate_of(self, fingerprint: int, url: str) -> str | None:
        """:meth:`add_or_get`, as the item field: the first URL, or None if ``url`` is it."""
        first = self.add_or_get(fingerprint, url)
        return None if first == url else first

    def get(self, fingerprint: int) -> str | None:
        """The first URL recorded for ``fingerprint``, without recording anything."""
        found = self._lookup(("HGET", self.store.keys.exact(fingerprint), pack64(fingerprint)))[0]
        return None if found is None else decode_url(found)

    def stats(self) -> dict[str, int]:
        """Counters since open."""
        return dict(self.counters)

    def _lookup(self, *commands: tuple[Any, ...]) -> list[Any]:
        self.counters["lookups"] += 1
        return self._call(*commands)
