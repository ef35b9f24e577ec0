"""Every crawl ends: ``scrapy crawl web`` with the DEFAULT robots.txt retry
settings on a web with an unreachable robots.txt (always 500) and a host
whose https port refuses connections, judged by the web's access log and
the URL database."""

from __future__ import annotations

import socket
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from extensions import defaults
from tests.conftest import fetched_urls
from testweb.crawlrun import run_web_crawl


def closed_port() -> int:
    """A loopback port nothing listens on (connections are refused)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_crawl_with_dead_origins_ends_by_itself_and_defers_them(start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=4, pages=6)
    dead_https = f"https://h0002.test:{closed_port()}/"
    http_seeds = [web.url("h0000.test"), web.url("h0002.test"), web.url("robots-500.test")]
    result = run_web_crawl(
        tmp_path / "crawl", ",".join([dead_https, *http_seeds]),
        settings={"DNS_HOSTS": web.hosts_file, "JOBDIR": tmp_path / "job",
                  # the defaults (crawlrun shortens these for other tests)
                  "ROBOTSTXT_RETRY_DELAY": defaults.ROBOTSTXT_RETRY_DELAY,
                  "ROBOTSTXT_UNREACHABLE_PERIOD": defaults.ROBOTSTXT_UNREACHABLE_PERIOD},
        timeout=300)
    log = result.log
    assert result.returncode == 0, result.log[-3000:]
    assert result.report["stats"]["finish_reason"] == "finished"

    # the dead https port of h0002 never held its http pages back, and every
    # page whose robots.txt answered was fetched
    truth = web.truth(seeds=http_seeds, robots_5xx="disallow")
    missing = set(truth.regular) - set(truth.duplicates) - set(fetched_urls(web))
    assert not missing, sorted(missing)[:10]
    assert any("//h0002.test:" in url for url in truth.regular)

    with sqlite3.connect(tmp_path / "job" / "frontier.sqlite3") as db:
        deferred = {url for (url,) in db.execute("SELECT url FROM urls_readable WHERE status='deferred'")}
        reasons = dict(db.execute("SELECT origin, reason FROM deferrals"))
        statuses = Counter(status for (status,) in db.execute("SELECT status FROM urls_readable"))
    unreachable = f"http://robots-500.test:{web.port}"
    assert dead_https in deferred and web.url("robots-500.test") in deferred
    assert "robots.txt unreachable" in reasons[unreachable]
    assert "ConnectionRefusedError" in reasons[dead_https.rstrip("/")]
    assert statuses["queued"] == statuses["inflight"] == 0
    stats = result.report["stats"]
    assert stats["frontier/deferred"] == statuses["deferred"]
    assert set(stats["frontier/deferred_reasons"]) == set(reasons)
    assert result.report["deferred"] == reasons and result.report["deferred_urls"] == statuses["deferred"]
    assert "Deferred (retried first when resumed)" in log
