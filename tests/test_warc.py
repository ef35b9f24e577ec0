"""WARC output: real crawls of a local web, read back with warcio; the CDXJ
index, revisit records for copies, and the recovery of files a kill left open.

The replay of a real-web crawl in pywb is ``tests/test_warc_replay.py``."""

from __future__ import annotations

import fcntl
import gzip
import re
import resource
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import surt
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler
from warcio.archiveiterator import ArchiveIterator

from extensions.output.cdxj import index_path, index_warc
from extensions.output.dedup import PROFILE_IDENTICAL
from extensions.output.warc import WarcWriter
from extensions.output.warcfiles import complete_length, recover_open_files
from tests._sup_spiders import FOLLOW_SPIDER, follow_args
from testweb.crawlrun import kill_crawl, run_spider, start_spider
from testweb.localserver import GZIP_TEXT, LocalWeb, page_body
from testweb.waiting import CrawlActivity, ended, wait_until

EXTENSIONS = {"extensions.output.warc.WarcWriter": 500}
NAME = re.compile(r"^webcrawler-\d{14}-(\d{5})-\d+\.warc\.gz$")
ANSWERS = ("response", "revisit")


@dataclass
class WarcRecord:
    type: str
    uri: str
    headers: dict[str, str]
    http_headers: Any
    raw: bytes
    offset: int = 0


def read_warc(path: Path) -> list[WarcRecord]:
    """Every record of one file, with digests checked (a bad one raises)."""
    records = []
    with open(path, "rb") as stream:
        iterator = ArchiveIterator(stream, check_digests="raise")
        for record in iterator:
            raw = record.raw_stream.read()
            headers = dict(record.rec_headers.headers)
            records.append(WarcRecord(record.rec_type, headers.get("WARC-Target-URI", ""),
                                      headers, record.http_headers, raw, iterator.get_record_offset()))
    return records


def warc_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.iterdir() if p.name.endswith(".warc.gz"))


def all_records(directory: Path) -> list[WarcRecord]:
    return [r for p in warc_files(directory) for r in read_warc(p)]


@pytest.fixture(scope="module")
def archived(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalWeb, Path, Any]:
    """One crawl of 12 pages, a copy of page 0 (a query the server ignores),
    a gzip page and a 500, into files of ~4 kB."""
    tmp = tmp_path_factory.mktemp("warc")
    with LocalWeb(pages=12) as web:
        start = follow_args(web.url("/page/0"), web.url("/page/0?copy=1"), web.url("/gzip"), web.url("/error"))
        run = run_spider(tmp / "crawl", FOLLOW_SPIDER, start, {
            "EXTENSIONS": EXTENSIONS, "WARC_DIR": str(tmp / "warcs"), "WARC_MAX_SIZE": 4000,
        })
    assert run.returncode == 0, run.log
    return web, tmp / "warcs", run


def test_every_file_is_closed_valid_indexed_and_starts_with_warcinfo(archived: Any) -> None:
    _, directory, run = archived
    names = sorted(p.name for p in warc_files(directory))
    assert names and all(NAME.match(name) for name in names), names
    assert sorted(p.name for p in directory.iterdir()) == sorted(
        names + [index_path(directory / name).name for name in names])
    serials = [int(NAME.match(name).group(1)) for name in names]
    assert sorted(serials) == list(range(len(names)))
    assert len(names) >= 3, "WARC_MAX_SIZE=4000 must rotate"
    total = 0
    for name in names:
        records = read_warc(directory / name)
        assert records[0].type == "warcinfo" and records[0].headers["WARC-Filename"] == name
        assert records[0].headers["WARC-Type"] == "warcinfo"
        assert [r.type for r in records[1::2]] == ["request"] * ((len(records) - 1) // 2)
        assert all(r.type in ANSWERS for r in records[2::2]) and len(records) % 2 == 1
        total += len(records)
    assert run.dumped_stat("warc/files") == len(names)
    assert run.dumped_stat("warc/records") == total
    assert run.dumped_stat("warc/bytes") == sum((directory / n).stat().st_size for n in names)


def test_warcio_check_passes_on_every_file_after_a_normal_end(archived: Any) -> None:
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    _, directory, _ = archived
    tool = Path(sys.executable).with_name("warcio")  # warcio's own digest checker
    run = subprocess.run([str(tool), "check", "-v", *map(str, warc_files(directory))], capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.count("digest pass") >= len(all_records(directory)) - len(warc_files(directory))


def test_records_are_warc_1_1_and_warcinfo_says_what_crawled(archived: Any) -> None:
    _, directory, _ = archived
    first = warc_files(directory)[0]
    with open(first, "rb") as stream:
        record = next(iter(ArchiveIterator(stream)))
        assert record.rec_headers.protocol == "WARC/1.1"
        fields = record.content_stream().read().decode().splitlines()
    assert fields[0].startswith("software: webcrawler/0.1.0 (Scrapy/2.19")
    assert "format: WARC File Format 1.1" in fields
    assert "robots: ignore" in fields and "isPartOf: follow" in fields  # the test spider's custom settings
    assert "setting: WARC_MAX_SIZE=4000" in fields and "setting: WARC_REVISITS=True" in fields


def test_one_request_and_one_answer_per_fetch(archived: Any) -> None:
    web, directory, _ = archived
    records = all_records(directory)
    answers = [r for r in records if r.type in ANSWERS]
    requests = {r.headers["WARC-Concurrent-To"]: r for r in records if r.type == "request"}
    assert sorted(r.uri.split("?")[0] for r in answers) == sorted(
        web.url(path) for path, count in web.served.items() for _ in range(count))
    for answer in answers:
        request = requests[answer.headers["WARC-Record-ID"]]
        assert request.uri == answer.uri and request.headers["WARC-Date"] == answer.headers["WARC-Date"]
        path = answer.uri.split(str(web.port), 1)[1]
        line = f"{request.http_headers.protocol} {request.http_headers.statusline}"
        assert line == f"GET {path} HTTP/1.1"
        assert request.http_headers.get_header("Host") == f"127.0.0.1:{web.port}"
        assert answer.headers["WARC-IP-Address"] == "127.0.0.1"


def test_payload_is_the_body_as_served(archived: Any) -> None:
    web, directory, _ = archived
    by_uri = {r.uri: r for r in all_records(directory) if r.type in ANSWERS}
    for number in range(1, web.pages):
        record = by_uri[web.url(f"/page/{number}")]
        assert record.type == "response" and record.raw == page_body(number, web.pages)
        assert record.http_headers.get_statuscode() == "200"
    error = by_uri[web.url("/error")]
    assert error.http_headers.statusline == "500 Internal Server Error"


def test_gzip_response_is_stored_compressed_with_its_content_encoding(archived: Any) -> None:
    web, directory, _ = archived
    record = next(r for r in all_records(directory) if r.uri == web.url("/gzip") and r.type == "response")
    assert record.raw == LocalWeb.gzip_body()
    assert gzip.decompress(record.raw) == GZIP_TEXT
    assert record.http_headers.get_header("Content-Encoding") == "gzip"


def test_a_copy_is_a_revisit_referring_to_the_first_record_of_its_payload(archived: Any) -> None:
    web, directory, run = archived
    records = {r.uri: r for r in all_records(directory) if r.type in ANSWERS}
    pair = [records[web.url("/page/0")], records[web.url("/page/0?copy=1")]]
    [original] = [r for r in pair if r.type == "response"]
    [revisit] = [r for r in pair if r.type == "revisit"]
    assert original.raw == page_body(0, web.pages)
    assert revisit.raw == b""  # HTTP headers only
    assert revisit.http_headers.get_statuscode() == "200"
    assert revisit.http_headers.get_header("Content-Type") == original.http_headers.get_header("Content-Type")
    assert revisit.headers["WARC-Profile"] == PROFILE_IDENTICAL
    assert revisit.headers["WARC-Refers-To-Target-URI"] == original.uri
    assert revisit.headers["WARC-Refers-To-Date"] == original.headers["WARC-Date"]
    assert revisit.headers["WARC-Refers-To"] == original.headers["WARC-Record-ID"]
    assert revisit.headers["WARC-Payload-Digest"] == original.headers["WARC-Payload-Digest"]
    assert run.dumped_stat("warc/revisit/identical") == 1
    assert run.dumped_stat("warc/revisit/payload_bytes_saved") == len(page_body(0, web.pages))


def test_each_files_cdxj_lists_its_responses_and_revisits_sorted(archived: Any) -> None:
    web, directory, run = archived
    lines = 0
    for path in warc_files(directory):
        written = index_path(path).read_bytes().splitlines(keepends=True)
        assert written == sorted(index_warc(path))  # what a reader of the file indexes
        records = {r.offset: r for r in read_warc(path) if r.type in ANSWERS}
        assert len(written) == len(records)
        for line in written:
            key, timestamp, fields = line.decode().split(" ", 2)
            fields = __import__("json").loads(fields)
            record = records[int(fields["offset"])]
            assert key == surt.surt(record.uri) and fields["url"] == record.uri
            assert timestamp == re.sub(r"\D", "", record.headers["WARC-Date"])[:14]
            assert fields["filename"] == path.name
            assert fields["digest"] == record.headers["WARC-Payload-Digest"].removeprefix("sha1:")
            assert fields["mime"] == ("warc/revisit" if record.type == "revisit" else "text/html")
        lines += len(written)
    assert run.dumped_stat("warc/cdxj_lines") == lines == sum(web.served.values())


def test_writer_is_disabled_without_warc_dir() -> None:
    with pytest.raises(NotConfigured):
        WarcWriter.from_crawler(get_crawler(settings_dict={"WARC_DIR": ""}))


def test_crawl_without_warc_dir_writes_nothing(tmp_path: Path) -> None:
    with LocalWeb(pages=2) as web:
        run = run_spider(tmp_path, FOLLOW_SPIDER, follow_args(web.url("/page/0")), {"EXTENSIONS": EXTENSIONS})
    assert run.returncode == 0, run.log
    assert run.dumped_stat("warc/records") is None
    assert not list(tmp_path.rglob("*.warc.gz*"))


def test_without_revisits_and_index_every_answer_is_a_response(tmp_path: Path) -> None:
    with LocalWeb(pages=2) as web:
        run = run_spider(tmp_path / "crawl", FOLLOW_SPIDER, follow_args(web.url("/page/0"), web.url("/page/0?copy")), {
            "EXTENSIONS": EXTENSIONS, "WARC_DIR": str(tmp_path / "warcs"), "JOBDIR": str(tmp_path / "job"),
            "WARC_REVISITS": False, "WARC_CDXJ": False})
    assert run.returncode == 0, run.log
    assert [r.type for r in all_records(tmp_path / "warcs")] == ["warcinfo"] + ["request", "response"] * 3
    assert not list((tmp_path / "warcs").glob("*.cdxj"))
    assert not (tmp_path / "job" / "warc-archive.sqlite3").exists()
    assert run.dumped_stat("warc/revisit/identical") is None


def _limit_file_size() -> None:
    # Python ignores SIGXFSZ, so a write past the limit fails with EFBIG,
    # the way a full disk fails with ENOSPC.
    resource.setrlimit(resource.RLIMIT_FSIZE, (6000, 6000))


def test_write_errors_are_logged_once_counted_and_the_crawl_goes_on(tmp_path: Path) -> None:
    with LocalWeb(pages=12) as web:
        run = run_spider(tmp_path / "crawl", FOLLOW_SPIDER, follow_args(web.url("/page/0")), {
            # the limit applies to every file: no archive index (its SQLite file) either
            "EXTENSIONS": EXTENSIONS, "WARC_DIR": str(tmp_path / "warcs"), "WARC_CDXJ": False,
            "WARC_REVISITS": False,
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


def test_a_file_left_open_by_a_kill_is_closed_on_resume_and_its_pages_revisited(tmp_path: Path) -> None:
    """SIGKILL leaves an ``.open`` file of whole records; the next crawl on the
    same WARC_DIR and JOBDIR closes and indexes it, and archives the pages it
    fetches again as revisits of the records of the killed crawl."""
    warcs = tmp_path / "warcs"
    settings = {"EXTENSIONS": EXTENSIONS, "WARC_DIR": str(warcs), "JOBDIR": str(tmp_path / "job")}
    with LocalWeb(pages=1) as web:
        proc = start_spider(tmp_path / "run1", FOLLOW_SPIDER,
                            follow_args(web.url("/page/0"), web.url("/to-hold")), settings)
        try:
            # /hold is only linked from /to-hold, so /to-hold was archived by now
            wait_until(lambda: web.held.is_set() or ended([proc]), "request for /hold",
                       CrawlActivity([tmp_path / "run1"], also=lambda: len(web.hits)))
            assert web.held.is_set(), "the crawl ended before it asked for /hold"
        finally:
            kill_crawl(proc)
        [left] = list(warcs.iterdir())
        assert left.name.endswith(".warc.gz.open")
        killed = {r.uri: r for r in read_warc(left) if r.type == "response"}
        assert {web.url("/page/0"), web.url("/to-hold")} <= set(killed)
        web.release.set()  # /hold answers at once from now on
        run = run_spider(tmp_path / "run2", FOLLOW_SPIDER, follow_args(web.url("/page/0")), settings)
    assert run.returncode == 0, run.log
    assert run.dumped_stat("warc/recovered_files") == 1
    closed = left.with_name(left.name.removesuffix(".open"))
    assert not list(warcs.glob("*.open")) and closed.exists() and index_path(closed).exists()
    assert index_path(closed).read_bytes().splitlines(keepends=True) == sorted(index_warc(closed))
    later = [r for p in warc_files(warcs) if p != closed for r in read_warc(p)]
    [again] = [r for r in later if r.uri == web.url("/page/0") and r.type in ANSWERS]
    assert again.type == "revisit"
    assert again.headers["WARC-Refers-To"] == killed[web.url("/page/0")].headers["WARC-Record-ID"]


# -- recovery of open files, on real files ------------------------------------------

def _open_copy(archived: Any, directory: Path) -> tuple[Path, list[WarcRecord]]:
    """A copy of the crawl's largest file, named as if still open."""
    _, source_dir, _ = archived
    source = max(warc_files(source_dir), key=lambda p: p.stat().st_size)
    directory.mkdir()
    target = directory / (source.name + ".open")
    shutil.copy(source, target)
    return target, read_warc(source)


def test_recovery_cuts_a_record_the_kill_split_and_indexes_the_rest(archived: Any, tmp_path: Path) -> None:
    path, records = _open_copy(archived, tmp_path / "warcs")
    last = records[-1].offset
    size = path.stat().st_size
    with open(path, "r+b") as stream:
        stream.truncate(last + (size - last) // 2)  # the last record half written
    assert complete_length(path) == last
    [recovered] = recover_open_files(tmp_path / "warcs", "webcrawler", cdxj=True)
    closed = path.with_name(path.name.removesuffix(".open"))
    assert recovered.path == closed and recovered.kept == last and not path.exists()
    assert [r.offset for r in read_warc(closed)] == [r.offset for r in records[:-1]]
    assert index_path(closed).read_bytes().splitlines(keepends=True) == sorted(index_warc(closed))
    assert len(index_warc(closed)) == sum(r.type in ANSWERS for r in records[:-1])


def test_recovery_leaves_a_file_a_live_writer_holds(archived: Any, tmp_path: Path) -> None:
    path, _ = _open_copy(archived, tmp_path / "warcs")
    with open(path, "ab") as writer:
        fcntl.flock(writer.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert recover_open_files(tmp_path / "warcs", "webcrawler", cdxj=True) == []
        assert path.exists()


def test_recovery_deletes_a_file_without_one_whole_record(archived: Any, tmp_path: Path) -> None:
    path, records = _open_copy(archived, tmp_path / "warcs")
    with open(path, "r+b") as stream:
        stream.truncate(records[1].offset // 2)  # inside the warcinfo record
    [recovered] = recover_open_files(tmp_path / "warcs", "webcrawler", cdxj=True)
    assert recovered.deleted and not list((tmp_path / "warcs").iterdir())


# -- scrapy warcindex ---------------------------------------------------------------

def warcindex(*args: str) -> Any:
    import subprocess  # noqa: PLC0415

    from testweb.crawlrun import ROOT, SCRAPY  # noqa: PLC0415

    return subprocess.run([SCRAPY, "warcindex", *args], cwd=ROOT, capture_output=True, timeout=300, check=False)


def test_warcindex_writes_the_index_a_crawl_writes_and_merges_them(archived: Any, tmp_path: Path) -> None:
    _, source, _ = archived
    shutil.copytree(source, tmp_path / "warcs")
    written = {path.name: path.read_bytes() for path in (tmp_path / "warcs").glob("*.cdxj")}
    for path in (tmp_path / "warcs").glob("*.cdxj"):
        path.unlink()
    run = warcindex("-s", f"WARC_DIR={tmp_path / 'warcs'}", "-o", str(tmp_path / "all.cdxj"))
    assert run.returncode == 0, run.stderr
    assert {path.name: path.read_bytes() for path in (tmp_path / "warcs").glob("*.cdxj")} == written
    merged_lines = (tmp_path / "all.cdxj").read_bytes().splitlines(keepends=True)
    assert merged_lines == sorted(line for text in written.values() for line in text.splitlines(keepends=True))
    again = warcindex("-s", f"WARC_DIR={tmp_path / 'warcs'}")  # nothing left to index
    assert again.returncode == 0 and b"indexed 0 of" in again.stderr


def test_warcindex_recovers_a_file_a_kill_left_open_and_refuses_other_files(archived: Any, tmp_path: Path) -> None:
    path, records = _open_copy(archived, tmp_path / "warcs")
    run = warcindex("-s", f"WARC_DIR={tmp_path / 'warcs'}", "--recover", "-o", "-")
    assert run.returncode == 0, run.stderr
    closed = path.with_name(path.name.removesuffix(".open"))
    assert closed.exists() and run.stdout == index_path(closed).read_bytes()
    assert len(run.stdout.splitlines()) == sum(r.type in ANSWERS for r in records)
    wrong = warcindex(str(tmp_path / "warcs" / index_path(closed).name))
    assert wrong.returncode != 0 and b"not WARC files" in wrong.stderr
