"""The crawl report (REPORT_DIR): real crawls of the test web, the page opened
in headless Chromium, and the bounded series and tallies with numbers."""

from __future__ import annotations

import re
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from matplotlib.image import imread
from scrapy.exceptions import NotConfigured
from scrapy.utils.test import get_crawler
from twisted.internet.defer import maybeDeferred

from extensions.report.extension import CrawlReport, frontier_levels, frontier_urls
from extensions.report.render import Snapshot, write_report
from extensions.report.series import BoundedTally, StatsSeries
from testweb import WebConfig, start_testweb
from testweb.browser import MissingBrowser, chromium, dump_dom, png_size, screenshot
from testweb.crawlrun import kill_crawl, run_web_crawl, start_web_crawl
from testweb.localserver import LocalServer, Reply, Request
from testweb.waiting import CrawlActivity, wait_until

IMG_SRC = re.compile(r'<img src="([^"]+)"')
SAMPLES = re.compile(r'<meta name="report-samples" content="(\d+)">')
STATE = re.compile(r'<meta name="report-state" content="([^"]*)">')
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".png": "image/png"}

# A page of the test's own, beside the report: it loads index.html in a
# frame and writes into its DOM which of the report's images the browser
# could not show (the frame's load event comes after all its images).
PROBE = b"""<!DOCTYPE html><html><head><title>probe</title></head><body>
<iframe id="report" src="index.html" width="1280" height="2000"></iframe><pre id="out">pending</pre>
<script>
document.getElementById("report").addEventListener("load", function () {
  var images = this.contentDocument.images, broken = [];
  for (var i = 0; i < images.length; i++) {
    if (!images[i].complete || images[i].naturalWidth === 0) broken.push(images[i].getAttribute("src"));
  }
  document.getElementById("out").textContent = "images " + images.length + " broken [" + broken.join(",") + "]";
});
</script></body></html>"""


@pytest.fixture(scope="module")
def browser() -> str:
    try:
        return chromium()
    except MissingBrowser as err:
        pytest.fail(str(err), pytrace=False)


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any]]:
    """(report directory, result) of one whole crawl of the test web."""
    tmp = tmp_path_factory.mktemp("report")
    with start_testweb(WebConfig(hosts=8, pages=10, seed=3), tmp / "web") as web:
        result = run_web_crawl(tmp / "crawl", str(web.seeds_file), settings={
            "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 6, "JOBDIR": tmp / "job",
            "REPORT_DIR": tmp / "report", "REPORT_INTERVAL": 0.5,
        })
    assert result.returncode == 0, result.log[-3000:]
    yield tmp / "report", result


class ReportServer(LocalServer):
    """The report directory over loopback HTTP, each answer's status kept."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.answers: dict[str, list[int]] = {}
        super().__init__(self.answer)

    def answer(self, request: Request) -> Reply:
        name = request.path.split("?", 1)[0].lstrip("/")
        path = self.directory / name
        if name == "probe.html":
            reply = Reply(200, PROBE)
        elif "/" not in name and path.suffix in CONTENT_TYPES and path.is_file():
            reply = Reply(200, path.read_bytes(), {"Content-Type": CONTENT_TYPES[path.suffix]})
        else:
            reply = Reply(404, b"not found", {"Content-Type": "text/plain"})
        self.answers.setdefault(name, []).append(reply.status)
        return reply


def html_rows(page: str) -> dict[str, str]:
    """First cell -> second cell of every two-cell table row."""
    return dict(re.findall(r"<tr><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td>", page))


def number(text: str) -> int:
    return int(text.replace(",", ""))


# -- a whole crawl -----------------------------------------------------------------

def test_report_is_written_with_the_crawls_final_counts(crawl: Any) -> None:
    report, result = crawl
    page = (report / "index.html").read_text()
    rows = html_rows(page)
    stats = result.stats
    assert STATE.search(page).group(1) == "finished (finished)"
    assert number(rows["URLs fetched"]) == result.report["pages"]
    assert number(rows["seeds"]) == stats["seeds/accepted"]
    assert number(rows["outcomes: URLs excluded by robots.txt"]) == stats.get("frontier/excluded", 0)
    assert number(rows["errors"]) == result.report["errors"]  # as the final report counts them
    codes = {key.rsplit("/", 1)[1]: value for key, value in stats.items()
             if key.startswith("downloader/response_status_count/")}
    assert len(codes) > 2  # the test web answers 200, 3xx, 404, 5xx
    for code, count in codes.items():
        assert number(rows[code]) == count, code
    assert number(rows["text/html"]) > 0
    assert number(rows["0"]) == stats["seeds/accepted"]  # depth 0: the seeds


def test_hosts_table_counts_each_hosts_pages(crawl: Any) -> None:
    report, result = crawl
    rows = html_rows((report / "index.html").read_text())
    by_host: dict[str, int] = {}
    for item in result.items:
        host = re.match(r"https?://([^:/]+)", item["final_url"]).group(1)
        by_host[host] = by_host.get(host, 0) + 1
    # an item per document; the report counts fetches (a redirect, a retry too)
    for host, items in by_host.items():
        assert number(rows[host]) >= items, host


def test_report_was_refreshed_and_timed_and_left_no_temporary_files(crawl: Any) -> None:
    report, result = crawl
    # a periodic tick ran besides the final refresh (a tick that finds the
    # previous drawing still running skips, by design: on a busy machine)
    assert result.stats["report/refreshes"] >= 1
    assert result.stats["report/refreshes"] + result.stats.get("report/skipped", 0) >= 2
    assert result.stats["report/render_seconds_max"] > 0
    assert "report/errors" not in result.stats
    assert sorted(path.name for path in report.iterdir()) == [
        "depth.png", "frontier.png", "hosts.png", "index.html", "rates.png", "status.png"]


def test_every_image_is_a_png_beside_the_page(crawl: Any) -> None:
    report, _ = crawl
    sources = IMG_SRC.findall((report / "index.html").read_text())
    assert len(sources) == 5
    for source in sources:
        assert "/" not in source and ":" not in source  # relative, offline
        width, height = png_size((report / source).read_bytes())
        assert 200 < width < 1000 and 100 < height < 1000, (source, width, height)


def test_chromium_loads_the_page_and_every_image(crawl: Any, browser: str, tmp_path: Path) -> None:
    report, _ = crawl
    sources = IMG_SRC.findall((report / "index.html").read_text())
    with ReportServer(report) as server:
        dom = dump_dom(server.url("/probe.html"))
        shot = screenshot(server.url("/index.html"), tmp_path / "shot.png")
    assert f"images {len(sources)} broken []" in dom, dom[-2000:]
    for source in sources:
        assert set(server.answers[source]) == {200}, source
    assert server.answers["index.html"] == [200, 200]  # the probe's frame, the screenshot
    pixels = imread(shot)[:, :, :3]
    assert pixels.shape[:2] == (2400, 1280)
    assert pixels.std() > 0.05  # text, tables and plots, not one colour
    not_white = (pixels.min(axis=2) < 0.9).mean()
    assert 0.01 < not_white < 0.9, not_white


def test_report_is_refreshed_during_the_crawl_and_at_its_end(tmp_path: Path) -> None:
    """Two refreshes seen while running (index.html replaced, more samples),
    then the last one after Ctrl-C."""
    with start_testweb(WebConfig(hosts=3, pages=40, seed=5), tmp_path / "web") as web:
        workdir, report = tmp_path / "crawl", tmp_path / "report" / "index.html"
        proc = start_web_crawl(workdir, str(web.seeds_file), settings={
            "DNS_HOSTS": web.hosts_file, "DOWNLOAD_DELAY": 0.2, "JOBDIR": tmp_path / "job",
            "REPORT_DIR": report.parent, "REPORT_INTERVAL": 0.3})
        activity = CrawlActivity([workdir], also=lambda: samples(report))
        try:
            wait_until(lambda: samples(report) >= 2 or proc.poll() is not None, "first refresh", activity)
            first, inode = samples(report), report.stat().st_ino
            assert proc.poll() is None and state(report) == "running", workdir
            wait_until(lambda: samples(report) > first or proc.poll() is not None, "second refresh", activity)
            assert proc.poll() is None and state(report) == "running"
            assert report.stat().st_ino != inode  # replaced, not rewritten in place
        finally:
            code = kill_crawl(proc, signal.SIGINT) if proc.poll() is None else proc.returncode
    assert code == 0
    assert state(report) == "finished (shutdown)"
    assert samples(report) > first


def samples(report: Path) -> int:
    try:
        match = SAMPLES.search(report.read_text())
    except FileNotFoundError:
        return 0
    return int(match.group(1)) if match else 0


def state(report: Path) -> str:
    match = STATE.search(report.read_text())
    return match.group(1) if match else ""


# -- parts ---------------------------------------------------------------------

def test_without_report_dir_the_extension_is_off() -> None:
    with pytest.raises(NotConfigured):
        CrawlReport.from_crawler(get_crawler(settings_dict={"REPORT_DIR": ""}))


def test_bad_interval_fails_at_start_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="REPORT_INTERVAL"):
        CrawlReport.from_crawler(get_crawler(settings_dict={"REPORT_DIR": str(tmp_path),
                                                            "REPORT_INTERVAL": 0}))


def test_text_from_the_web_is_escaped(tmp_path: Path) -> None:
    series = StatsSeries(("pages", "bytes", "frontier/queued", "frontier/inflight", "frontier/done"))
    evil = '<script>alert("x")</script>'
    snapshot = Snapshot(spider="web", state="running", generated="now", elapsed=1.0,
                        summary={"seeds": 1}, hosts=[(evil, 3, 30)], hosts_other=0,
                        mime_types=[(evil, 2)], status_codes=[("200", 3)], frontier_status=[],
                        frontier_levels=[], frontier_urls=[], depths=[(0, 3)], series=series, samples_taken=0,
                        stats={evil: evil})
    write_report(tmp_path, snapshot)
    page = (tmp_path / "index.html").read_text()
    assert "<script>" not in page
    assert page.count("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;") == 4  # hosts, MIME, stat, value


def test_series_stays_bounded_and_keeps_exact_average_rates() -> None:
    series = StatsSeries(["pages"], max_samples=8)
    for second in range(101):
        series.add(float(second), {"pages": second * 10})
    assert len(series) <= 8
    assert series.taken == 101
    assert series.times()[0] == 0.0 and series.times()[-1] == 100.0
    _, rates = series.rates("pages")
    assert rates == pytest.approx([10.0] * len(rates))


def test_tally_keeps_the_busiest_keys_and_counts_the_rest() -> None:
    tally = BoundedTally(max_keys=4)
    for host, pages in [("big", 100), ("mid", 50)]:
        tally.add(host, pages)
    for i in range(20):
        tally.add(f"tiny{i}")
    assert dict(tally.most_common(2)) == {"big": 100, "mid": 50}
    assert len(tally.counts) <= 4
    assert sum(tally.counts.values()) + tally.other == 170  # every page counted, kept or not


def test_unwritable_report_is_counted_and_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A REPORT_DIR that cannot be written never ends the crawl."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    stats = get_crawler().stats
    report = CrawlReport(stats, blocker / "report", 1.0, in_thread=maybeDeferred)
    report.sample()
    report.refresh("running")
    report.refresh("finished (finished)")
    assert stats.get_value("report/errors") == 2
    assert stats.get_value("report/refreshes") is None
    assert caplog.text.count("cannot write the report") == 1


def test_frontier_counts_by_status_and_level_are_shown_where_the_frontier_reports_them() -> None:
    stats = {"frontier/urls/queued": 5, "frontier/urls/done": 7, "frontier/urls_counted_at": 1.5,
             "frontier/level/0": 2, "frontier/level/3": 4, "frontier/done": 7}
    assert frontier_urls(stats) == [("done", 7), ("queued", 5)]
    assert frontier_levels(stats) == [("3", 4), ("0", 2)]
    assert frontier_urls({"frontier/done": 7}) == [] and frontier_levels({}) == []
