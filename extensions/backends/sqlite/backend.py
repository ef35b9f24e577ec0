"""The embedded backend (the default): the crawl's state in SQLite files of
one process, in ``JOBDIR`` (kept, resumable) or a temporary directory."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy.utils.job import job_dir

from extensions.aopic.ledger import AOPICLedger
from extensions.backends.settings import number_setting, seen_backend
from extensions.backends.sqlite.store import SQLiteStore
from extensions.contentseen.exact import ContentSeen
from extensions.contentseen.nearindex import NearDuplicateIndex
from extensions.contentseen.sets import ContentOptions, ContentSets
from extensions.defaults import checked
from extensions.frontier.urlseen import BloomSeen

if TYPE_CHECKING:
    from typing_extensions import Self

    from scrapy.crawler import Crawler

    from extensions.frontier.store import FrontierStore
    from extensions.output.archive import ArchiveIndex

DB_NAME = "frontier.sqlite3"
CONTENTSEEN_DB_NAME = "contentseen.sqlite3"


class SQLiteBackend:
    """SQLite stores on local disk; the frontier's host dispatch is its own."""

    takes_pushed_seeds = False

    def __init__(self, settings: Any) -> None:
        self.settings = settings

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler.settings)

    @classmethod
    def for_reading(cls, settings: Any) -> Self:
        return cls(settings)

    def jobdir(self) -> Path | None:
        jobdir = job_dir(self.settings)
        return Path(jobdir) if jobdir else None

    def frontier_store(self) -> tuple[FrontierStore, Path | None, Path | None]:
        jobdir = self.jobdir()
        directory = jobdir or Path(tempfile.mkdtemp(prefix="frontier-"))
        cache_mb = number_setting(self.settings, "FRONTIER_SQLITE_CACHE_MB", 1, int)
        return SQLiteStore(directory / DB_NAME, cache_mb=cache_mb), directory, None if jobdir else directory

    def url_filter(self) -> BloomSeen | None:
        if seen_backend(self.settings) == "exact":
            return None
        return BloomSeen(
            initial_capacity=number_setting(self.settings, "FRONTIER_BLOOM_INITIAL_CAPACITY", 1, int),
            error_rate=checked(self.settings, "FRONTIER_BLOOM_ERROR_RATE", lambda rate: 0 < rate < 1, "in (0, 1)"))

    def ledger(self, store: FrontierStore, initial_cash: float, tax: float) -> AOPICLedger:
        return AOPICLedger(store, initial_cash, tax)

    def host_dispatch(self, front_queues: int, back_queues: int) -> None:
        return None

    def content_sets(self, options: ContentOptions) -> ContentSets:
        """The content-seen sets in this process's SQLite files in JOBDIR (none: temporary)."""
        directory = self.jobdir()
        temporary = None if directory else Path(tempfile.mkdtemp(prefix="webcrawler-contentseen-"))
        path = (directory or temporary) / CONTENTSEEN_DB_NAME  # type: ignore[operator]

        def opener(sets: ContentSets) -> None:
            sets.exact = ContentSeen.open(path, memory_entries=options.memory_entries, cache_kib=options.cache_kib)
            if options.near_enabled:
                sets.near = NearDuplicateIndex.open(path.with_suffix(".near.sqlite3"), distance=options.distance,
                                                    cache_kib=options.cache_kib,
                                                    min_resemblance=options.min_resemblance)

        cleanup = (lambda: shutil.rmtree(temporary, ignore_errors=True)) if temporary else None
        return ContentSets(exact=None, opener=opener, cleanup=cleanup)  # type: ignore[arg-type]

    def archive_index(self) -> ArchiveIndex:
        from extensions.output.archive import SqliteArchiveIndex  # noqa: PLC0415 - only with WARC output

        return SqliteArchiveIndex.in_directory(self.jobdir())

    def read_only_store(self) -> FrontierStore:
        jobdir = self.settings.get("JOBDIR")  # not job_dir(): it would make the directory
        if not jobdir:
            raise ValueError("no kept crawl to read: name it with -s JOBDIR=DIR "
                             "(or -s FRONTIER_BACKEND=redis and REDIS_URL)")
        store = SQLiteStore(Path(jobdir) / DB_NAME)
        store.open_read_only()
        return store

    def data_directory(self, name: str) -> Path | None:
        return None
