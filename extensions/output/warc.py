"""WARC output: every downloaded response as a request/response record pair.

:class:`WarcWriter` listens to ``response_downloaded``, which Scrapy sends as
soon as the download handler returns, before any downloader middleware has
decompressed the body; so a record holds the bytes as served (gzip stays
gzip, with its ``Content-Encoding``). Responses that never reach the
downloader (HTTP cache hits) are not archived again. The HTTP request is
reconstructed from the Scrapy request as sent (after downloader middlewares
added its headers), with the ``Host`` header the HTTP client adds.

Files are ``{WARC_PREFIX}-{YYYYmmddHHMMSS}-{serial:05d}-{pid}.warc.gz``,
written with an ``.open`` suffix that is dropped when the file is closed, so
a killed crawl leaves recognisable partial files. Each record is gzipped on
its own, each file starts with a ``warcinfo`` record, and a new file is
started once the current one exceeds ``WARC_MAX_SIZE`` bytes (a request and
its response always share a file). A failed write (disk full) is logged
once, counted in ``warc/errors`` and undone by truncating the file, and the
crawl goes on.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from datetime import datetime, timezone
from http.client import responses as REASONS
from io import BytesIO
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlsplit

from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

import scrapy
from scrapy import signals
from scrapy.exceptions import NotConfigured

from extensions import defaults

if TYPE_CHECKING:
    from typing_extensions import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: Headers that describe a transfer our body no longer has: Twisted already
#: de-chunked it, so a replayer must not de-chunk again.
_RENAMED_HEADERS = {b"transfer-encoding": "X-Crawler-Transfer-Encoding"}


def http_request_headers(request: Request) -> StatusAndHeaders:
    """The request line and headers as the HTTP/1.1 client sent them."""
    parts = urlsplit(request.url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    headers = [(k.decode("latin-1"), v.decode("latin-1"))
               for k, values in request.headers.items() for v in values]
    if not any(name.lower() == "host" for name, _ in headers):
        headers.insert(0, ("Host", parts.netloc))
    return StatusAndHeaders(f"{request.method} {target} HTTP/1.1", headers, is_http_request=True)


def http_response_headers(response: Response) -> StatusAndHeaders:
    """The status line and headers as received (transfer coding renamed)."""
    protocol = response.protocol or ""
    protocol = protocol if protocol.startswith("HTTP/") else "HTTP/1.1"
    headers = []
    for name, values in response.headers.items():
        text_name = _RENAMED_HEADERS.get(name.lower(), name.decode("latin-1"))
        headers += [(text_name, v.decode("latin-1")) for v in values]
    status = f"{response.status} {REASONS.get(response.status, 'Unknown')}"
    return StatusAndHeaders(status, headers, protocol=protocol)


class WarcFiles:
    """A rotating series of WARC files in one directory (no Scrapy parts).

    ``write(data)`` appends already-serialised records and returns the bytes
    written; a failed write is undone (the file is truncated back) and
    re-raised, so every file on disk stays a sequence of whole records.
    """

    def __init__(self, directory: Path, prefix: str, max_size: int,
                 warcinfo: dict[str, str], clock: Any = time.time):
        self.directory, self.prefix, self.max_size = directory, prefix, max_size
        self.warcinfo, self.clock = warcinfo, clock
        self.serial = 0
        self.current: BinaryIO | None = None
        self.current_path: Path | None = None
        self.files_started = 0
        self.records_written = 0

    def write(self, build: Any) -> int:
        """Write ``build(writer)``'s records, opening a file first if needed."""
        written = 0
        if self.current is None:
            written += self._open()
        written += self._append(build)
        if self.current is not None and self.current.tell() > self.max_size:
            self.close()
        return written

    def close(self) -> None:
        """Close the current file and drop its ``.open`` suffix."""
        if self.current is None or self.current_path is None:
            return
        self.current.close()
        final = self.current_path.with_suffix("")
        os.replace(self.current_path, final)
        self.current, self.current_path = None, None

    def _open(self) -> int:
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(self.clock()))
        name = f"{self.prefix}-{stamp}-{self.serial:05d}-{os.getpid()}.warc.gz"
        self.serial += 1
        path = self.directory / (name + ".open")
        self.current, self.current_path = open(path, "wb", buffering=0), path
        self.files_started += 1
        try:
            return self._append(lambda w: [w.create_warcinfo_record(name, self.warcinfo)])
        except OSError:
            if self.current is not None:
                self.current.close()
            path.unlink(missing_ok=True)  # nothing in it worth keeping
            self.current, self.current_path = None, None
            raise

    def _append(self, build: Any) -> int:
        assert self.current is not None
        buffer = BytesIO()
        writer = WARCWriter(buffer, gzip=True)
        records = build(writer)
        for record in records:
            writer.write_record(record)
        data = buffer.getvalue()
        start = self.current.tell()
        try:
            view = memoryview(data)
            while view:
                view = view[self.current.write(view):]
        except OSError:
            self._undo(start)
            raise
        self.records_written += len(records)
        return len(data)


    def _undo(self, start: int) -> None:
        """Cut a partly written record off; if even that fails, leave the file
        behind with its ``.open`` suffix and start a new one next time."""
        assert self.current is not None
        try:
            self.current.truncate(start)
            self.current.seek(start)
        except OSError:
            self.current.close()
            self.current, self.current_path = None, None


class WarcWriter:
    """Writes WARC files to ``WARC_DIR``; ``NotConfigured`` without it."""

    def __init__(self, files: WarcFiles, stats: StatsCollector):
        self.files = files
        self.stats = stats
        self.failed = False

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        directory = settings.get("WARC_DIR")
        if not directory:
            raise NotConfigured
        max_size = settings.getint("WARC_MAX_SIZE", defaults.WARC_MAX_SIZE)
        if max_size <= 0:
            raise ValueError(f"WARC_MAX_SIZE={max_size!r}: must be a positive number of bytes")
        try:
            Path(directory).mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise ValueError(f"WARC_DIR={directory!r}: cannot create directory: {err}") from err
        warcinfo = {
            "software": f"webcrawler (Scrapy {scrapy.__version__})",
            "format": "WARC File Format 1.0",
            "hostname": socket.gethostname(),
            "http-header-user-agent": settings.get("USER_AGENT") or "",
            "robots": "obey" if settings.getbool("ROBOTSTXT_OBEY") else "ignore",
        }
        files = WarcFiles(Path(directory), settings.get("WARC_PREFIX") or "webcrawler",
                          max_size, warcinfo)
        extension = cls(files, crawler.stats)
        crawler.signals.connect(extension.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(extension.spider_closed, signal=signals.spider_closed)
        return extension

    def response_downloaded(self, response: Response, request: Request) -> None:
        files_before, records_before = self.files.files_started, self.files.records_written
        try:
            written = self.files.write(lambda writer: self._records(writer, request, response))
        except OSError as err:
            self.stats.inc_value("warc/errors")
            if not self.failed:
                self.failed = True
                logger.error("WARC write failed (%s); counting further failures in warc/errors", err)
            return
        finally:
            self.stats.inc_value("warc/files", self.files.files_started - files_before)
            self.stats.inc_value("warc/records", self.files.records_written - records_before)
        self.stats.inc_value("warc/bytes", written)

    def spider_closed(self) -> None:
        try:
            self.files.close()
        except OSError as err:
            self.stats.inc_value("warc/errors")
            logger.error("WARC file could not be closed: %s", err)

    @staticmethod
    def _records(writer: WARCWriter, request: Request, response: Response) -> list[Any]:
        date = datetime_to_iso_date(datetime.now(timezone.utc).replace(tzinfo=None))
        common = {"WARC-Date": date}
        if response.ip_address is not None:
            common["WARC-IP-Address"] = str(response.ip_address)
        body = response.body
        response_record = writer.create_warc_record(
            response.url, "response", payload=BytesIO(body), length=len(body),
            warc_headers_dict=dict(common), http_headers=http_response_headers(response))
        request_record = writer.create_warc_record(
            request.url, "request", payload=BytesIO(request.body or b""),
            length=len(request.body or b""), warc_headers_dict=dict(common),
            http_headers=http_request_headers(request))
        request_record.rec_headers.add_header(
            "WARC-Concurrent-To", response_record.rec_headers.get_header("WARC-Record-ID"))
        return [request_record, response_record]
