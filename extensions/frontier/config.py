"""Settings to :class:`~extensions.frontier.scheduler.Frontier` arguments.

Called only from ``Frontier.from_crawler``: the one place that reads
settings, resolves class paths, chooses the host dispatch and reaches into
the engine. Invalid values
fail here, at start, naming the setting and its value.

Settings (defaults in :mod:`extensions.defaults`, section ``# --- Frontier``):
``FRONTIER_BACK_QUEUES`` (0: 3 x ``CONCURRENT_REQUESTS``),
``FRONTIER_BLOOM_ERROR_RATE``, ``FRONTIER_BLOOM_INITIAL_CAPACITY``,
``FRONTIER_CHECKPOINT_INTERVAL``, ``FRONTIER_FRONT_QUEUES``,
``FRONTIER_FRONT_QUEUE_WEIGHTS`` (empty: level + 1),
``FRONTIER_POLITENESS_FACTOR``, ``FRONTIER_PRIORITIZER``,
``FRONTIER_QUEUE_BUFFER``, ``FRONTIER_REFILL_BUDGET``,
``FRONTIER_SEEN_BACKEND`` ("exact" or "bloom"), ``FRONTIER_SEEN_CACHE_SIZE``,
``FRONTIER_SQLITE_CACHE_MB``, ``FRONTIER_STORE``, ``FRONTIER_WRITE_AHEAD``; and Scrapy's own
``CONCURRENT_REQUESTS``, ``CONCURRENT_REQUESTS_PER_DOMAIN``,
``CONCURRENT_REQUESTS_PER_IP``, ``DOWNLOAD_DELAY``, ``DOWNLOAD_SLOTS``,
``JOBDIR``.

The store: ``FRONTIER_BACKEND`` ("sqlite", the default; "redis"; "memory")
unless ``FRONTIER_STORE`` names a class other than the SQLite store. The Redis
store reads ``REDIS_URL``, ``SCHEDULER_PERSIST`` and ``SCHEDULER_FLUSH_ON_START``
(scrapy-redis' names and meanings), ``FRONTIER_REDIS_PREFIX``,
``FRONTIER_REDIS_RETRIES`` and ``FRONTIER_REDIS_TIMEOUT``; with
``FRONTIER_SEEN_BACKEND = "bloom"`` the URL-seen set is a Bloom filter in
Redis shared by every process (``FRONTIER_REDIS_BLOOM_CAPACITY``,
``FRONTIER_REDIS_BLOOM_ERROR_RATE``; :mod:`extensions.store.redis_bloom`)
instead of the in-process one (``FRONTIER_BLOOM_*``).

Several processes: with the Redis store and ``FRONTIER_DISTRIBUTED`` (on by
default) the frontier composes the shared host dispatch
(:class:`~extensions.frontier.shareddispatch.SharedDispatch`, see
:mod:`extensions.frontier.distributed`), which also reads ``FRONTIER_LEASE_MAX_LATENESS``, ``FRONTIER_LEASE_POLL_INTERVAL``
and ``FRONTIER_LEASE_TTL``; ``CONCURRENT_REQUESTS_PER_IP`` is refused there.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.asyncio import call_later, create_looping_call
from scrapy.utils.defer import _schedule_coro
from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler, load_object

from extensions import defaults
from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.front import BiasedSelector
from extensions.frontier.hostkey import HostKey
from extensions.frontier.localdispatch import LocalDispatch
from extensions.frontier.options import FrontierOptions, Runtime
from extensions.frontier.politeness import Politeness
from extensions.frontier.shareddispatch import SharedDispatch
from extensions.frontier.urlseen import BloomSeen
from extensions.store.base import WriteAheadStore
from extensions.store.memory import MemoryStore
from extensions.store.redis import RedisStore
from extensions.store.redis_bloom import BloomLayout
from extensions.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

DB_NAME = "frontier.sqlite3"
BLOOM_NAME = "frontier.bloom"


def _with_defaults(settings: Any) -> Any:
    """The crawler's settings with our ``FRONTIER_*`` defaults filled in, so
    the frontier also works with only ``SCHEDULER`` set (no add-on)."""
    settings = settings.copy()
    settings.frozen = False
    for name in dir(defaults):
        if name.startswith("FRONTIER_") and settings.get(name) is None:
            settings.set(name, getattr(defaults, name), "default")
    return settings


def _positive_int(settings: Any, name: str, minimum: int = 1) -> int:
    value = settings.getint(name)
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {settings.get(name)!r}")
    return value


def _non_negative(settings: Any, name: str) -> float:
    value = settings.getfloat(name)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {settings.get(name)!r}")
    return value


BACKENDS = {"sqlite": SQLiteStore, "redis": RedisStore, "memory": MemoryStore}


def _store_class(settings: Any) -> type:
    """FRONTIER_STORE when it names another class than the SQLite store, else
    the class of FRONTIER_BACKEND."""
    backend = settings.get("FRONTIER_BACKEND") or "sqlite"
    if backend not in BACKENDS:
        raise ValueError(f'FRONTIER_BACKEND must be "sqlite", "redis" or "memory", got {backend!r}')
    store_cls = load_object(settings.get("FRONTIER_STORE") or SQLiteStore)
    if store_cls is SQLiteStore:
        return BACKENDS[backend]
    if backend != "sqlite":
        raise ValueError(f"FRONTIER_STORE ({settings.get('FRONTIER_STORE')!r}) and FRONTIER_BACKEND "
                         f"({backend!r}) both choose the store: set only one")
    return store_cls


def _setting(settings: Any, name: str) -> Any:
    """A setting outside the FRONTIER_ prefix, with our default."""
    value = settings.get(name)
    return getattr(defaults, name) if value is None else value


def _redis_store(store_cls: type, settings: Any) -> Any:
    url = _setting(settings, "REDIS_URL")
    if not str(url).startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"REDIS_URL must be a redis://, rediss:// or unix:// URL, got {url!r}")
    return store_cls(
        str(url), settings.get("FRONTIER_REDIS_PREFIX"),
        persist=settings.getbool("SCHEDULER_PERSIST", defaults.SCHEDULER_PERSIST),
        flush_on_start=settings.getbool("SCHEDULER_FLUSH_ON_START", defaults.SCHEDULER_FLUSH_ON_START),
        retries=_positive_int(settings, "FRONTIER_REDIS_RETRIES", 0),
        timeout=_non_negative(settings, "FRONTIER_REDIS_TIMEOUT") or None,
        bloom=_redis_bloom(settings) if _seen_backend(settings) == "bloom" else None,
    )


def _redis_bloom(settings: Any) -> BloomLayout:
    """The shared filter's layout; BloomLayout names a setting out of range."""
    values = []
    for name, read in (("FRONTIER_REDIS_BLOOM_CAPACITY", settings.getint),
                       ("FRONTIER_REDIS_BLOOM_ERROR_RATE", settings.getfloat)):
        try:
            values.append(read(name))
        except (TypeError, ValueError) as err:
            raise ValueError(f"{name} must be a number, got {settings.get(name)!r}") from err
    return BloomLayout(*values)


def _seen_backend(settings: Any) -> str:
    backend = settings.get("FRONTIER_SEEN_BACKEND", defaults.FRONTIER_SEEN_BACKEND)
    if backend not in ("exact", "bloom"):
        raise ValueError(f'FRONTIER_SEEN_BACKEND must be "exact" or "bloom", got {backend!r}')
    return backend


def _store(crawler: Crawler) -> tuple[Any, Path | None, Path | None]:
    """The store, the directory it lives in, and a directory to remove at close."""
    settings = _with_defaults(crawler.settings)
    store_cls = _store_class(settings)
    jobdir = job_dir(settings)
    if issubclass(store_cls, RedisStore):
        return _redis_store(store_cls, settings), Path(jobdir) if jobdir else None, None
    if not issubclass(store_cls, SQLiteStore):
        store = build_from_crawler(store_cls, crawler) if hasattr(store_cls, "from_crawler") else store_cls()
        return store, Path(jobdir) if jobdir else None, None
    directory = Path(jobdir) if jobdir else Path(tempfile.mkdtemp(prefix="frontier-"))
    cache_mb = _positive_int(settings, "FRONTIER_SQLITE_CACHE_MB")
    return store_cls(directory / DB_NAME, cache_mb=cache_mb), directory, None if jobdir else directory


def _bloom(settings: Any) -> BloomSeen | None:
    """The in-process Bloom filter; none on Redis, whose store has its own."""
    if _seen_backend(settings) == "exact" or issubclass(_store_class(settings), RedisStore):
        return None
    return BloomSeen(
        initial_capacity=_positive_int(settings, "FRONTIER_BLOOM_INITIAL_CAPACITY"),
        error_rate=settings.getfloat("FRONTIER_BLOOM_ERROR_RATE"),
    )


def _engine_hooks(crawler: Crawler) -> dict[str, Any]:
    """Wake-up, in-progress view and error handling through the engine.

    Scrapy has no public "poll the scheduler again" call: the engine's
    ``_slot.nextcall.schedule()`` is what its own downloads use, so the
    frontier uses it too, guarded for an engine without a slot."""

    def engine() -> Any:
        try:
            return crawler.engine
        except (AttributeError, RuntimeError):  # not set before the crawl starts
            return None

    def slot() -> Any:
        return getattr(engine(), "_slot", None)

    def wake() -> None:
        if (current := slot()) is not None:
            current.nextcall.schedule()

    def in_progress() -> Any:
        current = slot()
        return None if current is None else current.inprogress

    def on_store_error(err: Exception) -> None:
        current = engine()
        if current is not None and current.spider is not None:
            _schedule_coro(current.close_spider_async(reason="frontier_store_error"))

    return {"wake": wake, "in_progress": in_progress, "on_store_error": on_store_error}


def _distributed(settings: Any) -> bool:
    return issubclass(_store_class(settings), RedisStore) and settings.getbool("FRONTIER_DISTRIBUTED")


def _shared_dispatch(settings: Any, front_queues: int, back_queues: int) -> SharedDispatch:
    """The host dispatch shared by every process of the crawl (Redis leases)."""
    if settings.getint("CONCURRENT_REQUESTS_PER_IP"):
        raise ValueError("CONCURRENT_REQUESTS_PER_IP is not supported with FRONTIER_DISTRIBUTED "
                         f"(politeness is per host name), got {settings.get('CONCURRENT_REQUESTS_PER_IP')!r}")
    values = {name: settings.getfloat(name) for name in (
        "FRONTIER_LEASE_MAX_LATENESS", "FRONTIER_LEASE_POLL_INTERVAL", "FRONTIER_LEASE_TTL")}
    for name, value in values.items():
        if value <= 0:
            raise ValueError(f"{name} must be > 0, got {settings.get(name)!r}")
    return SharedDispatch(front_queues, back_queues, max_lateness=values["FRONTIER_LEASE_MAX_LATENESS"],
                          poll_interval=values["FRONTIER_LEASE_POLL_INTERVAL"],
                          lease_ttl=values["FRONTIER_LEASE_TTL"])


def _local_dispatch(settings: Any, front_queues: int, back_queues: int) -> LocalDispatch:
    """Mercator's front queues, back queues and host heap in this process."""
    weights = settings.getlist("FRONTIER_FRONT_QUEUE_WEIGHTS")
    return LocalDispatch(
        front_queues, back_queues,
        queue_buffer=_positive_int(settings, "FRONTIER_QUEUE_BUFFER"),
        selector=BiasedSelector([int(w) for w in weights]) if weights else None,
        refill_budget=_positive_int(settings, "FRONTIER_REFILL_BUDGET"),
    )


def frontier_kwargs(crawler: Crawler) -> dict[str, Any]:
    """Every argument of ``Frontier.__init__`` from the crawler's settings:
    the parts, the host dispatch among them (shared, on Redis leases, with
    the Redis store and ``FRONTIER_DISTRIBUTED``, else local), and the plain
    values grouped as :mod:`.options` declares them."""
    settings = _with_defaults(crawler.settings)
    front_queues = _positive_int(settings, "FRONTIER_FRONT_QUEUES")
    back_queues = settings.getint("FRONTIER_BACK_QUEUES") or 3 * _positive_int(
        settings, "CONCURRENT_REQUESTS"
    )
    if back_queues < 1:
        raise ValueError(f"FRONTIER_BACK_QUEUES must be >= 0, got {settings.get('FRONTIER_BACK_QUEUES')!r}")
    per_ip = settings.getint("CONCURRENT_REQUESTS_PER_IP")
    shared = _distributed(settings)
    dispatch = (_shared_dispatch if shared else _local_dispatch)(settings, front_queues, back_queues)
    prioritizer_cls = load_object(settings.get("FRONTIER_PRIORITIZER"))
    store, directory, cleanup = _store(crawler)
    bloom = _bloom(settings)
    return {
        "store": store,
        "dispatch": dispatch,
        "prioritizer": prioritizer_cls(levels=front_queues),
        "politeness": Politeness(
            delay=_non_negative(settings, "DOWNLOAD_DELAY"),
            factor=_non_negative(settings, "FRONTIER_POLITENESS_FACTOR"),
            concurrency=per_ip or _positive_int(settings, "CONCURRENT_REQUESTS_PER_DOMAIN"),
            slots=settings.getdict("DOWNLOAD_SLOTS"),
        ),
        "hostkey": HostKey(per_ip=bool(per_ip)),
        "ledger": AOPICLedger(store, settings.getfloat("FRONTIER_AOPIC_INITIAL_CASH"),
                              settings.getfloat("FRONTIER_AOPIC_TAX"))
        if settings.getbool("FRONTIER_AOPIC") else None,
        "bloom": bloom,
        "options": FrontierOptions(
            seen_cache_size=_positive_int(settings, "FRONTIER_SEEN_CACHE_SIZE", 0),
            checkpoint_interval=_non_negative(settings, "FRONTIER_CHECKPOINT_INTERVAL"),
            host_budget=_positive_int(settings, "FRONTIER_HOST_BUDGET", 0),
            revisits=_positive_int(settings, "FRONTIER_AOPIC_REVISITS", 0),
            idle_close=_non_negative(settings, "FRONTIER_IDLE_CLOSE"),
            write_ahead=settings.getbool("FRONTIER_WRITE_AHEAD") and isinstance(store, WriteAheadStore),
            record_refusals=settings.getbool("FRONTIER_RECORD_REFUSALS"),
            bloom_path=directory / BLOOM_NAME if bloom is not None and directory else None,
            cleanup_dir=cleanup,
        ),
        "runtime": Runtime(clock=time.monotonic, wall_clock=time.time, call_later=call_later,
                           stats=crawler.stats, looping_call=create_looping_call, **_engine_hooks(crawler)),
    }
