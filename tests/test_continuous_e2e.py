"""A continuous crawl of real documentation that changes under it.

nginx (Debian's, :mod:`testweb.realweb`) serves a writable copy of
debian-reference (16 pages, robots.txt with ``Crawl-delay: 0.3`` and a
``Disallow``) under its real name. ``scrapy crawl web`` runs with
``REVISIT_ENABLED`` and intervals of seconds. Once every page was fetched
and re-visits answer ``304``, the test changes two pages, deletes two and
adds one linked from a changed page; then kills the crawl with SIGKILL,
starts the same command again, and pauses it with SIGINT. The verdicts come
from nginx's access log and the crawl's report.
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from testweb.crawlrun import kill_crawl, start_web_crawl
from testweb.realweb import CRAWL_DELAY, SITES, LogEntry, RealWeb, start_realweb, writable_copy
from testweb.waiting import CrawlActivity, ended, wait_until

SITE = next(site for site in SITES if site.host == "www.debian.org")
CHANGED = ("ch01.en.html", "ch02.en.html")
DELETED = ("ch11.en.html", "ch12.en.html")
ADDED = "new.en.html"
GONE_AFTER = 2


def settings(web: RealWeb, job: Path) -> dict[str, Any]:
    return {
        "DNS_HOSTS": web.hosts_file, "ALLOW_PRIVATE_ADDRESSES": True, "JOBDIR": job,
        "REVISIT_ENABLED": True, "REVISIT_INITIAL_INTERVAL": 2, "REVISIT_MIN_INTERVAL": 1,
        "REVISIT_MAX_INTERVAL": 4, "REVISIT_GONE_AFTER": GONE_AFTER, "PROGRESS_INTERVAL": 1,
    }


def ours(web: RealWeb, since: int = 0) -> list[LogEntry]:
    return [entry for entry in web.entries()[since:] if entry.user_agent.startswith("webcrawler")]


#: requests a wait may see before its condition holds: a continuous crawl
#: never stops moving, so this, not a stall, bounds each wait
REQUEST_BUDGET = 600


def page(entry: LogEntry) -> str:
    """The file a request asked for (the site's root is its index.html)."""
    return entry.path.rsplit("/", 1)[-1] or "index.html"


def wait_for(web: RealWeb, proc: Any, workdir: Path, condition: Any, what: str) -> None:
    """Until ``condition()``; fails if the crawl ended first or made
    :data:`REQUEST_BUDGET` requests without it."""
    start = len(web.entries())
    wait_until(lambda: condition() or ended([proc]) or len(web.entries()) > start + REQUEST_BUDGET, what,
               CrawlActivity([workdir], also=lambda: len(web.entries())))
    assert proc.poll() is None, f"the continuous crawl ended before {what}"
    assert condition(), f"no {what} in {REQUEST_BUDGET} requests"


@pytest.fixture
def site(tmp_path: Path) -> Any:
    with start_realweb(tmp_path / "nginx", (writable_copy(SITE, tmp_path / "docs"),)) as web:
        yield web


def test_a_continuous_crawl_follows_changes_deletions_and_new_pages(site: RealWeb, tmp_path: Path) -> None:
    web, job = site, tmp_path / "job"
    root = Path(web.sites[0].root)
    pages = {path.name for path in root.glob("*.html")}
    seeds = f"{web.origin(SITE.host)}/"
    spider_args = {"allowed_domains": SITE.host}
    run1 = start_web_crawl(tmp_path / "run1", seeds, settings(web, job), spider_args, robots_overrides=False)
    try:
        # 1. every page fetched, then re-visits answered 304 (validators sent)
        wait_for(web, run1, tmp_path / "run1", lambda: pages <= {page(e) for e in ours(web) if e.status == 200}
                 and sum(e.status == 304 for e in ours(web)) >= 10, "every page, then ten 304s")
        # 2. the site changes
        changed_at = time.time()
        for name in CHANGED:
            text = (root / name).read_text(encoding="utf-8")
            link = f'<p>Changed at {changed_at}. <a href="{ADDED}">A new page</a></p>' if name == CHANGED[0] else \
                f"<p>Changed at {changed_at}.</p>"
            (root / name).write_text(text.replace("</body>", link + "</body>"), encoding="utf-8")
        for name in DELETED:
            (root / name).unlink()
        (root / ADDED).write_text("<html><head><title>New</title></head><body><p>A page added while the crawl "
                                  "ran.</p></body></html>", encoding="utf-8")

        def noticed() -> bool:
            after = [e for e in ours(web) if e.end > changed_at]
            refetched = {page(e) for e in after if e.status == 200}
            gone = Counter(page(e) for e in after if e.status == 404)
            return set(CHANGED) <= refetched and ADDED in refetched and all(gone[n] >= GONE_AFTER for n in DELETED)

        wait_for(web, run1, tmp_path / "run1", noticed, "the changes noticed")
        # 3. killed and started again: its due times and validators survive
        kill_crawl(run1, signal.SIGKILL)
        restart_mark = len(web.entries())
        run2 = start_web_crawl(tmp_path / "run2", seeds, settings(web, job), spider_args, robots_overrides=False)
        wait_for(web, run2, tmp_path / "run2", lambda: sum(e.status == 304 for e in ours(web, restart_mark)) >= 10,
                 "ten 304s after the restart")
        run2.send_signal(signal.SIGINT)  # Ctrl-C: a pause
        assert run2.wait(timeout=60) == 0
    finally:
        for proc in (run1, locals().get("run2")):
            if proc is not None and proc.poll() is None:
                kill_crawl(proc)
    entries = ours(web)
    after_restart = ours(web, restart_mark)
    # unchanged pages came back as 304 after the restart: no full refetch of a page that did not change
    unchanged = pages - set(CHANGED) - set(DELETED)
    assert not [e.uri for e in after_restart if e.status == 200 and page(e) in unchanged and e.end > changed_at], \
        "an unchanged page was fetched in full after the restart"
    # every changed page was fetched again in full after its change, the new page found
    assert {page(e) for e in entries if e.status == 200 and e.end > changed_at} >= {*CHANGED, ADDED}
    # deleted pages: gone after GONE_AFTER confirmations, then no longer asked for (the kill may repeat one)
    gone = Counter(page(e) for e in entries if e.status == 404)
    assert all(GONE_AFTER <= gone[name] <= GONE_AFTER + 1 for name in DELETED), gone
    # robots.txt held throughout, and the Crawl-delay between requests of one process
    assert not [e.uri for e in entries if e.path.endswith(".pdf")]
    for run in (ours(web)[:len(entries) - len(after_restart)], after_restart):
        gaps = [b.start - a.end for a, b in zip(run, run[1:])]
        assert min(gaps) >= CRAWL_DELAY - 0.01, sorted(gaps)[:5]
    report = json.loads((tmp_path / "run2" / "report.json").read_text())["stats"]
    assert report["revisit/not_modified"] >= 10 and report["finish_reason"] == "shutdown"


def test_two_processes_on_redis_share_one_revisit_schedule(site: RealWeb, tmp_path: Path, redis_server: Any) -> None:
    """Both processes crawl the same Redis frontier continuously: each due
    URL is taken once (no page is asked for twice within its shortest
    interval), re-visits are answered 304, and the Crawl-delay holds across
    the processes."""
    from testweb.redisserver import unique_prefix  # noqa: PLC0415

    web = site
    common = {**settings(web, tmp_path / "unused"), "FRONTIER_BACKEND": "redis", "REDIS_URL": redis_server.url,
              "FRONTIER_REDIS_PREFIX": unique_prefix(), "SCHEDULER_PERSIST": False}
    del common["JOBDIR"]
    seeds, spider_args = f"{web.origin(SITE.host)}/", {"allowed_domains": SITE.host}
    procs = [start_web_crawl(tmp_path / f"p{i}", seeds, common, spider_args, robots_overrides=False)
             for i in range(2)]
    try:
        wait_for(web, procs[0], tmp_path / "p0", lambda: sum(e.status == 304 for e in ours(web)) >= 20
                 and procs[1].poll() is None, "twenty 304s from two processes")
        for proc in procs:
            proc.send_signal(signal.SIGINT)
        assert [proc.wait(timeout=60) for proc in procs] == [0, 0]
    finally:
        for proc in procs:
            if proc.poll() is None:
                kill_crawl(proc)
    entries = ours(web)
    by_page: dict[str, list[LogEntry]] = {}
    for entry in entries:
        by_page.setdefault(entry.uri, []).append(entry)
    for uri, visits in by_page.items():
        gaps = [b.start - a.end for a, b in zip(visits, visits[1:])]
        assert not gaps or min(gaps) >= 1.0 - 0.05, (uri, sorted(gaps)[:3])  # REVISIT_MIN_INTERVAL
    gaps = [b.start - a.end for a, b in zip(entries, entries[1:])]
    assert min(gaps) >= CRAWL_DELAY - 0.01, sorted(gaps)[:5]
    reports = [json.loads((tmp_path / f"p{i}" / "report.json").read_text())["stats"] for i in range(2)]
    assert sum(report.get("revisit/not_modified", 0) for report in reports) >= 20
