"""The content-seen test as an item pipeline: exact duplicates and
near-duplicates of documents already fetched under another URL.

Mercator ran the content-seen test on the downloaded document before any
processing: a document seen before under another URL is not processed
further, in particular its links are not followed. Here the test runs on the
item (the pipeline before :class:`~extensions.pipelines.links.LinkScheduler`,
which follows links only when the verdict allows), with the response the
spider attached to it (``item._response``, never exported):

* ``fingerprint``: 64-bit mmh3 of the body (``CONTENTSEEN_MODE``: ``raw``
  bytes, or ``normalised`` visible text with whitespace collapsed; a page
  without visible text, such as a frameset or an image-only page, is
  fingerprinted by its bytes, counted as ``contentseen/empty_text``);
  ``duplicate_of``: the first URL with that fingerprint (links not followed,
  counted as ``contentseen/duplicates``);
* ``simhash``: 64-bit simhash of the visible text's distinct word
  3-shingles, digits folded (HTML and text only); ``near_duplicate_of``: the closest earlier
  document within Hamming distance ``CONTENTSEEN_NEAR_DISTANCE`` (3) whose
  estimated resemblance (shared share of distinct word 3-shingles, from a
  64-value sketch) is at least ``CONTENTSEEN_NEAR_MIN_RESEMBLANCE``, whose
  similar-content group the URL joins (counted as
  ``contentseen/near_duplicates``; simhash candidates refused for too little
  resemblance as ``contentseen/near/dissimilar``). A page with fewer than
  ``CONTENTSEEN_NEAR_MIN_SHINGLES`` distinct shingles is not judged
  (``contentseen/near_too_short``): it is mostly template; the group id is recorded per URL in the frontier's URL
  database (``content_groups``). ``CONTENTSEEN_FOLLOW_NEAR_DUPLICATES``
  (default True) decides whether their links are followed.

Where the sets live, ``CONTENTSEEN_BACKEND``:

* ``"sqlite"``: ``JOBDIR/contentseen.sqlite3`` and ``contentseen.near.sqlite3``
  (a temporary directory without JOBDIR), flushed every
  ``CONTENTSEEN_FLUSH_INTERVAL`` seconds and at close, so they survive a
  resume; memory holds a bounded LRU of fingerprints and a bounded write
  buffer of simhashes. Each process has its own.
* ``"redis"``: in the Redis of the frontier's settings (``REDIS_URL``,
  ``FRONTIER_REDIS_PREFIX``, ``FRONTIER_REDIS_RETRIES``,
  ``FRONTIER_REDIS_TIMEOUT``; ``SCHEDULER_PERSIST`` and
  ``SCHEDULER_FLUSH_ON_START`` with the frontier's meaning), shared by every
  process of the crawl, so a copy is caught whichever process fetched the
  original (:mod:`extensions.contentseen.redis`: one to three round trips
  per page).
* ``"auto"`` (default): ``"redis"`` when ``FRONTIER_BACKEND`` is ``"redis"``,
  else ``"sqlite"``.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from twisted.internet import task

from extensions import defaults
from extensions.contentseen import (
    BlockLayout,
    ContentSeen,
    ContentStoreError,
    NearDuplicateIndex,
    bytes_fingerprint,
    text_fingerprint,
)
from extensions.contentseen.fingerprint import MODES, NORMALISED
from extensions.contentseen.redis import RedisContentSeen
from extensions.contentseen.redisnear import RedisNearDuplicateIndex
from extensions.contentseen.resemblance import NearFeatures, near_features
from extensions.contentseen.text import visible_text
from extensions.frontier.fingerprint import url_fingerprint
from extensions.store.factory import content_backend, redis_content_store

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

TEXT_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
DATABASE = "contentseen.sqlite3"


def hex64(value: int) -> str:
    """A 64-bit value as 16 hex digits (JSON-safe, unlike a bare 64-bit int)."""
    return f"{value & ((1 << 64) - 1):016x}"


class ContentSeenPipeline:
    """Exact and near-duplicate verdicts on each fetched document."""

    def __init__(self, crawler: Crawler) -> None:
        settings = crawler.settings
        if not settings.getbool("CONTENTSEEN_ENABLED", defaults.CONTENTSEEN_ENABLED):
            raise NotConfigured
        self.mode = settings.get("CONTENTSEEN_MODE", defaults.CONTENTSEEN_MODE)
        if self.mode not in MODES:
            raise ValueError(f"CONTENTSEEN_MODE must be one of {MODES}, not {self.mode!r}")
        self.crawler = crawler
        self.stats = crawler.stats
        self.near_enabled = settings.getbool("CONTENTSEEN_NEAR_ENABLED", defaults.CONTENTSEEN_NEAR_ENABLED)
        self.distance = settings.getint("CONTENTSEEN_NEAR_DISTANCE", defaults.CONTENTSEEN_NEAR_DISTANCE)
        self.min_resemblance = settings.getfloat("CONTENTSEEN_NEAR_MIN_RESEMBLANCE",
                                                 defaults.CONTENTSEEN_NEAR_MIN_RESEMBLANCE)
        if not 0.0 <= self.min_resemblance <= 1.0:
            raise ValueError(f"CONTENTSEEN_NEAR_MIN_RESEMBLANCE must be in 0..1, not {self.min_resemblance}")
        self.min_shingles = settings.getint("CONTENTSEEN_NEAR_MIN_SHINGLES", defaults.CONTENTSEEN_NEAR_MIN_SHINGLES)
        self.memory_entries = settings.getint("CONTENTSEEN_MEMORY_ENTRIES", defaults.CONTENTSEEN_MEMORY_ENTRIES)
        self.flush_interval = settings.getfloat("CONTENTSEEN_FLUSH_INTERVAL", defaults.CONTENTSEEN_FLUSH_INTERVAL)
        self.max_text_bytes = settings.getint("CONTENTSEEN_MAX_TEXT_BYTES", defaults.CONTENTSEEN_MAX_TEXT_BYTES)
        self.cache_kib = settings.getint("CONTENTSEEN_SQLITE_CACHE_KIB", defaults.CONTENTSEEN_SQLITE_CACHE_KIB)
        self.backend = content_backend(settings)
        self.redis = redis_content_store(crawler, self.flush_interval) if self.backend == "redis" else None
        jobdir = settings.get("JOBDIR")
        self._tmp = None if jobdir or self.redis else Path(tempfile.mkdtemp(prefix="webcrawler-contentseen-"))
        self.path = (Path(jobdir) if jobdir else self._tmp or Path()) / DATABASE
        self.exact: ContentSeen | RedisContentSeen | None = None
        self.near: NearDuplicateIndex | RedisNearDuplicateIndex | None = None
        self._loop: task.LoopingCall | None = None
        crawler.signals.connect(self.close, signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ContentSeenPipeline:
        return cls(crawler)

    def open_spider(self, spider: Any = None) -> None:
        """Open both sets (a corrupt file or an unreachable Redis stops the
        crawl here, naming it)."""
        if self.redis is not None:
            self.exact = RedisContentSeen(self.redis)
            if self.near_enabled:
                self.near = RedisNearDuplicateIndex(self.redis, BlockLayout(self.distance),
                                                    min_resemblance=self.min_resemblance)
        else:
            self.exact = ContentSeen.open(self.path, memory_entries=self.memory_entries, cache_kib=self.cache_kib)
            if self.near_enabled:
                self.near = NearDuplicateIndex.open(self.path.with_suffix(".near.sqlite3"),
                                                    distance=self.distance, cache_kib=self.cache_kib,
                                                    min_resemblance=self.min_resemblance)
        if self.flush_interval > 0:
            self._loop = task.LoopingCall(self.flush)
            self._loop.start(self.flush_interval, now=False)

    def process_item(self, item: Any) -> Any:
        response = item.__dict__.pop("_response", None)
        if response is None or not 200 <= response.status < 300 or self.exact is None:
            return item
        url = item.get("url") or response.url
        mime = (item.get("content_type") or "").split(";", 1)[0].strip().lower()
        body = response.body
        # a huge page is judged by its first CONTENTSEEN_MAX_TEXT_BYTES for
        # text (parsing megabytes costs more memory than the whole crawl's
        # sets) and by all its bytes for the exact test
        large = len(body) > self.max_text_bytes
        text = visible_text(body[:self.max_text_bytes] if large else body,
                            getattr(response, "encoding", None)) if mime in TEXT_TYPES else None
        if self.mode == NORMALISED and text and not large:
            fingerprint = text_fingerprint(text)
        else:
            if self.mode == NORMALISED and text == "":
                self.stats.inc_value("contentseen/empty_text")
            fingerprint = bytes_fingerprint(body)
        item["fingerprint"] = hex64(fingerprint)
        features = self._features(text)
        if features is not None and hasattr(self.near, "prefetch"):
            self.near.prefetch(features.simhash)  # Redis: its read shares the exact test's round trip
        duplicate_of = self.exact.duplicate_of(fingerprint, url)
        self.stats.inc_value("contentseen/checked")
        if duplicate_of is not None:
            item["duplicate_of"] = duplicate_of
            self.stats.inc_value("contentseen/duplicates")
            self._record_group(url, duplicate_of, None)
            return item
        if features is not None:
            group, near_of = self.near.add_or_match(features.simhash, url, features.sketch)
            item["simhash"] = hex64(features.simhash)
            if near_of is not None and near_of != url:
                item["near_duplicate_of"] = near_of
                self.stats.inc_value("contentseen/near_duplicates")
            self._record_group(url, None, group)
        return item

    def _features(self, text: str | None) -> NearFeatures | None:
        """The page's near-duplicate features, or None when it is not judged."""
        if self.near is None or not text:
            return None
        features = near_features(text)
        if features.shingles < self.min_shingles:
            self.stats.inc_value("contentseen/near_too_short")
            return None
        return features

    def _record_group(self, url: str, duplicate_of: str | None, group: int | None) -> None:
        """The similar-content group in the frontier's URL database: a
        duplicate joins its original's group (by the original's fingerprint)."""
        frontier = getattr(self.crawler.engine, "scheduler", None)
        store = getattr(frontier, "store", None)
        if store is None or not hasattr(store, "set_content_group"):
            return
        fp, _ = url_fingerprint(url)
        if duplicate_of is not None:
            group = store.content_group(url_fingerprint(duplicate_of)[0])
        if group is not None:
            store.set_content_group(fp, group, duplicate_of is not None)

    def flush(self) -> None:
        try:
            for part in (self.exact, self.near):
                if part is not None:
                    part.flush()
        except ContentStoreError as err:  # the next flush tries again
            logger.error("Flushing the content-seen sets failed: %s", err)
        self._publish()

    def _publish(self) -> None:
        if self.exact is not None:
            for key, value in self.exact.stats().items():
                self.stats.set_value(f"contentseen/exact/{key}", value)
        if self.near is not None:
            for key, value in self.near.stats().items():
                self.stats.set_value(f"contentseen/near/{key}", value)

    def close(self, spider: Any = None) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._publish()
        for part in (self.exact, self.near):
            if part is not None:
                part.close()
        self.exact = self.near = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
