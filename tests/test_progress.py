"""Progress log and final report: real crawls of a local web, and the report's parts."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.test import get_crawler

from extensions.progress import ProgressReporter, json_safe, write_json_atomically
from testweb.crawlrun import run_spider
from testweb.localserver import LocalWeb
from tests._sup_spiders import FOLLOW_SPIDER, follow_args

EXTENSIONS = {"extensions.progress.ProgressReporter": 500}
PROGRESS_LINE = re.compile(
    r"Progress: (\d+) pages \([\d.]+ pages/s, [\d.]+ overall\), queue (\d+|\?), (\d+) hosts, (\d+) errors")


@pytest.fixture(scope="module")
def slow_crawl(tmp_path_factory: pytest.TempPathFactory) -> tuple[LocalWeb, dict[str, Any], str]:
    """12 pages and a 500 from a server answering each request after 0.1 s,
    one at a time, with robots.txt obeyed (it is a 404 here) and no retries
    (a retried 500 never reaches the engine as a response)."""
    tmp = tmp_path_factory.mktemp("progress")
    report_file = tmp / "report.json"
    with LocalWeb(pages=12, delay=0.1) as web:
        run = run_spider(tmp / "crawl", FOLLOW_SPIDER, follow_args(web.url("/page/0"), web.url("/error")), {
            "EXTENSIONS": EXTENSIONS, "LOGSTATS_INTERVAL": 0, "ROBOTSTXT_OBEY": True,
            "PROGRESS_INTERVAL": 0.2, "PROGRESS_REPORT_FILE": str(report_file),
            "CONCURRENT_REQUESTS": 1, "RETRY_ENABLED": False,
        })
    assert run.returncode == 0, run.log
    return web, json.loads(report_file.read_text()), run.log


def test_report_counts_what_the_server_served(slow_crawl: Any) -> None:
    web, report, _ = slow_crawl
    assert web.served["/robots.txt"] == 1
    pages = sum(count for path, count in web.served.items() if path != "/robots.txt")
    assert pages == 13
    assert report["pages"] == pages
    assert report["hosts"] == 1
    assert report["errors"] == 1  # the 500; no download failed
    assert report["finish_reason"] == "finished"
    assert report["queue"] in (0, None)
    assert report["stats"]["response_received_count"] == pages + 1  # + robots.txt
    assert report["pages_per_second"] == pytest.approx(report["pages"] / report["elapsed"], rel=0.01)


def test_report_stats_are_json_with_iso_dates(slow_crawl: Any) -> None:
    _, report, _ = slow_crawl
    started = datetime.fromisoformat(report["stats"]["start_time"])
    assert started.tzinfo is not None
    assert report["duplicates"] == report["stats"].get("dupefilter/filtered", 0)
    assert report["duplicates"] > 0  # pages link to pages already requested


def test_summary_line_always_and_progress_lines_while_crawling(slow_crawl: Any) -> None:
    _, report, log = slow_crawl
    assert f"Finished (finished): {report['pages']} pages in " in log
    lines = [m.groups() for m in PROGRESS_LINE.finditer(log)]
    if report["elapsed"] > 2 * 0.2:
        assert lines, "a crawl longer than two intervals logs progress"
    counts = [int(pages) for pages, *_ in lines]
    assert counts == sorted(counts) and all(c <= report["pages"] for c in counts)
    assert all(hosts in ("0", "1") for _, _, hosts, _ in lines)


def test_zero_interval_keeps_the_summary_and_drops_progress_lines(tmp_path: Path) -> None:
    with LocalWeb(pages=3) as web:
        run = run_spider(tmp_path, FOLLOW_SPIDER, follow_args(web.url("/page/0")), {
            "EXTENSIONS": EXTENSIONS, "PROGRESS_INTERVAL": 0,
            "PROGRESS_REPORT_FILE": str(tmp_path / "report.json"),
        })
    assert run.returncode == 0, run.log
    assert "Finished (finished): 3 pages in " in run.log
    assert not PROGRESS_LINE.search(run.log)
    assert json.loads((tmp_path / "report.json").read_text())["pages"] == 3


def test_download_failures_count_as_errors(tmp_path: Path) -> None:
    with LocalWeb(pages=1) as web:
        port = web.port
    # the server is gone: the fetch fails with a connection error
    run = run_spider(tmp_path, FOLLOW_SPIDER, follow_args(f"http://127.0.0.1:{port}/page/0"), {
        "EXTENSIONS": EXTENSIONS, "RETRY_ENABLED": False,
        "PROGRESS_REPORT_FILE": str(tmp_path / "report.json"),
    })
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["pages"] == 0 and report["errors"] == 1
    assert report["stats"]["downloader/exception_count"] == 1


def test_json_safe_turns_datetimes_into_iso_strings() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    assert json_safe({"t": moment, "n": [1, (2, 3)], "x": object}) == {
        "t": "2026-01-02T03:04:05+00:00", "n": [1, [2, 3]], "x": str(object)}


def test_report_file_is_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text("old")
    write_json_atomically(path, {"pages": 1})
    assert json.loads(path.read_text()) == {"pages": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


def test_negative_interval_is_rejected_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="PROGRESS_INTERVAL"):
        ProgressReporter.from_crawler(get_crawler(settings_dict={"PROGRESS_INTERVAL": -1}))


def test_host_count_keeps_bounded_memory_past_its_exact_limit() -> None:
    """200,000 distinct hosts: the reporter holds at most PROGRESS_HOSTS_EXACT
    names and counts the rest within 3 %; below the limit it is exact."""
    from scrapy import Request  # noqa: PLC0415
    from scrapy.http import HtmlResponse  # noqa: PLC0415

    reporter = ProgressReporter(get_crawler().stats, 0, None, hosts_exact=1000)
    for index in range(200_000):
        url = f"http://h{index}.example/"
        reporter.response_received(HtmlResponse(url, body=b""), Request(url))
        if index == 999:
            assert reporter.report("test")["hosts"] == 1000
    assert reporter.hosts.exact is None  # no string held: the sketch counts
    assert reporter.report("test")["hosts"] == pytest.approx(200_000, rel=0.03)


def test_distinct_counter_is_exact_to_its_limit_then_estimates() -> None:
    from extensions.progress import DistinctCounter  # noqa: PLC0415

    counter = DistinctCounter(exact_limit=100)
    for repeat in range(3):
        for index in range(100):
            counter.add(f"host{index}")
    assert len(counter) == 100 and len(counter.exact or ()) == 100
    for count in (1_000, 30_000, 300_000):
        for index in range(count):
            counter.add(f"host{index}")
        assert len(counter) == pytest.approx(count, rel=0.03)
        assert counter.exact is None


def test_negative_host_count_limit_is_rejected_naming_the_setting() -> None:
    with pytest.raises(ValueError, match="PROGRESS_HOSTS_EXACT"):
        ProgressReporter.from_crawler(get_crawler(settings_dict={"PROGRESS_HOSTS_EXACT": -1}))
