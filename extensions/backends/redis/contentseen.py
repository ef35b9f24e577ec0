"""The content-seen sets in Redis, shared by every crawler process of a crawl
(keys: docs/reference/redis-layout.md); the first writer of a fingerprint wins.
Writes wait on the crawler's shared connection for its next read. Redis
failures raise :class:`~extensions.contentseen.exact.ContentStoreError`."""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Callable, Generator
from typing import Any, TypeVar

from extensions.backends.redis.connection import (
    RedisConnection,
    RedisLayerError,
    redact,
)
from extensions.backends.redis.keys import Keys, glob_escape
from extensions.backends.redis.registry import ProcessRegistry, registry_of
from extensions.backends.redis.scripts import lua
from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.sets import ExactSet

logger = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_VERSION = "5"  # P:contentseen:meta "schema" (docs/reference/redis-layout.md)
PARTITION_BITS = 8  # exact set and near-duplicate document partitions: the top 8 bits (2 hex digits)
MEMBER_BYTES = 7  # a fingerprint's or simhash's member in its partition: its other 56 bits
BUCKET_BYTES = 2048  # bytes of a packed partition's bucket before it splits
HEARTBEAT_TTL = 60.0  # seconds a process counts as alive without renewing
_U64 = struct.Struct(">Q")
ADD, RECORDS = lua("exact_add"), lua("near_records")
_TEXT = ("utf-8", "surrogatepass")

def pack64(value: int) -> bytes:
    """An unsigned 64-bit fingerprint or simhash as 8 bytes (a hash field)."""
    return _U64.pack(value)


def unpack64(data: bytes, offset: int = 0) -> int:
    return _U64.unpack_from(data, offset)[0]


def member_of(value: int) -> bytes:
    """A fingerprint's or simhash's member in its partition: its low 56 bits (the top 8 name the partition)."""
    return (value & (1 << 8 * MEMBER_BYTES) - 1).to_bytes(MEMBER_BYTES, "big")


def read_records(key: str, value: int) -> tuple[Any, ...]:
    """The command reading the records of ``value`` in the packed partition ``key``: the exact set's
    first URL of a fingerprint, a simhash's documents (answers a list of one: bytes or None)."""
    return ("EVAL", RECORDS, 1, key, member_of(value))


def encode_url(url: str) -> bytes:
    return url.encode(*_TEXT)


def decode_url(data: bytes) -> str:
    return data.decode(*_TEXT)


class ContentKeys:
    """Every content-seen key name of one crawl (one prefix)."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.base = f"{prefix}:contentseen"
        self.meta = f"{self.base}:meta"
        self.ids = f"{self.base}:near_ids"
        self.processes = Keys(prefix).processes  # the crawl's process registry; checks the prefix
        literal = glob_escape(self.base)
        #: what deleting the content-seen sets removes: the maps' and sets' directories and buckets
        self.patterns = tuple(f"{literal}:{{*}}:{kind}{buckets}" for kind in ("exact", "near_docs", "near_table")
                              for buckets in ("", ":*"))
        self.singles = (self.meta, self.ids)

    def exact(self, fingerprint: int) -> str:
        return f"{self.base}:{{{fingerprint >> (64 - PARTITION_BITS):02x}}}:exact"

    def near_doc(self, simhash: int) -> str:
        return f"{self.base}:{{{simhash >> (64 - PARTITION_BITS):02x}}}:near_docs"

    def near_table(self, table: int, partition: int) -> str:
        return f"{self.base}:{{t{table}-{partition:02x}}}:near_table"


class RedisContentStore:
    """The content-seen sets' share of the connection: :meth:`call` sends the
    buffered writes first; the first :meth:`attach` opens, the last
    :meth:`detach` closes."""

    def __init__(self, url: str, prefix: str = "web", *, persist: bool = True,
                 flush_on_start: bool = False, retries: int = 6, timeout: float | None = 10.0,
                 ttl: float = HEARTBEAT_TTL, clock: Callable[[], float] = time.monotonic,
                 connection: RedisConnection | None = None) -> None:
        self.url, self.keys = url, ContentKeys(prefix)
        self.location = f"{redact(url)} (keys {self.keys.base}:*)"
        self.persist, self.flush_on_start = persist, flush_on_start
        self.retries, self.timeout, self.ttl, self.clock = retries, timeout, ttl, clock
        self.connection = connection or RedisConnection(url, retries=retries, timeout=timeout)
        self.round_trips = 0  # pipelines this store sent
        self.users = 0
        self._open = False
        self._beat_due = 0.0
        self._riders: list[tuple[list[tuple[Any, ...]], Callable[[list[Any]], None]]] = []

    @property
    def registry(self) -> ProcessRegistry:
        """The crawl's process registry (shared with the frontier)."""
        return registry_of(self.connection, self.keys.processes)

    # -- lifecycle ---------------------------------------------------------------
    def attach(self) -> RedisContentStore:
        """One more user (the exact set, the index); the first connects,
        flushes on request and joins the crawl's processes."""
        if not self._open:
            self.connection.attach("the content-seen sets", ContentStoreError)
            self._open = True
            try:
                if self.flush_on_start:
                    self.delete_all()
                self._mapped(self.registry.enter, self.ttl)  # a crawl being deleted is waited for
            except ContentStoreError:
                self._open = False
                self.connection.detach()
                raise
            self._beat_due = 0.0
            self.call()  # the first heartbeat
        self.users += 1
        return self

    def detach(self) -> None:
        """One user fewer; the last one sends the buffered writes and leaves,
        deleting the keys if ``persist`` is off and this was the crawl's last process."""
        self.users -= 1
        if self.users > 0 or not self._open:
            return
        try:
            self.call()
            others = self._mapped(self.registry.leave, self.ttl, "", not self.persist)
            if not self.persist and others == 0:  # the last process: fenced while it deletes
                self.delete_all()
            elif not self.persist:
                logger.info("%d other process(es) still use the content-seen sets at %s: their keys stay",
                            others, self.location)
            self._mapped(self.registry.unfence)  # this process's fence (if it took one), once it is gone
        finally:
            self._open = False
            self.connection.detach()

    def delete_all(self) -> int:
        """Delete every content-seen key of this prefix; return how many."""
        self._mapped(self.connection.flush)  # no heartbeat: a leaving process would join again
        return int(self._mapped(self.registry.delete, self.keys.patterns, self.keys.singles))

    # -- the pipeline --------------------------------------------------------------
    def write(self, *command: Any) -> None:
        """Buffer a command whose answer nobody needs (sent with the next call)."""
        self._require()
        self._mapped(self.connection.write, *command)

    def pending(self) -> int:
        """Commands buffered (on the shared connection)."""
        return self.connection.pending() if self._open else 0

    def ride(self, commands: list[tuple[Any, ...]], deliver: Callable[[list[Any]], None]) -> None:
        """Send ``commands`` with the next call and hand their answers to ``deliver``."""
        self._riders.append((commands, deliver))

    def call(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Send the buffered writes (and a heartbeat when due), ``commands``
        and any riders in one round trip; the answers to ``commands``."""
        self._require()
        sent = self.due_commands()
        start = len(sent)
        sent += commands
        riders, self._riders = self._riders, []
        for ride, _ in riders:
            sent += ride
        before = self.connection.round_trips
        results = self._mapped(self.connection.call, *sent) if sent else self._mapped(self.connection.flush)
        self.round_trips += self.connection.round_trips - before
        if not sent:
            return []
        end = start + len(commands)
        for ride, deliver in riders:
            deliver(results[end:end + len(ride)])
            end += len(ride)
        return results[start:start + len(commands)]

    def due_commands(self) -> list[tuple[Any, ...]]:
        """The heartbeat when due (every third of ``ttl``), to ride on the next round trip."""
        now = self.clock()
        if now < self._beat_due:
            return []
        self._beat_due = now + self.ttl / 3
        return [self.registry.heartbeat_command()]

    def _mapped(self, method: Callable[..., Any], *args: Any) -> Any:
        """``method(*args)``, a Redis failure as this store's error."""
        try:
            return method(*args)
        except RedisLayerError as err:
            raise ContentStoreError(f"{err} (content-seen keys {self.keys.base}:*)") from err

    def _require(self) -> None:
        if not self._open:
            raise ContentStoreError(f"the content-seen store {self.location} is not open")


#: a look-up as a generator: yields each round trip's commands, receives their
#: answers, returns the result (run at once, or through a worker)
Steps = Generator[list[tuple[Any, ...]], list[Any], T]


class RedisContentPart:
    """What the exact set and the index share: counted round trips, flush,
    close. :attr:`write` is the store's, or a worker's when reads go there."""

    def __init__(self, store: RedisContentStore, counters: tuple[str, ...]) -> None:
        self.store = store.attach()
        self.counters = dict.fromkeys((*counters, "round_trips", "flushes"), 0)
        self.write: Callable[..., None] = store.write

    def flush(self) -> None:
        """Send what the shared connection buffered (and a due heartbeat)."""
        before = self.store.round_trips
        self.store.call()
        if self.store.round_trips > before:
            self.counters["flushes"] += 1

    def close(self) -> None:
        """Let go of the connection (the last user flushes and closes it)."""
        self.store.detach()

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _call(self, *commands: tuple[Any, ...]) -> list[Any]:
        self.counters["round_trips"] += 1
        return self.store.call(*commands)

    def run(self, steps: Steps[T]) -> T:
        """The result of ``steps``, each round trip made at once on the store."""
        try:
            commands = next(steps)
            while True:
                commands = steps.send(self._call(*commands))
        except StopIteration as done:
            return done.value


class RedisContentSeen(RedisContentPart, ExactSet):
    """The exact content-seen set, shared by every process of a crawl: the
    promises of :class:`~extensions.contentseen.exact.ContentSeen`."""

    def __init__(self, store: RedisContentStore) -> None:
        super().__init__(store, ("lookups", "added", "duplicates"))

    def add_or_get(self, fingerprint: int, url: str) -> str:
        """The first URL recorded for ``fingerprint``; records ``url`` if there is none."""
        self.counters["lookups"] += 1
        return self.first_url(self._call(*self.add_commands(fingerprint, url)), url)

    def add_commands(self, fingerprint: int, url: str) -> list[tuple[Any, ...]]:
        """The round trip of :meth:`add_or_get` (one command)."""
        return [("EVAL", ADD, 1, self.store.keys.exact(fingerprint), BUCKET_BYTES, member_of(fingerprint),
                 encode_url(url))]

    def first_url(self, answers: list[Any], url: str) -> str:
        """:meth:`add_or_get`'s result from the answers to :meth:`add_commands`."""
        first = answers[0]
        if first is None:
            self.counters["added"] += 1
            return url
        found = decode_url(first)
        if found != url:
            self.counters["duplicates"] += 1
        return found

    def stats(self) -> dict[str, int]:
        """Counters since open."""
        return dict(self.counters)
