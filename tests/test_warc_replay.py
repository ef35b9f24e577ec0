"""An archive of real documentation, replayed in pywb.

One continuous crawl of debian-reference (nginx, :mod:`testweb.realweb`)
over http and https, with WARC, CDXJ, outlinks metadata and re-visits of a
few seconds, seeded with both roots and one https page so that both schemes
are crawled: every page exists twice, the second copy fetched is archived as
an ``identical-payload-digest`` revisit, and re-visits answered ``304`` as
``server-not-modified`` revisits. Once every page was fetched and re-visits
answer 304, the crawl is killed with SIGKILL; the same command then resumes
it (closing the file the kill left open) until more 304s came, and is
paused with SIGINT. All tests judge that one archive:

* after the kill: every URL the frontier had marked done has a whole record;
* after the resume: no file left open, ``warcio check`` passes on every
  file, every CDXJ file is what pywb's own indexer makes of its WARC file
  (304s left out), revisits refer to real records (some of the resumed run
  to records of the killed one), metadata records hold each page's links;
* pywb (``wayback`` on loopback, the crawler's CDXJ files as its index)
  replays a page with the archived bytes, an exact copy through its revisit
  record, and a page re-visited with a 304 as its stored version; headless
  Chromium renders a replayed page (not blank).
"""

from __future__ import annotations

import html
import json
import re
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC
from email.utils import format_datetime
from io import BytesIO
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.timeutils import iso_date_to_datetime, iso_date_to_timestamp

from extensions.output.cdxj import index_path
from extensions.output.dedup import PROFILE_IDENTICAL, PROFILE_NOT_MODIFIED
from extensions.output.warcfiles import complete_length
from extensions.urls.canonical import canonicalize
from tests.realweb_truth import file_of, html_links
from testweb.browser import MissingBrowser, dump_dom, screenshot
from testweb.crawlrun import CrawlResult, kill_crawl, read_result, start_web_crawl
from testweb.pywbserver import MissingPywb, Pywb, pywb_tool, start_pywb
from testweb.realweb import LogEntry, RealWeb
from testweb.waiting import CrawlActivity, ended, wait_until

HOST = "www.debian.org"
#: re-visits answered 304 each run waits for
NOT_MODIFIED_WANTED = 6
#: requests a wait may see before its condition holds (a continuous crawl never stops)
REQUEST_BUDGET = 600
ANSWERS = ("response", "revisit")


@dataclass
class Record:
    file: str
    offset: int
    type: str
    uri: str
    headers: dict[str, str]
    status: str | None
    payload: bytes

    @property
    def id(self) -> str:
        return self.headers["WARC-Record-ID"]


def read_records(path: Path, limit: int | None = None) -> list[Record]:
    """The records of a WARC file (its first ``limit`` bytes), digests checked."""
    data = path.read_bytes()[:limit]
    records = []
    iterator = ArchiveIterator(BytesIO(data), check_digests="raise")
    for record in iterator:
        payload = record.content_stream().read() if record.rec_type != "revisit" else b""
        status = record.http_headers.get_statuscode() if record.http_headers else None
        records.append(Record(path.name.removesuffix(".open"), iterator.get_record_offset(), record.rec_type,
                              record.rec_headers.get_header("WARC-Target-URI") or "",
                              dict(record.rec_headers.headers), status, payload))
    return records


@dataclass
class Archive:
    web: RealWeb = field(repr=False)
    warcs: Path
    job: Path
    killed_file: Path  # the file the kill left open (its name once closed)
    done_at_kill: set[str]  # URLs the frontier had recorded as fetched
    whole_at_kill: set[str]  # URIs with a whole answer record in the killed file
    resumed: CrawlResult = field(repr=False)
    records: list[Record] = field(repr=False)

    def files(self) -> list[Path]:
        return sorted(self.warcs.glob("*.warc.gz"))

    def answers(self, kind: str | None = None, profile: str | None = None) -> list[Record]:
        return [r for r in self.records if r.type in ANSWERS and (kind is None or r.type == kind)
                and (profile is None or r.headers.get("WARC-Profile") == profile)]


def settings(web: RealWeb, base: Path) -> dict[str, Any]:
    return {
        "DNS_HOSTS": web.hosts_file, "ALLOW_PRIVATE_ADDRESSES": True, "JOBDIR": base / "job",
        "WARC_DIR": base / "warcs", "WARC_OUTLINKS": True, "PROGRESS_INTERVAL": 1,
        "REVISIT_ENABLED": True, "REVISIT_INITIAL_INTERVAL": 2, "REVISIT_MIN_INTERVAL": 1,
        "REVISIT_MAX_INTERVAL": 4,
    }


def ours(web: RealWeb, since: int) -> list[LogEntry]:
    return [e for e in web.entries()[since:] if e.host == HOST and e.user_agent.startswith("webcrawler")]


def wait_for(web: RealWeb, proc: Any, workdir: Path, condition: Any, what: str) -> None:
    start = len(web.entries())
    wait_until(lambda: condition() or ended([proc]) or len(web.entries()) > start + REQUEST_BUDGET, what,
               CrawlActivity([workdir], also=lambda: len(web.entries())))
    assert proc.poll() is None, f"the crawl ended before {what}"
    assert condition(), f"no {what} in {REQUEST_BUDGET} requests"


def fetched_urls(job: Path) -> set[str]:
    """URLs the frontier's database records as fetched (done, or done and
    due again for a re-visit)."""
    with sqlite3.connect(job / "frontier.sqlite3") as db:
        return {url for (url,) in db.execute("SELECT url FROM urls_readable WHERE fetched IS NOT NULL")}


@pytest.fixture(scope="module")
def archive(realweb: RealWeb, tmp_path_factory: pytest.TempPathFactory) -> Archive:
    base = tmp_path_factory.mktemp("warc-replay")
    site = realweb.site(HOST)
    pages = {path.name for path in site.document_root.glob("*.html")}
    seeds = ",".join([f"{realweb.origin(HOST)}/", f"{realweb.origin(HOST, 'https')}/",
                      f"{realweb.origin(HOST, 'https')}/ch01.en.html"])
    spider_args = {"allowed_domains": HOST}
    mark = len(realweb.entries())
    run1 = start_web_crawl(base / "run1", seeds, settings(realweb, base), spider_args, robots_overrides=False)
    try:
        def fetched_and_revisited() -> bool:
            entries = ours(realweb, mark)
            fetched = {(e.scheme, e.path.rsplit("/", 1)[-1] or "index.html") for e in entries if e.status == 200}
            return all(("http", name) in fetched and ("https", name) in fetched for name in pages) \
                and sum(e.status == 304 for e in entries) >= NOT_MODIFIED_WANTED

        wait_for(realweb, run1, base / "run1", fetched_and_revisited, "every page over both schemes, then 304s")
    finally:
        kill_crawl(run1, signal.SIGKILL)
    [left] = list((base / "warcs").glob("*.open"))
    whole = read_records(left, complete_length(left))
    done = fetched_urls(base / "job")
    mark = len(realweb.entries())
    run2 = start_web_crawl(base / "run2", seeds, settings(realweb, base), spider_args, robots_overrides=False)
    try:
        wait_for(realweb, run2, base / "run2",
                 lambda: sum(e.status == 304 for e in ours(realweb, mark)) >= NOT_MODIFIED_WANTED,
                 "304s after the restart")
        run2.send_signal(signal.SIGINT)  # Ctrl-C: a pause, files closed
        returncode = run2.wait(timeout=60)
    finally:
        if run2.poll() is None:
            kill_crawl(run2)
    resumed = read_result(base / "run2", returncode, [])
    assert returncode == 0, resumed.log[-3000:]
    closed = left.with_name(left.name.removesuffix(".open"))
    records = [r for path in sorted((base / "warcs").glob("*.warc.gz")) for r in read_records(path)]
    return Archive(realweb, base / "warcs", base / "job", closed, done,
                   {r.uri for r in whole if r.type in ANSWERS}, resumed, records)


@pytest.fixture(scope="module")
def replay(archive: Archive, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pywb]:
    try:
        with start_pywb(tmp_path_factory.mktemp("pywb"), archive.warcs) as server:
            yield server
    except MissingPywb as err:
        pytest.fail(str(err), pytrace=False)


def on_disk(archive: Archive, url: str) -> bytes:
    path = file_of(archive.web, url)
    assert path is not None, url
    return path.read_bytes()


def http_date(warc_date: str) -> str:
    when = iso_date_to_datetime(warc_date).replace(microsecond=0, tzinfo=UTC)
    return format_datetime(when, usegmt=True)


# -- the archive on disk --------------------------------------------------------------

def test_after_the_kill_every_page_marked_done_has_a_whole_record(archive: Archive) -> None:
    assert len(archive.done_at_kill) >= 30  # both schemes' pages
    assert archive.done_at_kill <= archive.whole_at_kill, sorted(archive.done_at_kill - archive.whole_at_kill)


def test_the_resumed_crawl_closed_and_indexed_the_file_the_kill_left_open(archive: Archive) -> None:
    assert archive.resumed.stats["warc/recovered_files"] == 1
    assert archive.killed_file.exists() and index_path(archive.killed_file).exists()
    assert not list(archive.warcs.glob("*.open")) and not list(archive.warcs.glob("*.tmp"))
    assert [index_path(path).exists() for path in archive.files()] == [True] * len(archive.files())
    assert len(archive.files()) >= 2  # the killed run's and the resumed run's


def test_warcio_check_passes_on_every_file(archive: Archive) -> None:
    tool = Path(sys.executable).with_name("warcio")  # warcio's own checker, from requirements.txt
    run = subprocess.run([str(tool), "check", "-v", *map(str, archive.files())], capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "digest pass" in run.stdout and "fail" not in run.stdout


def test_each_cdxj_file_is_what_pywbs_indexer_makes_of_its_warc_file(archive: Archive) -> None:
    """pywb's ``cdx-indexer --cdxj`` reads each file; our index holds the same
    lines, except the 304s (a server-not-modified revisit replays as nothing)."""
    try:
        indexer = pywb_tool("cdx-indexer")
    except MissingPywb as err:
        pytest.fail(str(err), pytrace=False)
    not_modified = {(r.file, r.offset) for r in archive.records if r.status == "304"}
    assert not_modified
    for path in archive.files():
        run = subprocess.run([str(indexer), "--cdxj", str(path)], capture_output=True, timeout=300, check=True)
        theirs = [line for line in run.stdout.splitlines(keepends=True)
                  if (path.name, int(json.loads(line.split(b" ", 2)[2])["offset"])) not in not_modified]
        ours_lines = index_path(path).read_bytes().splitlines(keepends=True)
        assert ours_lines == sorted(theirs), path.name
        assert ours_lines


def test_every_copy_is_an_identical_payload_revisit_of_the_first_record_of_its_payload(archive: Archive) -> None:
    by_id = {r.id: r for r in archive.records}
    copies = archive.answers("revisit", PROFILE_IDENTICAL)
    assert len(copies) >= 15  # one scheme's copy of each page
    first_of_digest: dict[str, Record] = {}
    for record in archive.answers("response"):
        first_of_digest.setdefault(record.headers["WARC-Payload-Digest"], record)
    for copy in copies:
        original = by_id[copy.headers["WARC-Refers-To"]]
        assert original is first_of_digest[copy.headers["WARC-Payload-Digest"]]
        assert copy.headers["WARC-Refers-To-Target-URI"] == original.uri
        assert copy.headers["WARC-Refers-To-Date"] == original.headers["WARC-Date"]
        assert urlsplit(copy.uri).path == urlsplit(original.uri).path  # the other scheme's copy
    resumed = [copy for copy in copies if copy.file != archive.killed_file.name]
    saved = sum(len(by_id[copy.headers["WARC-Refers-To"]].payload) for copy in resumed)
    assert archive.resumed.stats.get("warc/revisit/payload_bytes_saved", 0) == saved


def test_304s_are_server_not_modified_revisits_of_the_stored_capture(archive: Archive) -> None:
    by_id = {r.id: r for r in archive.records}
    not_modified = [r for r in archive.answers() if r.status == "304"]
    assert len(not_modified) >= 2 * NOT_MODIFIED_WANTED
    killed_ids = {r.id for r in archive.records if r.file == archive.killed_file.name}
    across = 0
    for record in not_modified:
        assert record.type == "revisit" and record.headers["WARC-Profile"] == PROFILE_NOT_MODIFIED
        stored = by_id[record.headers["WARC-Refers-To"]]
        assert stored.uri == record.uri == record.headers["WARC-Refers-To-Target-URI"]
        assert stored.status == "200" and stored.headers["WARC-Date"] == record.headers["WARC-Refers-To-Date"]
        assert record.headers["WARC-Payload-Digest"] == stored.headers["WARC-Payload-Digest"]
        across += record.file != archive.killed_file.name and stored.id in killed_ids
    assert across >= 1, "no 304 of the resumed run refers to a record of the killed run"


def test_request_records_are_concurrent_to_their_answers(archive: Archive) -> None:
    answers = {r.id: r for r in archive.answers()}
    requests = [r for r in archive.records if r.type == "request"]
    assert len(requests) == len(answers)
    assert {r.headers["WARC-Concurrent-To"] for r in requests} == set(answers)


def test_metadata_records_list_each_pages_outlinks_as_heritrix_writes_them(archive: Archive) -> None:
    answers = {r.id: r for r in archive.answers()}
    metadata = [r for r in archive.records if r.type == "metadata"]
    assert len(metadata) >= 30
    for record in metadata:
        assert record.headers["Content-Type"] == "application/warc-fields"
        assert answers[record.headers["WARC-Concurrent-To"]].uri == record.uri
        lines = record.payload.decode().splitlines()
        outlinks = [line.removeprefix("outlink: ").rsplit(" ", 2) for line in lines if line.startswith("outlink: ")]
        assert all(hop == "L" and context == "=NAVLINK_MISC" for _, hop, context in outlinks)
        page = answers[record.headers["WARC-Concurrent-To"]]
        body = on_disk(archive, record.uri) if page.status == "200" else b""  # an error page: no links
        expected = list(dict.fromkeys(
            canonicalize(link) for link in html_links(body, record.uri) if urlsplit(link).hostname == HOST))
        assert [url for url, _, _ in outlinks] == expected, record.uri


def test_warcinfo_names_the_software_seeds_and_settings(archive: Archive) -> None:
    infos = [r for r in archive.records if r.type == "warcinfo"]
    assert len(infos) == len(archive.files())
    for info in infos:
        fields = info.payload.decode().splitlines()
        assert fields[0].startswith("software: webcrawler/")
        assert f"allowed-domains: {HOST}" in fields and "isPartOf: web" in fields
        assert any(line.startswith("seeds: http://www.debian.org:") for line in fields)
        assert "setting: WARC_OUTLINKS=True" in fields and "setting: REVISIT_ENABLED=True" in fields


# -- replayed in pywb -------------------------------------------------------------------

def test_pywb_replays_a_crawled_page_with_its_archived_bytes(archive: Archive, replay: Pywb) -> None:
    record = next(r for r in archive.answers("response") if r.uri.endswith("/ch02.en.html"))
    answer = replay.get(record.uri, iso_date_to_timestamp(record.headers["WARC-Date"]))
    assert answer.status == 200 and answer.body == record.payload == on_disk(archive, record.uri)
    assert answer.headers["memento-datetime"] == http_date(record.headers["WARC-Date"])


def test_pywb_replays_an_exact_copy_through_its_revisit_record(archive: Archive, replay: Pywb) -> None:
    checked = 0
    for copy in archive.answers("revisit", PROFILE_IDENTICAL)[:5]:
        answer = replay.get(copy.uri, iso_date_to_timestamp(copy.headers["WARC-Date"]))
        assert answer.status == 200, (copy.uri, answer.body[:300])
        assert answer.body == on_disk(archive, copy.uri), copy.uri
        # the capture replayed is the revisit itself (the copy's URL has no other)
        assert answer.headers["memento-datetime"] == http_date(copy.headers["WARC-Date"])
        checked += 1
    assert checked == 5


def test_pywb_replays_the_stored_version_of_a_page_re_visited_with_a_304(archive: Archive, replay: Pywb) -> None:
    latest = {}
    for record in archive.answers("revisit", PROFILE_NOT_MODIFIED):
        latest[record.uri] = record  # the last re-visit of each URL
    assert len(latest) >= 3
    for record in list(latest.values())[:3]:
        answer = replay.get(record.uri, iso_date_to_timestamp(record.headers["WARC-Date"]))
        assert answer.status == 200 and answer.body == on_disk(archive, record.uri), record.uri
        assert answer.headers["memento-datetime"] == http_date(record.headers["WARC-Refers-To-Date"])


def test_chromium_renders_a_replayed_documentation_page(archive: Archive, replay: Pywb, tmp_path: Path) -> None:
    """The replayed chapter, rewritten by pywb for a browser, renders: the
    screenshot is not blank (its pixels vary), and the DOM holds its title."""
    from PIL import Image, ImageStat  # noqa: PLC0415 - matplotlib's imaging dependency

    record = next(r for r in archive.answers("response") if r.uri.endswith("/ch02.en.html"))
    url = replay.replay_url(record.uri, iso_date_to_timestamp(record.headers["WARC-Date"]), "mp_")
    try:
        shot = screenshot(url, tmp_path / "replay.png", width=1024, height=1400)
        dom = dump_dom(url)
    except MissingBrowser as err:
        pytest.fail(str(err), pytrace=False)
    title = re.search(rb"<title>(.*?)</title>", record.payload, re.DOTALL)
    assert title is not None and title[1].decode().strip() in html.unescape(dom)
    image = Image.open(shot).convert("L")
    deviation = ImageStat.Stat(image).stddev[0]
    ink = sum(count for level, count in enumerate(image.histogram()) if level < 128) / (image.width * image.height)
    assert deviation > 20 and ink > 0.005, (deviation, ink)
