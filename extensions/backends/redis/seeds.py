"""Seeds pushed to a running crawl through Redis, as scrapy-redis does: every crawler
process pops ``REDIS_START_URLS_KEY`` (a list, or a set with ``REDIS_START_URLS_AS_SET``),
whose entries are URLs or JSON objects ``{"url": ..., "meta": {...}}``."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import DontCloseSpider, NotConfigured
from twisted.internet import task

from extensions import defaults
from extensions.defaults import checked
from extensions.backends import backend_class
from extensions.backends.redis.backend import RedisBackend

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

ACTIVITY_STATS = ("response_received_count", "scheduler/enqueued", "seeds/redis_accepted")


def parse_entry(raw: bytes | str) -> tuple[str, dict[str, Any]]:
    """The URL and meta of one pushed entry; ValueError if it is neither a URL nor such JSON."""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    text = text.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"not JSON: {err}") from err
        url, meta = data.get("url"), data.get("meta", {})
        if not isinstance(url, str) or not isinstance(meta, dict):
            raise ValueError('a JSON entry needs "url" (a string) and optionally "meta" (an object)')
        return url, meta
    if not text:
        raise ValueError("empty entry")
    return text, {}


class RedisSeeds:
    """Pops seeds from a Redis list or set into the running crawl."""

    def __init__(self, crawler: Crawler, connection: Any, key: str, *, as_set: bool, batch_size: int,
                 poll_interval: float, max_idle: float, waiting: bool, client_error: type[Exception],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.crawler = crawler
        self.connection = connection  # the shared RedisConnection (attached), whose client pops the seeds
        self.client, self.key = connection.client, key
        self.client_error = client_error  # what the client raises once its retries are spent
        self.as_set, self.batch_size = as_set, batch_size
        self.poll_interval, self.max_idle = poll_interval, max_idle
        self.waiting = waiting  # started without -a seeds: wait for pushed ones
        self.clock = clock
        self._loop: task.LoopingCall | None = None
        self._idle_since: float | None = None
        self._activity: tuple[int, ...] = ()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RedisSeeds:
        settings = crawler.settings
        if not issubclass(backend_class(settings), RedisBackend):
            raise NotConfigured
        spider = crawler.spider
        name = getattr(spider, "name", "web")
        key = settings.get("REDIS_START_URLS_KEY", defaults.REDIS_START_URLS_KEY) % {"name": name}
        batch_size = checked(settings, "REDIS_START_URLS_BATCH_SIZE", lambda value: value > 0, "> 0", int)
        poll_interval = checked(settings, "REDIS_START_URLS_POLL_INTERVAL", lambda value: value > 0, "> 0")
        max_idle = checked(settings, "MAX_IDLE_TIME_BEFORE_CLOSE", lambda value: value >= 0, ">= 0")
        # imported here: an SQLite crawl does not import redis
        from extensions.backends.redis.factory import redis_connection  # noqa: PLC0415
        from redis.exceptions import RedisError  # noqa: PLC0415

        connection = redis_connection(crawler)  # the crawler's one connection, shared with the frontier
        connection.attach(f"seeds ({key})", RuntimeError)
        waiting = not getattr(spider, "seed_lines", None)
        extension = cls(crawler, connection, key, as_set=settings.getbool("REDIS_START_URLS_AS_SET"),
                        batch_size=batch_size, poll_interval=poll_interval, max_idle=max_idle,
                        waiting=waiting, client_error=RedisError)
        crawler.signals.connect(extension.spider_opened, signals.spider_opened)
        crawler.signals.connect(extension.spider_idle, signals.spider_idle)
        crawler.signals.connect(extension.spider_closed, signals.spider_closed)
        return extension

    def spider_opened(self) -> None:
        if self.waiting:
            logger.info("Waiting for seeds at Redis key %s (redis-cli lpush %s URL)", self.key, self.key)
        self._loop = task.LoopingCall(self.pull)
        self._loop.start(self.poll_interval, now=True)

    def spider_closed(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self.connection.detach()

    def pull(self) -> int:
        """Pop one batch of seeds and schedule the valid ones; their number."""
        try:
            if self.as_set:
                entries = self.client.spop(self.key, self.batch_size) or []
            else:
                entries = self.client.lpop(self.key, self.batch_size) or []
        except self.client_error as err:
            logger.error("Cannot read seeds from Redis key %s: %s", self.key, err)
            self.crawler.stats.inc_value("seeds/redis_errors")
            return 0
        scheduled = 0
        for raw in entries:
            request = self.request_for(raw)
            if request is not None:
                self.crawler.engine.crawl(request)
                scheduled += 1
        return scheduled

    def request_for(self, raw: bytes | str) -> Request | None:
        """A seed request for one entry, or None (counted) when it is invalid or filtered."""
        stats = self.crawler.stats
        try:
            url, meta = parse_entry(raw)
            request = self.crawler.spider.seed_request(url, stats)
        except ValueError as err:
            stats.inc_value("seeds/redis_invalid")
            logger.warning("Skipping invalid seed %r from Redis key %s: %s", raw, self.key, err)
            return None
        if request is None:
            stats.inc_value("seeds/redis_filtered")
            return None
        stats.inc_value("seeds/redis_accepted")
        request.meta["is_start_request"] = True  # a seed as Scrapy marks -a seeds' (AOPIC gives it its cash)
        if meta:
            request.meta.update(meta)
        return request

    def spider_idle(self) -> None:
        """Pull at once; keep the spider open while seeds may still come."""
        if self.pull():
            self._idle_since = None
            raise DontCloseSpider
        now = self.clock()
        activity = tuple(self.crawler.stats.get_value(name, 0) for name in ACTIVITY_STATS)
        if activity != self._activity or self._idle_since is None:
            self._activity, self._idle_since = activity, now
        if not self.waiting and self.max_idle == 0:
            return  # a crawl started with -a seeds ends when it is done
        if self.max_idle == 0 or now - self._idle_since < self.max_idle:
            raise DontCloseSpider
        logger.info("No seeds at %s for %.0f s: closing (MAX_IDLE_TIME_BEFORE_CLOSE)", self.key, self.max_idle)
