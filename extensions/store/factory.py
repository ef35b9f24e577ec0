"""Settings to stores: the one place that chooses and builds them.

``FRONTIER_BACKEND`` alone chooses the frontier's store: ``"sqlite"`` (the
default, one file in ``JOBDIR`` or a temporary directory), ``"memory"``
(tests) or ``"redis"`` (``REDIS_URL``, shared by processes). The former
``FRONTIER_STORE`` (a class path) is gone: setting it fails at start, naming
``FRONTIER_BACKEND``. ``CONTENTSEEN_BACKEND`` (``"auto"`` follows
``FRONTIER_BACKEND``) chooses where the content-seen sets live.

Redis settings are read here only (:func:`redis_settings`): ``REDIS_URL``,
``FRONTIER_REDIS_PREFIX``, ``FRONTIER_REDIS_RETRIES``, ``FRONTIER_REDIS_TIMEOUT``,
``SCHEDULER_PERSIST``, ``SCHEDULER_FLUSH_ON_START``. Every Redis component of
a crawler (URL store, host leases, AOPIC ledger, content-seen sets) shares
the crawler's one :class:`~extensions.store.redis_connection.RedisConnection`
(:func:`redis_connection`): one connection pool per crawler process.
Invalid values raise ``ValueError`` naming the setting and its value.
"""

from __future__ import annotations

import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.job import job_dir

from extensions import defaults
from extensions.contentseen.redis import HEARTBEAT_TTL, RedisContentStore
from extensions.frontier.urlseen import BloomSeen
from extensions.store.base import FrontierStore
from extensions.store.memory import MemoryStore
from extensions.store.redis import RedisStore
from extensions.store.redis_bloom import BloomLayout
from extensions.store.redis_connection import RedisConnection
from extensions.store.redis_keys import Keys
from extensions.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

DB_NAME = "frontier.sqlite3"
BACKENDS: dict[str, type] = {"sqlite": SQLiteStore, "redis": RedisStore, "memory": MemoryStore}
CONTENT_BACKENDS = ("auto", "sqlite", "redis")


def _setting(settings: Any, name: str) -> Any:
    """A setting with our default (the crawler may run without the add-on)."""
    value = settings.get(name)
    return getattr(defaults, name) if value is None else value


def _number(settings: Any, name: str, minimum: float, kind: type = float) -> Any:
    raw = _setting(settings, name)
    try:
        value = kind(raw)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number >= {minimum}, got {raw!r}") from err
    if value < minimum:
        raise ValueError(f"{name} must be a number >= {minimum}, got {raw!r}")
    return value


def _flag(settings: Any, name: str) -> bool:
    return settings.getbool(name, getattr(defaults, name))


# -- which store ---------------------------------------------------------------------
def frontier_backend(settings: Any) -> str:
    """``FRONTIER_BACKEND``, checked; ``FRONTIER_STORE`` is refused."""
    if settings.get("FRONTIER_STORE"):
        raise ValueError(f"FRONTIER_STORE ({settings.get('FRONTIER_STORE')!r}) is no longer supported: "
                         'set FRONTIER_BACKEND to "sqlite", "redis" or "memory"')
    backend = _setting(settings, "FRONTIER_BACKEND") or "sqlite"
    if backend not in BACKENDS:
        raise ValueError(f'FRONTIER_BACKEND must be "sqlite", "redis" or "memory", got {backend!r}')
    return backend


def store_class(settings: Any) -> type:
    """The class of the frontier's store."""
    return BACKENDS[frontier_backend(settings)]


def seen_backend(settings: Any) -> str:
    """``FRONTIER_SEEN_BACKEND``: "exact" or "bloom"."""
    backend = _setting(settings, "FRONTIER_SEEN_BACKEND")
    if backend not in ("exact", "bloom"):
        raise ValueError(f'FRONTIER_SEEN_BACKEND must be "exact" or "bloom", got {backend!r}')
    return backend


def content_backend(settings: Any) -> str:
    """``CONTENTSEEN_BACKEND`` resolved: "sqlite" or "redis" ("auto" follows
    ``FRONTIER_BACKEND``, so processes sharing a frontier share the sets)."""
    backend = _setting(settings, "CONTENTSEEN_BACKEND")
    if backend not in CONTENT_BACKENDS:
        raise ValueError(f'CONTENTSEEN_BACKEND must be "auto", "sqlite" or "redis", got {backend!r}')
    if backend == "auto":
        return "redis" if settings.get("FRONTIER_BACKEND") == "redis" else "sqlite"
    return backend


# -- Redis -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class RedisSettings:
    """The crawl's Redis settings, checked."""

    url: str
    prefix: str
    persist: bool
    flush_on_start: bool
    retries: int
    timeout: float | None  # None: no time-out


def redis_settings(settings: Any) -> RedisSettings:
    """The one reader of the Redis settings."""
    url = str(_setting(settings, "REDIS_URL"))
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"REDIS_URL must be a redis://, rediss:// or unix:// URL, got {url!r}")
    prefix = _setting(settings, "FRONTIER_REDIS_PREFIX")
    Keys(prefix)  # names FRONTIER_REDIS_PREFIX if it cannot be a key prefix
    return RedisSettings(
        url, prefix, _flag(settings, "SCHEDULER_PERSIST"), _flag(settings, "SCHEDULER_FLUSH_ON_START"),
        _number(settings, "FRONTIER_REDIS_RETRIES", 0, int),
        _number(settings, "FRONTIER_REDIS_TIMEOUT", 0.0) or None)


_CONNECTIONS: weakref.WeakKeyDictionary[Any, RedisConnection] = weakref.WeakKeyDictionary()


def redis_connection(crawler: Crawler) -> RedisConnection:
    """The crawler's one Redis connection (made on first use, opened by its
    first user): every Redis component of the crawler shares it."""
    connection = _CONNECTIONS.get(crawler)
    if connection is None:
        config = redis_settings(crawler.settings)
        connection = _CONNECTIONS[crawler] = RedisConnection(config.url, retries=config.retries,
                                                             timeout=config.timeout)
    return connection


def redis_bloom(settings: Any) -> BloomLayout:
    """The shared filter's layout; BloomLayout names a setting out of range."""
    values = []
    for name, kind in (("FRONTIER_REDIS_BLOOM_CAPACITY", int), ("FRONTIER_REDIS_BLOOM_ERROR_RATE", float)):
        raw = _setting(settings, name)
        try:
            values.append(kind(raw))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be a number, got {raw!r}") from err
    return BloomLayout(*values)


def redis_store(crawler: Crawler) -> RedisStore:
    """The frontier's Redis store on the crawler's connection."""
    config = redis_settings(crawler.settings)
    bloom = redis_bloom(crawler.settings) if seen_backend(crawler.settings) == "bloom" else None
    return RedisStore(config.url, config.prefix, persist=config.persist, flush_on_start=config.flush_on_start,
                      retries=config.retries, timeout=config.timeout, bloom=bloom,
                      connection=redis_connection(crawler))


def redis_content_store(crawler: Crawler, flush_interval: float) -> RedisContentStore:
    """The content-seen sets' store on the crawler's connection."""
    config = redis_settings(crawler.settings)
    return RedisContentStore(
        config.url, config.prefix, persist=config.persist, flush_on_start=config.flush_on_start,
        retries=config.retries, timeout=config.timeout,
        ttl=max(HEARTBEAT_TTL, 3 * flush_interval),  # the periodic flush renews this process's heartbeat
        connection=redis_connection(crawler))


# -- the frontier's store ------------------------------------------------------------------
def frontier_store(crawler: Crawler) -> tuple[FrontierStore, Path | None, Path | None]:
    """The store, the directory it lives in, and a directory to remove at close."""
    settings = crawler.settings
    backend = frontier_backend(settings)
    jobdir = job_dir(settings)
    if backend == "redis":
        return redis_store(crawler), Path(jobdir) if jobdir else None, None
    if backend == "memory":
        return MemoryStore(), Path(jobdir) if jobdir else None, None
    directory = Path(jobdir) if jobdir else Path(tempfile.mkdtemp(prefix="frontier-"))
    cache_mb = _number(settings, "FRONTIER_SQLITE_CACHE_MB", 1, int)
    return SQLiteStore(directory / DB_NAME, cache_mb=cache_mb), directory, None if jobdir else directory


def url_bloom(settings: Any) -> BloomSeen | None:
    """The in-process URL-seen Bloom filter; none on Redis, whose store has its own."""
    if seen_backend(settings) == "exact" or frontier_backend(settings) == "redis":
        return None
    return BloomSeen(
        initial_capacity=_number(settings, "FRONTIER_BLOOM_INITIAL_CAPACITY", 1, int),
        error_rate=float(_setting(settings, "FRONTIER_BLOOM_ERROR_RATE")),
    )


def read_only_store(settings: Any) -> FrontierStore:
    """The store of the crawl the settings name, opened to read only (tools
    such as ``scrapy linkgraph``; the crawl may be running). ValueError if
    the settings name no kept store; FrontierStoreError if it is not there."""
    backend = frontier_backend(settings)
    if backend == "redis":
        config = redis_settings(settings)
        store: Any = RedisStore(config.url, config.prefix, retries=config.retries, timeout=config.timeout)
    elif backend == "sqlite" and settings.get("JOBDIR"):  # not job_dir(): it would make the directory
        store = SQLiteStore(Path(settings.get("JOBDIR")) / DB_NAME)
    else:
        raise ValueError("no kept crawl to read: name it with -s JOBDIR=DIR "
                         "(or -s FRONTIER_BACKEND=redis and REDIS_URL)")
    store.open_read_only()
    return store
