"""Settings to the Redis stores, imported only on the Redis path; every Redis
component of a crawler shares its one connection (:func:`redis_connection`)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from extensions.backends.redis.bloom import BloomLayout
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.contentseen import HEARTBEAT_TTL, RedisContentSeen, RedisContentStore
from extensions.backends.redis.contentseen_worker import AsyncRedisContentSeen
from extensions.backends.redis.keys import Keys
from extensions.backends.redis.nearindex import RedisNearDuplicateIndex
from extensions.backends.redis.worker import running_reactor, start_worker
from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.nearindex import BlockLayout
from extensions.contentseen.sets import ContentOptions, ContentSets
from extensions.backends.redis.store import RedisStore, segments_directory
from extensions.linkgraph.segmentlinks import SegmentLinkTable
from extensions.backends.settings import (
    flag_setting,
    number_setting,
    seen_backend,
    setting,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


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
    url = str(setting(settings, "REDIS_URL"))
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise ValueError(f"REDIS_URL must be a redis://, rediss:// or unix:// URL, got {url!r}")
    prefix = setting(settings, "FRONTIER_REDIS_PREFIX")
    Keys(prefix)  # names FRONTIER_REDIS_PREFIX if it cannot be a key prefix
    return RedisSettings(
        url, prefix, flag_setting(settings, "SCHEDULER_PERSIST"), flag_setting(settings, "SCHEDULER_FLUSH_ON_START"),
        number_setting(settings, "FRONTIER_REDIS_RETRIES", 0, int),
        number_setting(settings, "FRONTIER_REDIS_TIMEOUT", 0.0) or None)


_CONNECTIONS: weakref.WeakKeyDictionary[Any, RedisConnection] = weakref.WeakKeyDictionary()


def redis_connection(crawler: Crawler) -> RedisConnection:
    """The crawler's one Redis connection, shared by every Redis component."""
    connection = _CONNECTIONS.get(crawler)
    if connection is None:
        config = redis_settings(crawler.settings)
        connection = _CONNECTIONS[crawler] = RedisConnection(config.url, retries=config.retries,
                                                             timeout=config.timeout)
    return connection


def link_segments(settings: Any, prefix: str) -> SegmentLinkTable:
    """The crawl's link table, in segment files each process appends to (``LINKGRAPH_SEGMENTS_DIR``)."""
    return SegmentLinkTable(segments_directory(prefix, setting(settings, "LINKGRAPH_SEGMENTS_DIR")),
                            segment_bytes=number_setting(settings, "LINKGRAPH_SEGMENT_BYTES", 1, int),
                            block_bytes=number_setting(settings, "LINKGRAPH_SEGMENT_BLOCK_BYTES", 1, int))


def redis_store(crawler: Crawler) -> RedisStore:
    """The frontier's Redis store on the crawler's connection."""
    config = redis_settings(crawler.settings)
    seen: BloomLayout | FingerprintSetLayout = FingerprintSetLayout()
    if seen_backend(crawler.settings) == "bloom":  # BloomLayout names a setting out of range
        seen = BloomLayout(number_setting(crawler.settings, "FRONTIER_REDIS_BLOOM_CAPACITY", 1, int),
                           number_setting(crawler.settings, "FRONTIER_REDIS_BLOOM_ERROR_RATE", 0.0))
    return RedisStore(config.url, config.prefix, persist=config.persist, flush_on_start=config.flush_on_start,
                      retries=config.retries, timeout=config.timeout, seen=seen,
                      keep_rows=crawler.settings.getbool("REVISIT_ENABLED"), connection=redis_connection(crawler),
                      links=link_segments(crawler.settings, config.prefix))


def read_only_redis_store(settings: Any) -> RedisStore:
    """The crawl's Redis store for reading (not yet opened), on a connection of its own."""
    config = redis_settings(settings)
    return RedisStore(config.url, config.prefix, retries=config.retries, timeout=config.timeout,
                      links=link_segments(settings, config.prefix))


def redis_content_sets(crawler: Crawler, options: ContentOptions) -> ContentSets:
    """The content-seen sets in the crawl's Redis (``options.io_thread``: through a worker thread)."""
    config = redis_settings(crawler.settings)
    store = RedisContentStore(
        config.url, config.prefix, persist=config.persist, flush_on_start=config.flush_on_start,
        retries=config.retries, timeout=config.timeout,
        ttl=max(HEARTBEAT_TTL, 3 * options.flush_interval),  # the periodic flush renews this process's heartbeat
        connection=redis_connection(crawler))

    def opener(sets: ContentSets) -> None:
        sets.exact = RedisContentSeen(store)
        if options.near_enabled:
            sets.near = RedisNearDuplicateIndex(store, BlockLayout(options.distance),
                                                min_resemblance=options.min_resemblance)
        reactor = running_reactor()
        if options.io_thread and reactor is not None:  # tools and tests without a reactor wait
            worker = start_worker(store, reactor.callFromThread, options.on_worker_error,
                                  "the content-seen sets' worker thread", ContentStoreError)
            sets.off_reactor = AsyncRedisContentSeen(sets.exact, sets.near, worker)

    return ContentSets(exact=None, opener=opener, store=store)  # type: ignore[arg-type]
