"""The frontier's distributed store: Redis, single instance or Redis Cluster.

``-s FRONTIER_BACKEND=redis -s REDIS_URL=redis://host:port/db`` selects it
(:mod:`extensions.backends.factory`); the embedded SQLite store stays the
default. The URL may name a single Redis or any node of a Redis Cluster
(database 0). The store and its tables (:mod:`extensions.backends.redis.tables`)
talk through the crawler's one
:class:`~extensions.backends.redis.connection.RedisConnection`. Keys:
:mod:`extensions.backends.redis.keys`; rows: :mod:`extensions.backends.redis.rows`;
scripts: ``lua/`` (:mod:`extensions.backends.redis.scripts`). Every per-URL and per-host
key carries the hash tag ``{T}`` of the host's 24-bit hash, so a host's URL
rows, its slice of the URL-seen set and its state live on one shard.

Round trips. Writes whose answer nobody needs (queue pushes, status
changes, requeues, cash, groups, crawl delays, meta) wait in the
connection's pipeline; the next read sends them with its own commands (so
reads still see every earlier write), and so do :meth:`RedisStore.checkpoint`
and a full pipeline. Per frontier operation (``RedisStore.round_trips``,
asserted in ``tests/test_redis_store.py``): enqueue 1 (``insert_new``);
queue refill 2 per buffer (``pop`` + ``get_many``); status changes 0
(buffered); checkpoint at most 1; with AOPIC +1 per enqueue, +2 per
dispatch, 2 per fetched page.

URL-seen (``seen=`` here): the exact fingerprint set of
:mod:`extensions.backends.redis.fpset` (``FRONTIER_SEEN_BACKEND = "exact"``,
a crawl's default) or the Bloom filter of :mod:`extensions.backends.redis.bloom`
(``"bloom"``), tested inside the script that inserts the row; a row then
lives only while its URL is queued or in flight, unless ``keep_rows`` (done,
failed, excluded and refused rows are deleted and counted by status:
``status_of`` and ``get_many`` answer None for a finished URL,
``count_by_status`` adds the counts, ``iter_all`` yields pending rows only).
Without ``seen`` (tools and tests) the URL rows are the seen set.
Cash rows, content groups and per-host URL counts stay. A crawl keeps the
URL-seen backend and Bloom layout it began with (``seen`` in ``P:meta``).
Memory per URL: ``frontier/redis_bytes_per_url`` (:meth:`RedisStore.memory_usage`),
measured in ``bench/results/redis_memory.txt`` (``python -m bench.redis_memory``).

Durability. What the server acknowledged survives the client (with AOF, a
Redis restart loses at most the last second). A crash of the crawler loses
the writes still buffered; there is no multi-key transaction, so after a
crash the store holds a prefix of the command stream, which the frontier's
rebuild handles because the URL rows stay authoritative (``clean`` in
``P:meta`` is ``0`` while a crawl runs, ``1`` after a clean close).

Failures. Redis unreachable at :meth:`RedisStore.open` raises
:class:`FrontierStoreError` naming the URL (password hidden); mid-crawl,
errors are retried with logged back-off (blocking the caller), then raise
:class:`~extensions.backends.redis.connection.RedisLayerError`.

Lifetime (scrapy-redis conventions): ``persist=False`` (``SCHEDULER_PERSIST`` off) deletes every
key of the crawl at a clean close; ``flush_on_start`` (``SCHEDULER_FLUSH_ON_START``) deletes them
at open. Queue lengths are kept in the client (a queue has one writer). Operations that scan every
tag (``iter_pending``, ``iter_all``, ``requeue_inflight``, ``count_by_status``, ``cash_count``,
``cash_totals``, the link and re-visit tables' scans, the census) run only at a rebuild, at start or in tests.
Re-visit records: :mod:`extensions.backends.redis.revisits`. Inspect: ``HGETALL web:meta``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from extensions.backends.redis.census import RedisCensus
from extensions.backends.redis.connection import RedisConnection, redact
from extensions.backends.redis.keys import SCHEMA_VERSION, Keys
from extensions.backends.redis.links import RedisLinkTable
from extensions.backends.redis.registry import ProcessRegistry, registry_of
from extensions.backends.redis.revisits import RedisRevisitTable
from extensions.backends.redis.seen import SeenLayout, recorded_layout
from extensions.backends.redis.tables import (
    Hashes,
    RedisCashTable,
    RedisContentGroups,
    RedisHostTable,
    RedisQueues,
    RedisURLTable,
    URLCounters,
)
from extensions.frontier.store import FrontierStoreError


class RedisStore:
    """The frontier store in Redis (see the module docstring): the tables of
    :mod:`.tables` (and links, re-visits, census) over one connection, and
    its lifecycle. With ``seen``, the URL-seen set is that set (Bloom filter or
    exact fingerprint set) and finished rows are trimmed unless ``keep_rows``
    (re-visits need them); without (None), the rows are the set; by default
    the layout the crawl recorded, else none. ``connection`` is the crawler's shared one;
    without it the store opens a connection of its own to ``url`` (tests, tools)."""

    def __init__(self, url: str, prefix: str = "web", *, persist: bool = True,
                 flush_on_start: bool = False, retries: int = 6, timeout: float | None = 10.0,
                 batch: int = 1024, seen: SeenLayout | None | str = "recorded", keep_rows: bool = False,
                 connection: RedisConnection | None = None) -> None:
        self.url = url
        self._asked: SeenLayout | None | str = seen
        self.seen: SeenLayout | None = None if seen == "recorded" else seen  # type: ignore[assignment]
        self.keep_rows = keep_rows
        self.keys = Keys(prefix)
        self.location = f"{redact(url)} (keys {prefix}:*)"
        self.persist, self.flush_on_start = persist, flush_on_start
        self.retries, self.timeout, self.batch = retries, timeout, batch
        self.connection = connection or RedisConnection(url, retries=retries, timeout=timeout, batch=batch)
        self.clean = True
        self._attached = self.read_only = False
        hashes = Hashes(self._require)
        #: discovery order and URL count, shared with the host leases
        self.counters = URLCounters(self.keys, self._require)
        self.queues = RedisQueues(self.keys, self._require)
        self.urls = RedisURLTable(self.keys, self._require, hashes, self.counters, self.seen, keep_rows)
        self.hosts = RedisHostTable(self.keys, self._require)
        self.cash = RedisCashTable(self.keys, self._require, hashes)
        self.groups = RedisContentGroups(self.keys, self._require)
        self.links = RedisLinkTable(self.keys, self._require)
        self.revisits = RedisRevisitTable(self.keys, self._require, lambda: not self.read_only)
        self.census = RedisCensus(self.keys, self._require)  # reads only

    # -- lifecycle -------------------------------------------------------------
    def open(self) -> None:
        self.connection.attach("the frontier")
        self._attached = True
        if self.flush_on_start:
            self.delete_crawl()
        schema, clean = self._call(("HGET", self.keys.meta, "schema"), ("HGET", self.keys.meta, "clean"))
        if schema is not None and schema.decode() != SCHEMA_VERSION:
            self.abandon()
            raise FrontierStoreError(
                f"the frontier keys at {self.location} were written in layout {schema.decode()}, this "
                f"release reads layout {SCHEMA_VERSION} only: finish that crawl with the release that "
                "began it, or start it over (SCHEDULER_FLUSH_ON_START=True deletes its keys) or under "
                "another FRONTIER_REDIS_PREFIX")
        self._check_seen_backend()
        self.clean = clean != b"0" or not self._has_rows()
        self._write("HSET", self.keys.meta, "schema", SCHEMA_VERSION, "clean", "0")
        if schema is None:  # a new crawl: the baseline of its memory use
            self._write("HSETNX", self.keys.meta, "memory_base", self.connection.used_memory()[0])
        self._flush()
        self.queues.load()

    def open_read_only(self) -> None:
        """Attach to an existing crawl's keys to read them, a running crawl's
        too: nothing is written, :meth:`close` only disconnects."""
        self.connection.attach("the frontier (read only)")
        self._attached = self.read_only = True
        if self.get_meta("schema") is None:
            self.abandon()
            raise FrontierStoreError(f"no crawl at {self.location} (check REDIS_URL and FRONTIER_REDIS_PREFIX)")

    def _check_seen_backend(self) -> None:
        """A crawl keeps the URL-seen layout it began with: exact rows cannot
        stand in for trimmed ones, nor sets change shape. A store made
        without one (``seen="recorded"``: tools, tests) takes the crawl's."""
        wanted = "rows" if self.seen is None else self.seen.describe()
        recorded = self._call(("HSETNX", self.keys.meta, "seen", wanted), ("HGET", self.keys.meta, "seen"))[1]
        if self._asked == "recorded" and recorded.decode() != wanted:
            self.seen = recorded_layout(recorded.decode())
            self.urls.use(self.seen, self.keep_rows)
            return
        if recorded.decode() != wanted:
            self.abandon()
            raise FrontierStoreError(
                f"the crawl at {self.location} began with URL-seen {recorded.decode()!r}, not {wanted!r}: "
                "keep its FRONTIER_SEEN_BACKEND, FRONTIER_REDIS_BLOOM_CAPACITY and "
                "FRONTIER_REDIS_BLOOM_ERROR_RATE, or choose another FRONTIER_REDIS_PREFIX")

    def checkpoint(self) -> None:
        """Send every buffered write (durable on the server's terms: AOF)."""
        if self._attached:
            self.counters.add_known()
            self.connection.flush()

    def close(self, clean: bool = True) -> None:
        if not self._attached or self.read_only:
            return self.abandon()
        if self.persist:
            self.set_meta("clean", "1" if clean else "0")
            self.checkpoint()
        else:
            self.delete_crawl()
        self._attached = False
        self.connection.detach()

    def abandon(self) -> None:
        """Drop the connection without sending buffered writes (a simulated crash)."""
        if self._attached:
            self._attached = False
            self.connection.close()

    def delete_crawl(self) -> int:
        """Delete every key of this prefix; return how many."""
        self._flush()
        keys = [key for pattern in self.keys.all_patterns for key in self._scan(pattern)]
        for key in [*keys, *self.keys.singles]:
            self._write("UNLINK", key)
        self._flush()
        self.queues.load()  # none left
        self.counters.reset()
        return len(keys)

    def get_meta(self, key: str) -> str | None:
        value = self._call(("HGET", self.keys.meta, key))[0]
        return None if value is None else value.decode()

    def set_meta(self, key: str, value: str) -> None:
        self._write("HSET", self.keys.meta, key, value)

    # -- memory (for stats) --------------------------------------------------------
    def memory_usage(self) -> tuple[int, int] | None:
        """``(bytes, URLs)``, crawl-wide: ``used_memory_dataset`` over every
        master less its value when the crawl's keys were created (whatever
        else the server stored counts too), and the URLs known; None if the
        crawl predates that baseline. For checkpoints, not per page."""
        self.counters.add_known()
        commands: list[tuple[Any, ...]] = [("GET", self.keys.known), ("HGET", self.keys.meta, "memory_base")]
        if not self.cluster:
            commands.append(("INFO", "memory"))
        known, base, *info = self._call(*commands)
        used = self.connection.used_memory()[0] if self.cluster else int(info[0]["used_memory_dataset"])
        if base is None:
            return None
        return max(0, used - int(base)), int(known or 0)

    # -- the pipeline (the crawler's shared connection) ----------------------------
    @property
    def registry(self) -> ProcessRegistry:
        """The crawl's process registry on this store's connection."""
        return registry_of(self.connection, self.keys.processes)

    @property
    def round_trips(self) -> int:
        """Pipelines the connection sent (see the module docstring)."""
        return self.connection.round_trips

    def call(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Send the buffered writes and ``commands``; the answers to ``commands``."""
        return self._call(*commands) if commands else self._flush() or []

    def write(self, *command: Any) -> None:
        """Buffer a command whose answer nobody needs (sent with the next call)."""
        self._write(*command)

    def scan(self, pattern: str) -> Iterator[bytes]:
        """Every key matching ``pattern`` (a SCAN over every master)."""
        return self._scan(pattern)

    @property
    def failures(self) -> int:
        """Failed Redis calls so far (each retried): after one, a command
        may have run twice, e.g. a URL taken from a back queue whose answer
        was lost (see the shared frontier's in-flight repair)."""
        return self.connection.failures

    @property
    def cluster(self) -> bool:
        """Whether the store talks to a Redis Cluster (after open)."""
        return self.connection.cluster

    @property
    def _retry(self) -> Any:
        """The connection's retry policy (tests/test_distributed.py counts a failure on it)."""
        return self.connection.retry

    def _require(self) -> RedisConnection:
        if not self._attached:
            raise FrontierStoreError(f"the frontier store {self.location} is not open")
        return self.connection

    def _write(self, *command: Any) -> None:
        self._require().write(*command)

    def _call(self, *commands: tuple[Any, ...]) -> list[Any]:
        return self._require().call(*commands)

    def _flush(self) -> None:
        if self._attached:
            self.connection.flush()

    def _scan(self, pattern: str) -> Iterator[bytes]:
        return self._require().scan(pattern)

    def _has_rows(self) -> bool:
        return next(self._scan(self.keys.urls_pattern), None) is not None
