"""WARC output: real crawls of a local web, read back with warcio."""

from __future__ import annotations

import gzip
import re
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler
from warcio.archiveiterator import ArchiveIterator

from extensions.output.warc import WarcWriter
from testweb.crawlrun import kill_crawl, run_spider, start_spider
from testweb.localserver import GZIP_TEXT, LocalWeb, page_body
from testweb.waiting import CrawlActivity, ended, wait_until
from tests._sup_spiders import FOLLOW_SPIDER, follow_args

EXTENSIONS = {"extensions.output.warc.WarcWriter": 500}
NAME = re.compile(r"^webcrawler-\d{14}-(\d{5})-\d+\.warc\.gz$")


@dataclass
class WarcRecord:
    type: str
    uri: str
    headers: dict[str, str]
    http_headers: Any
    raw: bytes


def read_warc(path: Path) -> list[WarcRecord]:
    """Every record of one file, with digests checked (a bad one raises)."""
    records = []
    with open(path, "rb") as stream:
        for record in ArchiveIterator(stream, check_digests="raise"):
            raw = record.raw_stream.read()
            headers = dict(record.rec_headers.headers)
            records.append(WarcRecord(record.rec_type, headers.get("WARC-Target-URI", ""),
                                      headers, record.http_headers, raw))
    return records


@pytest.fixture(scope="module")
def archived(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalWeb, Path, Any]:
    """One crawl of 12 pages, a gzip page and a 500, into files of ~4 kB."""
    tmp = tmp_path_factory.mktemp("warc")
    with LocalWeb(pages=12) as web:
        start = follow_args(web.url("/page/0"), web.url("/gzip"), web.url("/error"))
        run = run_spider(tmp / "crawl", FOLLOW_SPIDER, start, {
            "EXTENSIONS": EXTENSIONS, "WARC_DIR": str(tmp / "warcs"), "WARC_MAX_SIZE": 4000,
        })
    assert run.returncode == 0, run.log
    return web, tmp / "warcs", run


def test_every_file_is_closed_valid_and_starts_with_warcinfo(archived: Any) -> None:
    _, directory, run = archived
    names = sorted(p.name for p in directory.iterdir())
    assert names and all(NAME.match(name) for name in names), names
    serials = [int(NAME.match(name).group(1)) for name in names]
    assert sorted(serials) == list(range(len(names)))
    assert len(names) >= 3, "WARC_MAX_SIZE=4000 must rotate"
    total = 0
    for name in names:
        records = read_warc(directory / name)
        assert records[0].type == "warcinfo"
        assert [r.type for r in records[1:]] == ["request", "response"] * ((len(records) - 1) // 2)
        total += len(records)
    assert run.dumped_stat("warc/files") == len(names)
    assert run.dumped_stat("warc/records") == total
    assert run.dumped_stat("warc/bytes") == sum((directory / n).stat().st_size for n in names)


def all_records(directory: Path) -> list[WarcRecord]:
    return [r for p in sorted(directory.iterdir()) for r in read_warc(p)]


def test_one_request_and_response_record_per_fetch(archived: Any) -> None:
    web, directory, _ = archived
    records = all_records(directory)
    responses = [r for r in records if r.type == "response"]
    requests = {r.headers["WARC-Concurrent-To"]: r for r in records if r.type == "request"}
    assert sorted(r.uri for r in responses) == sorted(
        web.url(path) for path, count in web.served.items() for _ in range(count))
    for response in responses:
        request = requests[response.headers["WARC-Record-ID"]]
        assert request.uri == response.uri
        path = response.uri.split(str(web.port), 1)[1]
        line = f"{request.http_headers.protocol} {request.http_headers.statusline}"
        assert line == f"GET {path} HTTP/1.1"
        assert request.http_headers.get_header("Host") == f"127.0.0.1:{web.port}"
        assert response.headers["WARC-IP-Address"] == "127.0.0.1"


def test_payload_is_the_body_as_served(archived: Any) -> None:
    web, directory, _ = archived
    by_uri = {r.uri: r for r in all_records(directory) if r.type == "response"}
    for number in range(web.pages):
        record = by_uri[web.url(f"/page/{number}")]
        assert record.raw == page_body(number, web.pages)
        assert record.http_headers.get_statuscode() == "200"
    error = by_uri[web.url("/error")]
    assert error.http_headers.statusline == "500 Internal Server Error"


def test_gzip_response_is_stored_compressed_with_its_content_encoding(archived: Any) -> None:
    web, directory, _ = archived
    record = next(r for r in all_records(directory) if r.uri == web.url("/gzip") and r.type == "response")
    assert record.raw == LocalWeb.gzip_body()
    assert gzip.decompress(record.raw) == GZIP_TEXT
    assert record.http_headers.get_header("Content-Encoding") == "gzip"


def test_writer_is_disabled_without_warc_dir() -> None:
    with pytest.raises(NotConfigured):
        WarcWriter.from_crawler(get_crawler(settings_dict={"WARC_DIR": ""}))


def test_crawl_without_warc_dir_writes_nothing(tmp_path: Path) -> None:
    with LocalWeb(pages=2) as web:
        run = run_spider(tmp_path, FOLLOW_SPIDER, follow_args(web.url("/page/0")), {"EXTENSIONS": EXTENSIONS})
    assert run.returncode == 0, run.log
    assert run.dumped_stat("warc/records") is None
    assert not list(tmp_path.rglob("*.warc.gz*"))


def _limit_file_size() -> None:
    # Python ignores SIGXFSZ, so a write past the limit fails with EFBIG,
    # the way a full disk fails with ENOSPC.
    resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))


def test_write_errors_are_logged_once_counted_and_the_crawl_goes_on(tmp_path: Path) -> None:
    with LocalWeb(pages=12) as web:
        run = run_spider(tmp_path / "crawl", FOLLOW_SPIDER, follow_args(web.url("/page/0")), {
            "EXTENSIONS": EXTENSIONS, "WARC_DIR": str(tmp_path / "warcs"),
        }, preexec_fn=_limit_file_size)
        served = sum(web.served.values())
    assert run.returncode == 0, run.log
    assert served == 12 and run.dumped_stat("downloader/response_count") == 12
    assert run.log.count("WARC write failed") == 1
    errors, records = run.dumped_stat("warc/errors"), run.dumped_stat("warc/records")
    assert errors and records and errors + (records - 1) // 2 == 12
    [path] = list((tmp_path / "warcs").iterdir())
    assert path.name.endswith(".warc.gz") and path.stat().st_size <= 6000
    assert len(read_warc(path)) == records  # cut back to whole records


def test_killed_crawl_leaves_an_open_file_of_whole_records(tmp_path: Path) -> None:
    warcs = tmp_path / "warcs"
    with LocalWeb(pages=1) as web:
        proc = start_spider(tmp_path, FOLLOW_SPIDER, follow_args(web.url("/page/0"), web.url("/to-hold")),
                            {"EXTENSIONS": EXTENSIONS, "WARC_DIR": str(warcs)})
        try:
            # /hold is only linked from /to-hold, so /to-hold was archived by now
            wait_until(lambda: web.held.is_set() or ended([proc]), "request for /hold",
                       CrawlActivity([tmp_path], also=lambda: len(web.hits)))
            assert web.held.is_set(), "the crawl ended before it asked for /hold"
        finally:
            kill_crawl(proc)
    [path] = list(warcs.iterdir())
    assert path.name.endswith(".warc.gz.open")
    uris = {r.uri for r in read_warc(path) if r.type == "response"}
    assert web.url("/to-hold") in uris
