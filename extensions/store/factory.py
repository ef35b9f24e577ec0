"""Settings to stores: the one place that chooses and builds them.

``FRONTIER_BACKEND`` alone chooses the frontier's store: ``"sqlite"`` (the
default, one file in ``JOBDIR`` or a temporary directory), ``"memory"``
(tests) or ``"redis"`` (``REDIS_URL``, shared by processes). The former
``FRONTIER_STORE`` (a class path) is gone: setting it fails at start, naming
``FRONTIER_BACKEND``. ``CONTENTSEEN_BACKEND`` (``"auto"`` follows
``FRONTIER_BACKEND``) chooses where the content-seen sets live.

The Redis stores and the Redis settings are built and read by
:mod:`extensions.store.redis_factory`, imported here only on the Redis
branch: an SQLite crawl does not import the ``redis`` package (its import
is start-up CPU of every crawl). Invalid values raise ``ValueError``
naming the setting and its value.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.job import job_dir

from extensions import defaults
from extensions.frontier.urlseen import BloomSeen
from extensions.store.base import FrontierStore
from extensions.store.memory import MemoryStore
from extensions.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

DB_NAME = "frontier.sqlite3"
BACKENDS = ("sqlite", "redis", "memory")
CONTENT_BACKENDS = ("auto", "sqlite", "redis")


def setting(settings: Any, name: str) -> Any:
    """A setting with our default (the crawler may run without the add-on)."""
    value = settings.get(name)
    return getattr(defaults, name) if value is None else value


def number_setting(settings: Any, name: str, minimum: float, kind: type = float) -> Any:
    """A number setting (with our default), checked against ``minimum``."""
    raw = setting(settings, name)
    try:
        value = kind(raw)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number >= {minimum}, got {raw!r}") from err
    if value < minimum:
        raise ValueError(f"{name} must be a number >= {minimum}, got {raw!r}")
    return value


def flag_setting(settings: Any, name: str) -> bool:
    """A boolean setting with our default."""
    return settings.getbool(name, getattr(defaults, name))


# -- which store ---------------------------------------------------------------------
def frontier_backend(settings: Any) -> str:
    """``FRONTIER_BACKEND``, checked; ``FRONTIER_STORE`` is refused."""
    if settings.get("FRONTIER_STORE"):
        raise ValueError(f"FRONTIER_STORE ({settings.get('FRONTIER_STORE')!r}) is no longer supported: "
                         'set FRONTIER_BACKEND to "sqlite", "redis" or "memory"')
    backend = setting(settings, "FRONTIER_BACKEND") or "sqlite"
    if backend not in BACKENDS:
        raise ValueError(f'FRONTIER_BACKEND must be "sqlite", "redis" or "memory", got {backend!r}')
    return backend


def seen_backend(settings: Any) -> str:
    """``FRONTIER_SEEN_BACKEND``: "exact" or "bloom"."""
    backend = setting(settings, "FRONTIER_SEEN_BACKEND")
    if backend not in ("exact", "bloom"):
        raise ValueError(f'FRONTIER_SEEN_BACKEND must be "exact" or "bloom", got {backend!r}')
    return backend


def content_backend(settings: Any) -> str:
    """``CONTENTSEEN_BACKEND`` resolved: "sqlite" or "redis" ("auto" follows
    ``FRONTIER_BACKEND``, so processes sharing a frontier share the sets)."""
    backend = setting(settings, "CONTENTSEEN_BACKEND")
    if backend not in CONTENT_BACKENDS:
        raise ValueError(f'CONTENTSEEN_BACKEND must be "auto", "sqlite" or "redis", got {backend!r}')
    if backend == "auto":
        return "redis" if settings.get("FRONTIER_BACKEND") == "redis" else "sqlite"
    return backend


# -- the frontier's store ------------------------------------------------------------------
def frontier_store(crawler: Crawler) -> tuple[FrontierStore, Path | None, Path | None]:
    """The store, the directory it lives in, and a directory to remove at close."""
    settings = crawler.settings
    backend = frontier_backend(settings)
    jobdir = job_dir(settings)
    if backend == "redis":
        from extensions.store.redis_factory import redis_store  # noqa: PLC0415 - imports redis

        return redis_store(crawler), Path(jobdir) if jobdir else None, None
    if backend == "memory":
        return MemoryStore(), Path(jobdir) if jobdir else None, None
    directory = Path(jobdir) if jobdir else Path(tempfile.mkdtemp(prefix="frontier-"))
    cache_mb = number_setting(settings, "FRONTIER_SQLITE_CACHE_MB", 1, int)
    return SQLiteStore(directory / DB_NAME, cache_mb=cache_mb), directory, None if jobdir else directory


def url_bloom(settings: Any) -> BloomSeen | None:
    """The in-process URL-seen Bloom filter; none on Redis, whose store has its own."""
    if seen_backend(settings) == "exact" or frontier_backend(settings) == "redis":
        return None
    return BloomSeen(
        initial_capacity=number_setting(settings, "FRONTIER_BLOOM_INITIAL_CAPACITY", 1, int),
        error_rate=float(setting(settings, "FRONTIER_BLOOM_ERROR_RATE")),
    )


def read_only_store(settings: Any) -> FrontierStore:
    """The store of the crawl the settings name, opened to read only (tools
    such as ``scrapy linkgraph``; the crawl may be running). ValueError if
    the settings name no kept store; FrontierStoreError if it is not there."""
    backend = frontier_backend(settings)
    if backend == "redis":
        from extensions.store.redis_factory import read_only_redis_store  # noqa: PLC0415 - imports redis

        store: Any = read_only_redis_store(settings)
    elif backend == "sqlite" and settings.get("JOBDIR"):  # not job_dir(): it would make the directory
        store = SQLiteStore(Path(settings.get("JOBDIR")) / DB_NAME)
    else:
        raise ValueError("no kept crawl to read: name it with -s JOBDIR=DIR "
                         "(or -s FRONTIER_BACKEND=redis and REDIS_URL)")
    store.open_read_only()
    return store
