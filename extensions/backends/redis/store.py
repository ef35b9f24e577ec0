"""The frontier's distributed store: Redis, single instance or Redis Cluster.

``-s FRONTIER_BACKEND=redis -s REDIS_URL=redis://host:port/db`` selects it
(:mod:`extensions.backends.factory`); the embedded SQLite store stays the
default. The URL may name a single Redis or any node of a Redis Cluster
(database 0). The store talks through the crawler's one
:class:`~extensions.backends.redis.connection.RedisConnection`. Keys:
:mod:`extensions.backends.redis.keys`; rows: :mod:`extensions.backends.redis.rows`;
scripts: :mod:`extensions.backends.redis.scripts`. Every per-URL and per-host
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

URL-seen: exact (the default), the URL rows are the seen set; or Bloom
(``FRONTIER_SEEN_BACKEND = "bloom"``, ``bloom=`` here), the shared filter of
:mod:`extensions.backends.redis.bloom`, tested inside the script that inserts
the row, and a row lives only while its URL is queued or in flight (done,
failed, excluded and refused rows are deleted and counted by status:
``status_of`` and ``get_many`` answer None for a finished URL,
``count_by_status`` adds the counts, ``iter_all`` yields pending rows only).
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

import uuid
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

from extensions.backends.redis.bloom import BloomLayout, bloom_hashes
from extensions.backends.redis.cash import RedisCashTable
from extensions.backends.redis.cash import group_by_tag as _group
from extensions.backends.redis.census import RedisCensus
from extensions.backends.redis.connection import RedisConnection, redact
from extensions.backends.redis.keys import SCHEMA_VERSION, Keys, tag_of
from extensions.backends.redis.links import RedisLinkTable
from extensions.backends.redis.registry import ProcessRegistry, registry_of
from extensions.backends.redis.revisits import RedisRevisitTable
from extensions.backends.redis.rows import (
    STATUS_BYTE,
    fetched_bytes,
    pack_row,
    row_head,
    row_status,
    unpack_entry,
)
from extensions.backends.redis.scripts import (
    FINISHED_FIELD,
    INSERT_NEW,
    INSERT_NEW_BLOOM,
    POP_ONCE,
    REQUEUE,
    REQUEUE_BLOOM,
    SET_STATUS,
    TRIM,
)
from extensions.frontier.store import Entry, FrontierStoreError, Status

SEQ_BLOCK = 1024  # discovery-order numbers reserved per INCRBY
_PENDING = (Status.QUEUED, Status.INFLIGHT)


class RedisStore(RedisCashTable):
    """Every frontier store concern in Redis (see the module docstring).
    With ``bloom``, the URL-seen set is that Bloom filter and finished rows
    are trimmed. ``connection`` is the crawler's shared one; without it the
    store opens a connection of its own to ``url`` (tests, tools)."""

    def __init__(self, url: str, prefix: str = "web", *, persist: bool = True,
                 flush_on_start: bool = False, retries: int = 6, timeout: float | None = 10.0,
                 batch: int = 1024, bloom: BloomLayout | None = None,
                 connection: RedisConnection | None = None) -> None:
        self.url = url
        self.bloom = bloom
        self.keys = Keys(prefix)
        self.location = f"{redact(url)} (keys {prefix}:*)"
        self.persist, self.flush_on_start = persist, flush_on_start
        self.retries, self.timeout, self.batch = retries, timeout, batch
        self.connection = connection or RedisConnection(url, retries=retries, timeout=timeout, batch=batch)
        self.clean = True
        self.queues = self.urls = self.hosts = self.cash = self
        self.links = RedisLinkTable(self.keys, self._require)  # pipelined with the rest
        self.revisits = RedisRevisitTable(self.keys, self._require, lambda: not self.read_only)
        self.census = RedisCensus(self.keys, self._require)  # reads only
        self._attached = self.read_only = False
        self._owner, self._pops = uuid.uuid4().hex, 0
        self._lengths: dict[str, int] = {}
        self._seq_next, self._seq_end = 1, 0
        self._known = 0  # URLs inserted as new, not yet added to P:known

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
                f"the frontier keys at {self.location} have schema {schema.decode()}, expected "
                f"{SCHEMA_VERSION}: choose another FRONTIER_REDIS_PREFIX or delete them")
        self._check_seen_backend()
        self.clean = clean != b"0" or not self._has_rows()
        self._write("HSET", self.keys.meta, "schema", SCHEMA_VERSION, "clean", "0")
        if schema is None:  # a new crawl: the baseline of its memory use
            self._write("HSETNX", self.keys.meta, "memory_base", self.connection.used_memory()[0])
        self._flush()
        self._load_lengths()

    def open_read_only(self) -> None:
        """Attach to an existing crawl's keys to read them, a running crawl's
        too: nothing is written, :meth:`close` only disconnects."""
        self.connection.attach("the frontier (read only)")
        self._attached = self.read_only = True
        if self.get_meta("schema") is None:
            self.abandon()
            raise FrontierStoreError(f"no crawl at {self.location} (check REDIS_URL and FRONTIER_REDIS_PREFIX)")

    def _check_seen_backend(self) -> None:
        """A crawl keeps the URL-seen backend (and Bloom layout) it began with:
        exact rows cannot stand in for trimmed ones, nor shards change size."""
        wanted = "exact" if self.bloom is None else self.bloom.describe()
        recorded = self._call(("HSETNX", self.keys.meta, "seen", wanted), ("HGET", self.keys.meta, "seen"))[1]
        if recorded.decode() != wanted:
            self.abandon()
            raise FrontierStoreError(
                f"the crawl at {self.location} began with URL-seen {recorded.decode()!r}, not {wanted!r}: "
                "keep its FRONTIER_SEEN_BACKEND, FRONTIER_REDIS_BLOOM_CAPACITY and "
                "FRONTIER_REDIS_BLOOM_ERROR_RATE, or choose another FRONTIER_REDIS_PREFIX")

    def checkpoint(self) -> None:
        """Send every buffered write (durable on the server's terms: AOF)."""
        self._add_known()
        self._flush()

    def close(self, clean: bool = True) -> None:
        if not self._attached or self.read_only:
            return self.abandon()
        if self.persist:
            self.set_meta("clean", "1" if clean else "0")
            self._add_known()
            self._flush()
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
        self._lengths.clear()
        self._seq_next, self._seq_end = 1, 0
        self._known = 0
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
        self._add_known()
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

    def sequence_numbers(self, count: int) -> range:
        """``count`` discovery-order numbers (reserved in blocks)."""
        return self._next_seqs(count)

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

    def _hscan(self, key: bytes, batch: int) -> Iterator[tuple[bytes, bytes]]:
        return self._require().hscan(key, batch)

    def _has_rows(self) -> bool:
        return next(self._scan(self.keys.urls_pattern), None) is not None

    # -- RequestQueues -------------------------------------------------------------
    def _load_lengths(self) -> None:
        names = [self.keys.queue_name(key) for key in self._scan(self.keys.queue_pattern)]
        lengths = self._call(*[("LLEN", self.keys.queue(name)) for name in names]) if names else []
        self._lengths = {name: length for name, length in zip(names, lengths) if length}

    def push(self, name: str, fingerprints: Sequence[int]) -> None:
        if fingerprints:
            self._write("RPUSH", self.keys.queue(name), *fingerprints)
            self._lengths[name] = self._lengths.get(name, 0) + len(fingerprints)

    def push_front(self, name: str, fingerprints: Sequence[int]) -> None:
        if fingerprints:
            self._write("LPUSH", self.keys.queue(name), *reversed(fingerprints))
            self._lengths[name] = self._lengths.get(name, 0) + len(fingerprints)

    def pop(self, name: str, count: int) -> list[int]:
        if not self._lengths.get(name) or count < 1:
            return []
        self._pops += 1  # the call's id: a retry sends the same one (POP_ONCE)
        popped = self._call(("EVAL", POP_ONCE, 2, self.keys.queue(name), self.keys.last_pop(name),
                             count, f"{self._owner}:{self._pops}"))[0] or []
        self._lengths[name] = max(0, self._lengths[name] - len(popped))
        return [int(fp) for fp in popped]

    def length(self, name: str) -> int:
        return self._lengths.get(name, 0)

    def clear(self) -> None:
        names = set(self._lengths) | {self.keys.queue_name(k) for k in self._scan(self.keys.queue_pattern)}
        for name in names:
            self._write("UNLINK", self.keys.queue(name))
        self._flush()
        self._lengths.clear()

    # -- URLTable ----------------------------------------------------------------
    def _next_seqs(self, count: int) -> range:
        if self._seq_next + count - 1 > self._seq_end:
            block = max(SEQ_BLOCK, count)
            end = self._call(("INCRBY", self.keys.seq, block))[0]
            self._seq_next, self._seq_end = end - block + 1, end
        start = self._seq_next
        self._seq_next += count
        return range(start, start + count)

    def insert_new(self, entries: Sequence[Entry], now: float) -> list[bool]:
        if not entries:
            return []
        seqs = self._next_seqs(len(entries))
        by_tag = _group(range(len(entries)), lambda i: tag_of(entries[i].fingerprint))
        commands = []
        for tag, indexes in by_tag.items():
            args: list[Any] = []
            for i in indexes:
                entry = entries[i]
                args += [entry.fingerprint, pack_row(entry, Status.QUEUED, seqs[i]), entry.host]
                if self.bloom is not None:
                    args += bloom_hashes(entry.fingerprint)
            commands.append(self._insert_command(tag, args))
        new = [False] * len(entries)
        for indexes, added in zip(by_tag.values(), self._call(*commands)):
            for i, flag in zip(indexes, added):
                new[i] = bool(flag)
        self.count_known(sum(new))
        return new

    def _insert_command(self, tag: str, args: list[Any]) -> tuple[Any, ...]:
        keys = self.keys
        if self.bloom is None:
            return ("EVAL", INSERT_NEW, 2, keys.urls(tag), keys.host_urls(tag), *args)
        return ("EVAL", INSERT_NEW_BLOOM, 3, keys.urls(tag), keys.host_urls(tag), keys.bloom(tag),
                *self.bloom.args(), *args)

    def count_known(self, new: int) -> None:
        """``new`` URLs were inserted (added to ``P:known`` at the next checkpoint)."""
        self._known += new

    def _add_known(self) -> None:
        if self._known and self._attached:
            self._write("INCRBY", self.keys.known, self._known)
            self._known = 0

    def requeue(self, entry: Entry, now: float) -> None:
        seq = self._next_seqs(1)[0]
        tag = tag_of(entry.fingerprint)
        args = (entry.fingerprint, pack_row(entry, Status.QUEUED, seq), entry.host)
        if self.bloom is None:
            self._write("EVAL", REQUEUE, 2, self.keys.urls(tag), self.keys.host_urls(tag), *args)
        else:  # a later enqueue of the URL must find it seen, as the exact set would
            self._write("EVAL", REQUEUE_BLOOM, 3, self.keys.urls(tag), self.keys.host_urls(tag),
                        self.keys.bloom(tag), *args, *self.bloom.args(), *bloom_hashes(entry.fingerprint))

    def get_many(self, fingerprints: Sequence[int]) -> dict[int, Entry]:
        if not fingerprints:
            return {}
        by_tag = _group(fingerprints, tag_of)
        answers = self._read_hashes([(self.keys.urls(tag), fps) for tag, fps in by_tag.items()])
        found: dict[int, Entry] = {}
        for fps, rows in zip(by_tag.values(), answers):
            for fp, row in zip(fps, rows):
                if row is not None:
                    found[fp] = unpack_entry(fp, row)
        return found

    def set_status(self, fingerprints: Iterable[int], status: Status,
                   now: float | None = None, only_from: Status | None = None) -> None:
        by_tag = _group(fingerprints, tag_of)
        guard = b"" if only_from is None else STATUS_BYTE[only_from]
        fetched = b"" if now is None else fetched_bytes(now)
        for tag, fps in by_tag.items():
            if self.trims and status in FINISHED_FIELD:
                self._write("EVAL", TRIM, 2, self.keys.urls(tag), self.keys.host_urls(tag),
                            FINISHED_FIELD[status], guard, *fps)
            else:
                self._write("EVAL", SET_STATUS, 1, self.keys.urls(tag), STATUS_BYTE[status], guard, fetched, *fps)

    @property
    def trims(self) -> bool:
        """Whether rows go when their URL is finished (Bloom mode)."""
        return self.bloom is not None

    def status_of(self, fingerprint: int) -> Status | None:
        row = self._call(("HGET", self.keys.urls(tag_of(fingerprint)), fingerprint))[0]
        return None if row is None else row_status(row)

    def _rows(self, batch: int) -> Iterator[tuple[int, bytes]]:
        for key in list(self._scan(self.keys.urls_pattern)):
            for field, row in self._hscan(key, batch):
                yield int(field), row

    def iter_pending(self, batch: int = 10_000) -> Iterator[tuple[int, int]]:
        seqs, fps, levels = array("q"), array("q"), array("q")
        for fp, row in self._rows(batch):
            status, _, seq, level = row_head(row)
            if status in _PENDING:
                seqs.append(seq)
                fps.append(fp)
                levels.append(level)
        order = np.argsort(np.frombuffer(seqs, dtype=np.int64), kind="stable")
        fp_array = np.frombuffer(fps, dtype=np.int64)[order]
        _, first = np.unique(fp_array, return_index=True)  # HSCAN may repeat a field
        for index in order[np.sort(first)]:
            yield fps[index], levels[index]

    def iter_all(self, batch: int = 10_000) -> Iterator[tuple[int, int]]:
        for fp, row in self._rows(batch):
            yield fp, row_head(row)[3]

    def count_host(self, fingerprint: int, host: str) -> int:
        count = self._call(("HGET", self.keys.host_urls(tag_of(fingerprint)), host))[0]
        return 0 if count is None else int(count)

    def requeue_inflight(self) -> int:
        inflight = [fp for fp, row in self._rows(10_000) if row_status(row) == Status.INFLIGHT]
        changed = 0
        for start in range(0, len(inflight), 10_000):
            by_tag = _group(inflight[start:start + 10_000], tag_of)
            changed += sum(self._call(*[
                ("EVAL", SET_STATUS, 1, self.keys.urls(tag), STATUS_BYTE[Status.QUEUED],
                 STATUS_BYTE[Status.INFLIGHT], b"", *fps) for tag, fps in by_tag.items()]))
        return changed

    def take_deferred(self) -> list[int]:
        deferred = [fp for fp, row in self._rows(10_000) if row_status(row) == Status.DEFERRED]
        for start in range(0, len(deferred), 10_000):
            by_tag = _group(deferred[start:start + 10_000], tag_of)
            self._call(*[("EVAL", SET_STATUS, 1, self.keys.urls(tag), STATUS_BYTE[Status.QUEUED],
                          STATUS_BYTE[Status.DEFERRED], b"", *fps) for tag, fps in by_tag.items()])
        return deferred

    def count_by_status(self) -> dict[Status, int]:
        """Rows by status, plus the rows trimmed in each finished status."""
        counts = Counter(row_status(row) for _, row in self._rows(10_000))
        fields = list(FINISHED_FIELD.values())
        keys = list(self._scan(self.keys.host_urls_pattern))
        for start in range(0, len(keys), 1000):
            for answer in self._call(*[("HMGET", key, *fields) for key in keys[start:start + 1000]]):
                for status, value in zip(FINISHED_FIELD, answer):
                    counts[status] += int(value or 0)
        return {status: count for status, count in counts.items() if count}

    # -- HostTable ---------------------------------------------------------------
    def add_hosts(self, hosts: Iterable[str], now: float = 0.0) -> int:
        hosts = list(hosts)
        return int(self._call(("SADD", self.keys.hosts, *hosts))[0]) if hosts else 0

    def host_count(self) -> int:
        return int(self._call(("SCARD", self.keys.hosts))[0])

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        self._write("SADD", self.keys.hosts, host)
        if seconds is None:
            self._write("HDEL", self.keys.crawl_delays, host)
        else:
            self._write("HSET", self.keys.crawl_delays, host, repr(float(seconds)))

    def crawl_delays(self) -> dict[str, float]:
        found = self._call(("HGETALL", self.keys.crawl_delays))[0]
        return {host.decode(): float(delay) for host, delay in found.items()}

    def defer_origin(self, origin: str, reason: str, now: float) -> None:
        self._write("HSET", self.keys.deferrals, origin, f"{now!r} {reason}")

    def deferrals(self) -> dict[str, tuple[str, float]]:
        found = self._call(("HGETALL", self.keys.deferrals))[0]
        parsed = {origin.decode(): value.decode().split(" ", 1) for origin, value in found.items()}
        return {origin: (reason, float(at)) for origin, (at, reason) in parsed.items()}

    def clear_deferrals(self) -> None:
        self._write("DEL", self.keys.deferrals)
