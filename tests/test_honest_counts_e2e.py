"""Honest counts: what the crawl decided is an outcome, not an error, in the
final report, the HTML report and ``scrapy crawlstatus``.

One ``scrapy crawl web`` of a small loopback web where nothing fails: a
site whose robots.txt disallows four of its pages and whose three other
pages the URL filter refuses (``URL_FILTER_DENY``), a host that answers its
first request with 503 and ``Retry-After: 1`` (a pushback, obeyed), and a
host whose robots.txt always answers 500 (held, then deferred). Every count
must say 0 errors and give each kind of decision its own number. Before,
the final report counted each robots.txt refusal and hold as an error (the
``IgnoreRequest`` of the robots.txt middleware), the HTML report counted the
503 and the robots.txt 500s as server errors, and crawlstatus listed the
URL filter's refusals under "Last errors".
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from testweb.crawlrun import ROOT, SCRAPY, run_web_crawl
from testweb.localserver import NOT_FOUND, LocalServer, Reply, Request

SITE, BUSY, DOWN = "site.test", "busy.test", "down.test"
PRIVATE = [f"/private/{n}" for n in range(4)]  # robots.txt: Disallow: /private/
SECRET = [f"/secret/{n}" for n in range(3)]  # URL_FILTER_DENY
PAGES = ["/", "/page/1", "/page/2"]


class CountsWeb(LocalServer):
    """The three hosts of the module doc on one loopback port."""

    def __init__(self) -> None:
        self.busy_answers = 0
        super().__init__(self.answer)

    def answer(self, request: Request) -> Reply:
        path = request.path
        if request.host == DOWN:
            return Reply(500, b"down", {"Content-Type": "text/plain"})
        if path == "/robots.txt":
            rules = b"User-agent: *\nDisallow: /private/\n" if request.host == SITE else b""
            return Reply(200, rules, {"Content-Type": "text/plain"})
        if request.host == BUSY:
            self.busy_answers += 1
            if self.busy_answers == 1:
                return Reply(503, b"busy", {"Content-Type": "text/plain", "Retry-After": "1"})
        if path in PAGES:
            targets = [*PAGES, *PRIVATE, *SECRET] if request.host == SITE else PAGES
            links = "".join(f'<a href="{link}">{link}</a>' for link in targets)
            return Reply(200, f"<html><body><p>{request.host}{path}</p>{links}</body></html>".encode())
        return NOT_FOUND

    def write_hosts_file(self, path: Path) -> Path:
        path.write_text("".join(f"127.0.0.1\t{host}\n" for host in (SITE, BUSY, DOWN)))
        return path


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("counts")
    with CountsWeb() as web:
        seeds = ",".join(web.url("/", host) for host in (SITE, BUSY, DOWN))
        result = run_web_crawl(tmp / "crawl", seeds, {
            "DNS_HOSTS": web.write_hosts_file(tmp / "hosts"), "JOBDIR": tmp / "job",
            "REPORT_DIR": tmp / "report", "URL_FILTER_DENY": "/secret/", "ROBOTSTXT_RETRY_TIMES": 1,
        })
    assert result.returncode == 0, result.log[-3000:]
    return tmp, result, web.port


def test_the_final_report_counts_decisions_apart_from_errors(crawl: Any) -> None:
    _, result, port = crawl
    report, stats = result.report, result.stats
    assert report["errors"] == 0, stats
    assert stats["downloader/exception_count"] > 0  # the refusals the report used to count
    assert report["outcomes"] == {"excluded": len(PRIVATE), "refused": len(SECRET), "deferred": 1,
                                  "pushback": 1, "requests_refused": stats["downloader/exception_count"]}
    [(origin, reason)] = report["deferred"].items()
    assert origin == f"http://{DOWN}:{port}" and "robots.txt" in reason
    line = re.search(r"Finished \(finished\): .* (\d+) errors, .*; not errors: (\d+) URLs excluded by robots.txt, "
                     r"(\d+) refused, (\d+) deferred, (\d+) pushbacks obeyed", result.log)
    assert line and line.groups() == ("0", "4", "3", "1", "1"), result.log[-2000:]


def test_the_html_report_shows_no_error_and_each_decision(crawl: Any) -> None:
    tmp, result, _ = crawl
    rows = dict(re.findall(r"<tr><td[^>]*>([^<]*)</td><td[^>]*>([^<]*)</td>",
                           (tmp / "report" / "index.html").read_text()))
    assert rows["errors"] == rows["errors: fetches failed (download errors)"] == "0"
    assert rows["errors: server errors (5xx, pushbacks aside)"] == "0"  # the 503 obeyed, the robots.txt 500s
    assert rows["outcomes: URLs excluded by robots.txt"] == str(len(PRIVATE))
    assert rows["outcomes: URLs refused (URL filter, traps, host budget, address policy)"] == str(len(SECRET))
    assert rows["outcomes: URLs deferred"] == "1"
    assert rows["outcomes: pushbacks obeyed (429, 503: host paused)"] == "1"
    assert rows["outcomes: requests refused before a fetch (robots.txt, holds)"] == str(
        result.stats["downloader/exception_count"])


def test_crawlstatus_lists_refusals_as_outcomes_not_errors(crawl: Any) -> None:
    tmp, _, _ = crawl
    command = [SCRAPY, "crawlstatus", "-s", f"JOBDIR={tmp / 'job'}"]
    status = json.loads(subprocess.run([*command, "--json", "--errors", "50"], cwd=ROOT, capture_output=True,
                                       text=True, timeout=300, check=True).stdout)
    assert status["errors"] == []
    refusals = {(event["url"].split("/", 3)[3], event["status"]): event["reason"] for event in status["refusals"]}
    assert {path for path, status in refusals if status == "excluded"} == {p[1:] for p in PRIVATE}
    assert {path for path, status in refusals if status == "refused"} == {p[1:] for p in SECRET}
    assert all(reason.startswith("filter/") for (_, kind), reason in refusals.items() if kind == "refused")
    screen = subprocess.run([*command, "--errors", "50"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                            check=True).stdout
    assert "Last errors (0, " in screen and f"Last refusals ({len(PRIVATE) + len(SECRET)}, outcomes" in screen
