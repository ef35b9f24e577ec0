"""Refused URLs are recorded in the URL database, end to end: a real
``scrapy crawl web`` on the test web, then the SQLite file read as an
operator would (``urls_readable``).

The URL filter (``filter/<reason>``), the trap filter (``trap/calendar``),
the host budget (``budget``) and the address policy (``address/<category>``)
each leave a row with status ``refused`` and the reason in ``extra``; a
depth refusal does not (a shorter path may still find the URL), and a
refused URL is never fetched.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from testweb.crawlrun import run_web_crawl


def refused_rows(job: Path) -> dict[str, str]:
    """url -> reason of every row with status refused."""
    with sqlite3.connect(job / "frontier.sqlite3") as db:
        rows = db.execute("SELECT url, extra FROM urls_readable WHERE status = 'refused'").fetchall()
    return {url: json.loads(extra)["refused"] for url, extra in rows}


def test_filter_trap_and_budget_refusals_are_recorded_with_their_reason(tmp_path: Path, start_web: Any) -> None:
    web = start_web(hosts=6, pages=10, links=4)
    job = tmp_path / "job"
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), settings={
        "DNS_HOSTS": web.hosts_file, "JOBDIR": job, "DEPTH_LIMIT": 4,
        "URL_FILTER_DENY": r"/p/3\.html$", "FRONTIER_HOST_BUDGET": 8, "URL_FILTER_MAX_DATES": 2})
    assert result.returncode == 0, result.log[-3000:]
    refused = refused_rows(job)
    reasons = set(refused.values())
    assert {"filter/deny", "trap/calendar", "budget"} <= reasons, reasons
    assert "filter/depth" not in reasons and not any(r.startswith("address/") for r in reasons)
    assert all(re.search(r"/p/3\.html$", url) for url, why in refused.items() if why == "filter/deny")
    assert all("/cal/" in url for url, why in refused.items() if why == "trap/calendar")
    fetched = {f"http://{entry.host}:{web.port}{entry.path}" for entry in web.entries()}
    assert not fetched & set(refused)  # refused, then never fetched
    assert result.stats["frontier/refused"] == len(refused)


def test_a_url_refused_by_the_address_policy_ends_refused_not_failed(
        tmp_path: Path, start_web: Any) -> None:
    web = start_web(hosts=2, pages=3, links=2)
    job = tmp_path / "job"
    seed = web.url("h0000.test", "/")
    result = run_web_crawl(tmp_path / "crawl", seed, settings={
        "DNS_HOSTS": web.hosts_file, "JOBDIR": job, "ALLOW_PRIVATE_ADDRESSES": False})
    assert result.returncode == 0, result.log[-3000:]
    assert refused_rows(job) == {seed: "address/loopback"}
    with sqlite3.connect(job / "frontier.sqlite3") as db:
        assert db.execute("SELECT COUNT(*) FROM urls WHERE status = 3").fetchone()[0] == 0  # none failed
    assert web.entries() == []
