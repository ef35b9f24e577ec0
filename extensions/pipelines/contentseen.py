"""The content-seen test as an item pipeline: the item's ``content_features`` (removed
here) judged against ``CONTENTSEEN_BACKEND``'s sets into ``fingerprint``, ``duplicate_of``,
``simhash``, ``near_duplicate_of`` and the internal ``content_group`` (None: not judged)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet import task
from twisted.internet.defer import Deferred

from extensions import defaults
from extensions.defaults import checked
from extensions.backends import crawl_backend
from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.features import ContentFeatures
from extensions.contentseen.fingerprint import MODES
from extensions.contentseen.resemblance import NearFeatures
from extensions.contentseen.sets import ContentOptions, ContentSets, ExactSet, NearIndex, OffReactor
from extensions.contentseen.verdict import Verdict

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def hex64(value: int) -> str:
    """A 64-bit value as 16 hex digits (JSON-safe, unlike a bare 64-bit int)."""
    return f"{value & ((1 << 64) - 1):016x}"


class ContentSeenPipeline:
    """Exact and near-duplicate verdicts on each fetched document."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("CONTENTSEEN_ENABLED", defaults.CONTENTSEEN_ENABLED):
            raise NotConfigured
        # the spider builds its extractor at spider_opened, where an error is only logged
        mode = settings.get("CONTENTSEEN_MODE", defaults.CONTENTSEEN_MODE)
        if mode not in MODES:
            raise ValueError(f"CONTENTSEEN_MODE must be one of {MODES}, not {mode!r}")
        self.stats = crawler.stats
        self.min_shingles = settings.getint("CONTENTSEEN_NEAR_MIN_SHINGLES", defaults.CONTENTSEEN_NEAR_MIN_SHINGLES)
        self.flush_interval = settings.getfloat("CONTENTSEEN_FLUSH_INTERVAL", defaults.CONTENTSEEN_FLUSH_INTERVAL)
        options = ContentOptions(
            near_enabled=settings.getbool("CONTENTSEEN_NEAR_ENABLED", defaults.CONTENTSEEN_NEAR_ENABLED),
            distance=settings.getint("CONTENTSEEN_NEAR_DISTANCE", defaults.CONTENTSEEN_NEAR_DISTANCE),
            min_resemblance=checked(settings, "CONTENTSEEN_NEAR_MIN_RESEMBLANCE", lambda value: 0 <= value <= 1,
                                    "in 0..1"),
            memory_entries=settings.getint("CONTENTSEEN_MEMORY_ENTRIES", defaults.CONTENTSEEN_MEMORY_ENTRIES),
            cache_kib=settings.getint("CONTENTSEEN_SQLITE_CACHE_KIB", defaults.CONTENTSEEN_SQLITE_CACHE_KIB),
            flush_interval=self.flush_interval,
            io_thread=settings.getbool("CONTENTSEEN_REDIS_IO_THREAD", defaults.CONTENTSEEN_REDIS_IO_THREAD),
            on_worker_error=self._worker_failed)
        self.sets: ContentSets | None = crawl_backend(crawler, "CONTENTSEEN_BACKEND").content_sets(options)
        self.exact: ExactSet | None = None
        self.near: NearIndex | None = None
        self.off_reactor: OffReactor | None = None
        self._loop: task.LoopingCall | None = None
        crawler.signals.connect(self.close, signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentSeenPipeline:
        return cls(crawler)

    def open_spider(self, spider: Any = None) -> None:
        """Open both sets (a corrupt file or an unreachable store stops the crawl here, naming it)."""
        assert self.sets is not None
        self.sets.open()
        self.exact, self.near, self.off_reactor = self.sets.exact, self.sets.near, self.sets.off_reactor
        if self.flush_interval > 0:
            self._loop = task.LoopingCall(self.flush)
            self._loop.start(self.flush_interval, now=False)

    def process_item(self, item: Any) -> Any:
        """The verdicts on ``item``; the item, or a coroutine that returns it."""
        features: ContentFeatures | None = item.pop("content_features", None)
        item["content_group"] = None
        if features is None or self.exact is None:
            return item
        if features.empty_text:
            self.stats.inc_value("contentseen/empty_text")
        item["fingerprint"] = hex64(features.fingerprint)
        near = self._judged(features.near)
        if self.off_reactor is not None:
            return self._verdict_later(item, self.off_reactor.verdict(features.fingerprint, item["url"], near), near)
        return self._apply(item, self._verdict(features.fingerprint, item["url"], near), near)

    async def _verdict_later(self, item: Any, verdict: Deferred[Verdict], near: NearFeatures | None) -> Any:
        return self._apply(item, await maybe_deferred_to_future(verdict), near)

    def _verdict(self, fingerprint: int, url: str, near: NearFeatures | None) -> Verdict:
        """The page's verdict, each round trip waited for here."""
        if near is not None and self.near is not None:
            self.near.prefetch(near.simhash)  # Redis: its read shares the exact test's round trip
        duplicate_of = self.exact.duplicate_of(fingerprint, url)
        if duplicate_of is not None:
            return Verdict(duplicate_of, self._original_group(near), None)
        if near is not None:
            return Verdict(None, *self.near.add_or_match(near.simhash, url, near.sketch))
        return Verdict(None, None, None)

    def _apply(self, item: Any, verdict: Verdict, near: NearFeatures | None) -> Any:
        """``verdict`` on the item's fields and the stats."""
        self.stats.inc_value("contentseen/checked")
        if verdict.duplicate_of is not None:
            item["duplicate_of"] = verdict.duplicate_of
            self.stats.inc_value("contentseen/duplicates")
        elif near is not None:
            item["simhash"] = hex64(near.simhash)
            if verdict.near_duplicate_of is not None and verdict.near_duplicate_of != item["url"]:
                item["near_duplicate_of"] = verdict.near_duplicate_of
                self.stats.inc_value("contentseen/near_duplicates")
        item["content_group"] = verdict.content_group
        return item

    def _judged(self, near: NearFeatures | None) -> NearFeatures | None:
        """The page's near-duplicate features, or None when it is not judged."""
        if self.near is None or near is None:
            return None
        if near.shingles < self.min_shingles:
            self.stats.inc_value("contentseen/near_too_short")
            return None
        return near

    def _original_group(self, near: NearFeatures | None) -> int | None:
        """An exact copy's group: its original's, found in the near index by the same simhash and sketch."""
        if near is None:
            return None
        found = self.near.match(near.simhash, near.sketch)
        return None if found is None else found.group_id

    def flush(self) -> None:
        try:
            for part in (self.exact, self.near):
                if part is not None:
                    part.flush()
        except ContentStoreError as err:  # the next flush tries again
            logger.error("Flushing the content-seen sets failed: %s", err)
        self._publish()

    def _worker_failed(self, err: Exception) -> None:
        """A worker round trip failed after its retries (its pages fail with a ContentStoreError)."""
        logger.error("The content-seen sets' Redis worker failed: %s", err)
        self.stats.inc_value("contentseen/redis/worker_errors")

    def _publish(self) -> None:
        if self.off_reactor is not None:
            for key, value in self.off_reactor.timing().items():
                self.stats.set_value(f"contentseen/{key}", value)  # redis/* belongs to the frontier
        if self.exact is not None:
            for key, value in self.exact.stats().items():
                self.stats.set_value(f"contentseen/exact/{key}", value)
        if self.near is not None:
            for key, value in self.near.stats().items():
                self.stats.set_value(f"contentseen/near/{key}", value)

    def close(self, spider: Any = None) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self.sets is not None:
            self.sets.close()  # an off-reactor path's queued pages and writes first
        self.sets = None
        self.exact = self.near = self.off_reactor = None
