"""The frontier's store in Redis, a single instance or a Redis Cluster. Writes wait
in the connection's pipeline for the next read; after a crash the store holds a prefix
of the command stream (``clean`` is ``0`` while a crawl runs). ``persist=False`` deletes
the crawl's keys at close when no other process is alive (:mod:`.registry`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scrapy.utils.project import data_path

from extensions.backends.redis.bloom import BloomLayout
from extensions.backends.redis.census import RedisCensus
from extensions.backends.redis.connection import RedisConnection, redact
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.redis.keys import SCHEMA_VERSION, Keys
from extensions.backends.redis.registry import ProcessRegistry, registry_of
from extensions.backends.redis.revisits import RedisRevisitTable
from extensions.backends.redis.tables import (
    RedisCashTable,
    RedisContentGroups,
    RedisHostTable,
    RedisURLTable,
    SeenLayout,
    URLCounters,
)
from extensions.frontier.store import FrontierStoreError
from extensions.linkgraph.segmentlinks import SegmentLinkTable

logger = logging.getLogger(__name__)


def recorded_layout(description: str) -> SeenLayout | None:
    """The URL-seen layout a crawl records (``describe()``); None for ``rows``."""
    kind, *values = description.split()
    try:
        if kind == "fpset" and len(values) == 1:
            return FingerprintSetLayout(int(values[0]))
        if kind == "bloom" and len(values) == 2:
            return BloomLayout(int(values[0]), float(values[1]))
    except ValueError as err:
        raise ValueError(f"unreadable URL-seen layout {description!r}: {err}") from err
    if kind == "rows" and not values:
        return None
    raise ValueError(f"unknown URL-seen layout {description!r}")


def segments_directory(prefix: str, directory: str | Path | None = None) -> Path:
    """Where the crawl of ``prefix`` keeps its link segments on disk."""
    return Path(directory) if directory else Path(data_path(f"linksegments/{prefix}"))


class RedisStore:
    """The store's tables over one connection, and its lifecycle (``seen``: the URL-seen layout)."""

    def __init__(self, url: str, prefix: str = "web", *, persist: bool = True,
                 flush_on_start: bool = False, retries: int = 6, timeout: float | None = 10.0,
                 batch: int = 1024, seen: SeenLayout | None | str = "recorded", keep_rows: bool = False,
                 connection: RedisConnection | None = None, links: SegmentLinkTable | None = None) -> None:
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
        self.counters = URLCounters(self.keys, self._require)
        self.urls = RedisURLTable(self.keys, self._require, self.counters, self.seen, keep_rows)
        self.hosts = RedisHostTable(self.keys, self._require)
        self.cash = RedisCashTable(self.keys, self._require)
        self.groups = RedisContentGroups(self.keys, self._require)
        self.links = links or SegmentLinkTable(segments_directory(prefix))  # on disk, not in Redis
        self.revisits = RedisRevisitTable(self.keys, self._require, lambda: not self.read_only)
        self.census = RedisCensus(self.keys, self._require, self.urls)  # reads only

    # -- lifecycle -------------------------------------------------------------
    def open(self) -> None:
        self.connection.attach("the frontier")
        self._attached = True
        if self.flush_on_start:
            self.delete_crawl()
        try:  # a member before any key is read: a crawl being deleted is waited for
            self.registry.enter()
        except FrontierStoreError:
            self.abandon()
            raise
        schema, clean, tails, ledger = self._call(("HMGET", self.keys.meta, "schema", "clean", "tails", "aopic"))[0]
        self.urls.tails = tails == b"1"
        if ledger is not None or schema not in (None, SCHEMA_VERSION.encode()):  # aopic: a single-process crawl
            began = f"in layout {schema.decode()}" if ledger is None else "by an earlier single-process frontier"
            self._refuse()
            raise FrontierStoreError(
                f"the frontier keys at {self.location} were written {began}, this release reads layout "
                f"{SCHEMA_VERSION} of the shared frontier only: finish that crawl with the release that "
                "began it, or start it over (SCHEDULER_FLUSH_ON_START=True deletes its keys) or under "
                "another FRONTIER_REDIS_PREFIX")
        self._check_seen_backend()
        self.clean = clean != b"0" or next(self.scan(self.keys.urls_pattern), None) is None
        self.write("HSET", self.keys.meta, "schema", SCHEMA_VERSION, "clean", "0")
        if schema is None:  # a new crawl: the baseline of its memory use
            self.write("HSETNX", self.keys.meta, "memory_base", self.connection.used_memory()[0])
        self._flush()

    def open_read_only(self) -> None:
        """Attach to an existing (maybe running) crawl's keys to read them only."""
        self.connection.attach("the frontier (read only)")
        self._attached = self.read_only = True
        if self.get_meta("schema") is None:
            self.abandon()
            raise FrontierStoreError(f"no crawl at {self.location} (check REDIS_URL and FRONTIER_REDIS_PREFIX)")
        self.urls.tails = self.get_meta("tails") == "1"
        recorded = self.get_meta("seen")
        if self._asked == "recorded" and recorded is not None:
            self._adopt(recorded)

    def _check_seen_backend(self) -> None:
        """A crawl keeps the URL-seen layout it began with."""
        wanted = "rows" if self.seen is None else self.seen.describe()
        recorded = self._call(("HSETNX", self.keys.meta, "seen", wanted), ("HGET", self.keys.meta, "seen"))[1]
        if self._asked == "recorded" and recorded.decode() != wanted:
            self._adopt(recorded.decode())
            return
        if recorded.decode() != wanted:
            self._refuse()
            raise FrontierStoreError(
                f"the crawl at {self.location} began with URL-seen {recorded.decode()!r}, not {wanted!r}: "
                "keep its FRONTIER_SEEN_BACKEND, FRONTIER_REDIS_BLOOM_CAPACITY and "
                "FRONTIER_REDIS_BLOOM_ERROR_RATE, or choose another FRONTIER_REDIS_PREFIX")

    def _adopt(self, recorded: str) -> None:
        self.seen = recorded_layout(recorded)
        self.urls.use(self.seen, self.keep_rows)

    def checkpoint(self) -> None:
        """Send every buffered write (durable on the server's terms: AOF)."""
        if self._attached:
            self.counters.add_known()
            self.links.flush()
            self.connection.flush()

    def close(self, clean: bool = True) -> None:
        if not self._attached or self.read_only:
            return self.abandon()
        if self.persist:
            self.set_meta("clean", "1" if clean else "0")
            self.checkpoint()
            self.registry.leave(None)
        elif (others := self.registry.leave(None, fence=True)) == 0:  # the last: fenced while it deletes
            self.delete_crawl()
        else:
            logger.info("%d other crawler process(es) still use the crawl at %s: its keys stay", others, self.location)
        self.registry.unfence()  # this process's fence (if it took one), once no component of it is left
        self.links.close()
        self._attached = False
        self.connection.detach()

    def abandon(self) -> None:
        """Drop the connection without sending buffered writes (a simulated crash)."""
        self.links.abandon()
        if self._attached:
            self._attached = False
            self.connection.close()

    def _refuse(self) -> None:
        self.registry.leave(None)
        self.abandon()

    def delete_crawl(self) -> int:
        """Delete every key of this prefix; return how many."""
        self._flush()
        deleted = self.registry.delete(self.keys.all_patterns, self.keys.singles, self.batch)
        self.links.delete()
        self.counters.reset()
        return deleted

    def get_meta(self, key: str) -> str | None:
        value = self._call(("HGET", self.keys.meta, key))[0]
        return None if value is None else value.decode()

    def set_meta(self, key: str, value: str) -> None:
        self.write("HSET", self.keys.meta, key, value)

    # -- memory (for stats) --------------------------------------------------------
    def memory_usage(self) -> tuple[int, int] | None:
        """``(bytes, URLs)``, crawl-wide, above the memory used when the crawl began."""
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
        return registry_of(self.connection, self.keys.processes)

    @property
    def round_trips(self) -> int:
        return self.connection.round_trips

    def call(self, *commands: tuple[Any, ...]) -> list[Any]:
        return self._call(*commands) if commands else self._flush() or []

    def write(self, *command: Any) -> None:
        self._require().write(*command)

    def scan(self, pattern: str) -> Iterator[bytes]:
        return self._require().scan(pattern)

    @property
    def failures(self) -> int:
        return self.connection.failures

    @property
    def cluster(self) -> bool:
        return self.connection.cluster

    def _require(self) -> RedisConnection:
        if not self._attached:
            raise FrontierStoreError(f"the frontier store {self.location} is not open")
        return self.connection

    def _call(self, *commands: tuple[Any, ...]) -> list[Any]:
        return self._require().call(*commands)

    def _flush(self) -> None:
        if self._attached:
            self.connection.flush()
