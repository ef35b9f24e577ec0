"""The Redis backend: the crawl's state in one Redis (or a Redis Cluster)
shared by every crawler process of the crawl, the host dispatch too (:mod:`.dispatch`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.job import job_dir
from scrapy.utils.project import data_path

from extensions import defaults
from extensions.backends.settings import seen_backend

if TYPE_CHECKING:
    from typing_extensions import Self

    from scrapy.crawler import Crawler

    from extensions.backends.redis.archive import RedisArchiveIndex
    from extensions.backends.redis.dispatch import SharedDispatch
    from extensions.backends.redis.ledger import SharedLedger
    from extensions.contentseen.sets import ContentOptions, ContentSets
    from extensions.frontier.store import FrontierStore

# modules that import redis are imported in the methods: loading this class costs an SQLite crawl nothing


class RedisBackend:
    """Every store in Redis, shared by the crawl's processes."""

    takes_pushed_seeds = True

    def __init__(self, settings: Any, crawler: Crawler | None = None) -> None:
        self.settings = settings
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler.settings, crawler)

    @classmethod
    def for_reading(cls, settings: Any) -> Self:
        return cls(settings)

    def frontier_store(self) -> tuple[FrontierStore, Path | None, Path | None]:
        from extensions.backends.redis.factory import redis_store  # noqa: PLC0415

        if self.settings.getbool("REVISIT_ENABLED") and seen_backend(self.settings) == "bloom":
            raise ValueError("REVISIT_ENABLED needs the URL rows of fetched pages, which the Redis store drops "
                             "with FRONTIER_SEEN_BACKEND='bloom': use FRONTIER_SEEN_BACKEND='exact'")
        jobdir = job_dir(self.settings)
        return redis_store(self.crawler), Path(jobdir) if jobdir else None, None

    def url_filter(self) -> None:
        return None  # the store's own filter, shared by every process (FRONTIER_SEEN_BACKEND="bloom")

    def ledger(self, store: FrontierStore, initial_cash: float, tax: float) -> SharedLedger:
        """One ledger for every process (its scalars in Redis)."""
        from extensions.backends.redis.ledger import SharedLedger  # noqa: PLC0415

        return SharedLedger(store, initial_cash, tax)

    def host_dispatch(self, front_queues: int, back_queues: int) -> SharedDispatch:
        """The dispatch shared by every process (host leases)."""
        settings = self.settings
        if settings.getint("CONCURRENT_REQUESTS_PER_IP"):
            raise ValueError("CONCURRENT_REQUESTS_PER_IP is not supported on the Redis backend "
                             f"(politeness is per host name), got {settings.get('CONCURRENT_REQUESTS_PER_IP')!r}")
        from extensions.backends.redis.dispatch import SharedDispatch  # noqa: PLC0415

        lease = {name: settings.getfloat(name, getattr(defaults, name))
                 for name in ("FRONTIER_LEASE_MAX_LATENESS", "FRONTIER_LEASE_POLL_INTERVAL", "FRONTIER_LEASE_TTL")}
        return SharedDispatch(front_queues, back_queues, lease_ttl=lease["FRONTIER_LEASE_TTL"],
                              max_lateness=lease["FRONTIER_LEASE_MAX_LATENESS"],
                              poll_interval=lease["FRONTIER_LEASE_POLL_INTERVAL"],
                              io_thread=settings.getbool("FRONTIER_REDIS_IO_THREAD", defaults.FRONTIER_REDIS_IO_THREAD),
                              window=settings.getint("FRONTIER_REDIS_QUEUE_WINDOW",
                                                     defaults.FRONTIER_REDIS_QUEUE_WINDOW))

    def content_sets(self, options: ContentOptions) -> ContentSets:
        from extensions.backends.redis.factory import redis_content_sets  # noqa: PLC0415

        return redis_content_sets(self.crawler, options)

    def archive_index(self) -> RedisArchiveIndex:
        from extensions.backends.redis.archive import RedisArchiveIndex  # noqa: PLC0415
        from extensions.backends.redis.factory import redis_connection, redis_settings  # noqa: PLC0415

        return RedisArchiveIndex(redis_connection(self.crawler), redis_settings(self.settings).prefix)

    def read_only_store(self) -> FrontierStore:
        from extensions.backends.redis.factory import read_only_redis_store  # noqa: PLC0415

        store = read_only_redis_store(self.settings)
        store.open_read_only()
        return store

    def data_directory(self, name: str) -> Path | None:
        from extensions.backends.redis.factory import redis_settings  # noqa: PLC0415

        return Path(data_path(f"{name}/{redis_settings(self.settings).prefix}", createdir=True))
