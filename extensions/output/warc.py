"""WARC output: each ``response_downloaded`` as WARC 1.1 ``request`` and ``response`` or
``revisit`` records (and ``metadata`` with ``WARC_OUTLINKS``), with a CDXJ index, before the
frontier marks the URL done; a failed write is logged once, counted and undone."""

from __future__ import annotations

import logging
import platform
import socket
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING, Any

import scrapy
from scrapy import signals
from scrapy.exceptions import NotConfigured

import extensions
from extensions import defaults
from extensions.backends import crawl_backend
from extensions.output.archive import ArchiveIndex, ArchiveIndexError
from extensions.output.dedup import Capture, RecordKind, lookups_needed, record_kind
from extensions.output.warcfiles import WarcFiles, recover_open_files
from extensions.output.warcrecords import (
    metadata_record,
    outlink_fields,
    payload_digest,
    record_id,
    request_record,
    response_record,
    revisit_record,
    warc_date,
    warcinfo_record,
)
from extensions.signals import page_outlinks
from extensions.urls.recent import LruCache
from extensions.backends.settings import flag_setting, number_setting, setting

if TYPE_CHECKING:
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: Response record ids kept per URL for the pages' metadata records.
RECENT_RECORDS = 4096
#: Settings named in each warcinfo record: they decide what the archive holds.
ARCHIVE_SETTINGS = (
    "CONTENTSEEN_ENABLED", "DEPTH_LIMIT", "DOWNLOAD_MAXSIZE", "FRONTIER_BACKEND", "JOBDIR",
    "LINKS_IGNORE_NOFOLLOW", "LINKS_MAX_PER_PAGE", "REVISIT_ENABLED", "ROBOTSTXT_OBEY",
    "URL_FILTER_DENY", "URL_FILTER_MAX_DEPTH", "WARC_CDXJ", "WARC_MAX_SIZE", "WARC_OUTLINKS",
    "WARC_REVISITS",
)


def settings_fields(settings: Any) -> list[tuple[str, str]]:
    """The warcinfo fields that come from the settings."""
    software = (f"webcrawler/{extensions.__version__} (Scrapy/{scrapy.__version__}; "
                f"warcio/{version('warcio')}; Python/{platform.python_version()})")
    fields = [
        ("software", software),
        ("format", "WARC File Format 1.1"),
        ("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/"),
        ("hostname", socket.gethostname()),
        ("http-header-user-agent", settings.get("USER_AGENT") or ""),
        ("robots", "obey" if settings.getbool("ROBOTSTXT_OBEY") else "ignore"),
    ]
    for name in ARCHIVE_SETTINGS:
        value = settings.get(name)
        if value is None:  # ours, in a crawl without the add-on
            value = getattr(defaults, name, None)
        if value is not None and value != "":
            fields.append(("setting", f"{name}={value}"))
    return fields


def spider_fields(spider: Any) -> list[tuple[str, str]]:
    """The warcinfo fields that come from the spider: name, ``seeds``, ``allowed_domains``."""
    seeds = getattr(spider, "seeds", None)
    domains = getattr(spider, "allowed_domains", None) or []
    return [("isPartOf", spider.name), ("seeds", str(seeds) if seeds else ""),
            ("allowed-domains", ",".join(domains))]


class WarcWriter:
    """Writes WARC files to ``WARC_DIR``; ``NotConfigured`` without it."""

    def __init__(self, directory: Path, prefix: str, max_size: int, cdxj: bool, stats: StatsCollector,
                 archive: ArchiveIndex | None, info_fields: list[tuple[str, str]] | None = None,
                 recover: bool = True, clock: Callable[[], float] = time.time) -> None:
        self.files = WarcFiles(directory, prefix, max_size, self._warcinfo, stats, cdxj=cdxj, clock=clock)
        self.stats = stats
        self.archive = archive  # None: WARC_REVISITS off
        self.recover = recover
        self.clock = clock
        self.info_fields = list(info_fields or [])  # the spider's are added when it opens
        self.recent: LruCache = LruCache(RECENT_RECORDS)  # URL -> its last response/revisit record id
        self.failed = self.index_failed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        directory = settings.get("WARC_DIR")
        if not directory:
            raise NotConfigured
        max_size = number_setting(settings, "WARC_MAX_SIZE", 1, int)
        try:
            Path(directory).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(f"WARC_DIR={directory!r}: cannot create directory: {err}") from err
        archive = crawl_backend(crawler).archive_index() if flag_setting(settings, "WARC_REVISITS") else None
        extension = cls(Path(directory), setting(settings, "WARC_PREFIX") or "webcrawler", max_size,
                        flag_setting(settings, "WARC_CDXJ"), crawler.stats, archive, settings_fields(settings))
        crawler.signals.connect(extension.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(extension.page_outlinks, signal=page_outlinks)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def spider_opened(self, spider: scrapy.Spider) -> None:
        self.info_fields = [*self.info_fields, *spider_fields(spider)]
        if self.recover:
            for file in recover_open_files(self.files.directory, self.files.prefix, self.files.cdxj):
                self.stats.inc_value("warc/recovered_files")
                self.stats.inc_value("warc/recovered_bytes_cut", file.cut)

    def response_downloaded(self, response: Response, request: Request) -> None:
        date = warc_date(self.clock())
        body = response.body
        digest = payload_digest(body)
        kind, original = self._kind(response.status, response.url, digest, len(body))
        if kind is RecordKind.RESPONSE:
            answer = response_record(response, date, digest)
        else:
            assert original is not None
            answer = revisit_record(response, date, kind, original)
        request_part = request_record(request, response, date, record_id(answer))
        if not self._write([request_part, answer]):
            return
        self.recent[response.url] = record_id(answer)
        if kind is not RecordKind.RESPONSE:
            self.stats.inc_value(f"warc/revisit/{'identical' if kind is RecordKind.IDENTICAL else 'not_modified'}")
        if kind is RecordKind.IDENTICAL:
            self.stats.inc_value("warc/revisit/payload_bytes_saved", len(body))
        original_payload = kind is RecordKind.RESPONSE and bool(body)
        latest = 200 <= response.status < 300
        if self.archive is not None and kind is not RecordKind.NOT_MODIFIED and (original_payload or latest):
            try:
                self.archive.add(Capture(response.url, date, record_id(answer), digest), original_payload, latest)
            except ArchiveIndexError as err:
                self._index_failure(err)

    def page_outlinks(self, url: str, links: list[str], via: str | None, depth: int) -> None:
        fields = outlink_fields(links, via, depth)
        if self._write([metadata_record(url, warc_date(self.clock()), fields, self.recent.get(url))]):
            self.stats.inc_value("warc/metadata")

    def spider_closed(self) -> None:
        try:
            self.files.close()
        except OSError as err:
            self.stats.inc_value("warc/errors")
            logger.error("WARC file could not be closed: %s", err)
        if self.archive is not None:
            try:
                self.archive.close()
            except ArchiveIndexError as err:
                self.stats.inc_value("warc/archive_index_errors")
                logger.error("%s", err)

    # -- parts ---------------------------------------------------------------------
    def _warcinfo(self, filename: str) -> Any:
        return warcinfo_record(filename, warc_date(self.clock()), self.info_fields)

    def _kind(self, status: int, url: str, digest: str, length: int) -> tuple[RecordKind, Capture | None]:
        if self.archive is None:
            return RecordKind.RESPONSE, None
        by_digest, by_uri = lookups_needed(status, length)
        if not (by_digest or by_uri):
            return RecordKind.RESPONSE, None
        try:
            same_payload, same_uri = self.archive.find(digest if by_digest else None, url if by_uri else None)
        except ArchiveIndexError as err:
            self._index_failure(err)
            return RecordKind.RESPONSE, None
        return record_kind(status, length, same_payload, same_uri)

    def _index_failure(self, err: ArchiveIndexError) -> None:
        self.stats.inc_value("warc/archive_index_errors")
        if not self.index_failed:
            self.index_failed = True
            logger.error("WARC archive index failed (%s): records written in full; "
                         "counting further failures in warc/archive_index_errors", err)

    def _write(self, records: list[Any]) -> bool:
        """Write ``records`` in one piece; whether they were written."""
        try:
            written = self.files.write(lambda filename: records)
        except OSError as err:
            self.stats.inc_value("warc/errors")
            if not self.failed:
                self.failed = True
                logger.error("WARC write failed (%s); counting further failures in warc/errors", err)
            return False
        self.stats.inc_value("warc/bytes", written)
        return True
