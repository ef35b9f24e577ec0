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

from extensions.frontier.urlseen import BloomSeen
from extensions.store.backends import frontier_backend, number_setting, seen_backend, setting
from extensions.store.base import FrontierStore
from extensions.store.memory import MemoryStore
from extensions.store.sqlite import SQLiteStore

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

DB_NAME = "frontier.sqlite3"
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
