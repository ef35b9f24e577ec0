"""The frontier in real crawls of the synthetic web: politeness and resume.

Politeness is read off the test web's access log (server-side times, so a
gap there is never shorter than the crawler's own). Resume kills the crawl
with SIGKILL several times at random moments and checks the union of all
runs against the ground truth.
"""

from __future__ import annotations

import random
import signal
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import fetched_urls
from testweb.crawlrun import kill_crawl, run_web_crawl, start_web_crawl
from testweb.waiting import CrawlActivity, ended, wait_until

DELAY = 0.15


def _by_host(entries: list[Any]) -> dict[str, list[Any]]:
    hosts: dict[str, list[Any]] = defaultdict(list)
    for entry in sorted(entries, key=lambda e: e.start):
        hosts[entry.host].append(entry)
    return hosts


@pytest.fixture(scope="module")
def polite_crawl(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from testweb import WebConfig, start_testweb

    tmp = tmp_path_factory.mktemp("polite")
    with start_testweb(WebConfig(hosts=40, pages=8, links=5, seed=3), tmp / "web") as web:
        result = run_web_crawl(
            tmp / "crawl", str(web.seeds_file),
            settings={"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 6,
                      "CONCURRENT_REQUESTS": 64, "DOWNLOAD_DELAY": DELAY,
                      # the truth follows copies' links; content-seen is tested elsewhere
                      "CONTENTSEEN_ENABLED": False},
        )
        truth = web.truth(depth_limit=6, robots_5xx="allow")
        yield web, truth, result, web.entries()


def test_never_two_requests_in_flight_to_one_host(polite_crawl: Any) -> None:
    _, _, result, entries = polite_crawl
    assert result.returncode == 0, result.log[-3000:]
    for host, fetches in _by_host(entries).items():
        for before, after in zip(fetches, fetches[1:]):
            assert after.start >= before.end, (host, before, after)


def test_never_a_gap_shorter_than_the_delay(polite_crawl: Any) -> None:
    _, _, _, entries = polite_crawl
    checked = 0
    for host, fetches in _by_host(entries).items():
        pages = [e for e in fetches if e.path != "/robots.txt"]
        for before, after in zip(pages, pages[1:]):
            assert after.start - before.end >= DELAY, (host, before, after)
            checked += 1
    assert checked > 100


def test_robots_crawl_delay_is_honoured(polite_crawl: Any) -> None:
    web, truth, _, entries = polite_crawl
    delays = web.crawl_delays()  # host -> Crawl-delay for our user agent
    assert delays
    checked = 0
    for host, fetches in _by_host(entries).items():
        if host not in delays:
            continue
        pages = [e for e in fetches if e.path != "/robots.txt"]
        for before, after in zip(pages, pages[1:]):
            assert after.start - before.end >= max(DELAY, delays[host]), (host, before, after)
            checked += 1
    assert checked


def test_hosts_are_fetched_in_parallel_within_their_delays(polite_crawl: Any) -> None:
    """Politeness per host, not a global throttle: the crawl takes far less
    than the delays of all hosts laid end to end."""
    _, _, _, entries = polite_crawl
    pages = [e for e in entries if e.path != "/robots.txt"]
    serial = sum((len(fetches) - 1) * DELAY for fetches in _by_host(pages).values())
    elapsed = max(e.end for e in pages) - min(e.start for e in pages)
    assert elapsed < serial / 4, (elapsed, serial)


def test_polite_crawl_still_reaches_the_ground_truth(polite_crawl: Any) -> None:
    web, truth, _, _ = polite_crawl
    fetched = fetched_urls(web)
    assert set(truth.regular) <= set(fetched) <= set(truth.fetched)
    assert not repeats_other_than_retries(web)


def repeats_other_than_retries(web: Any) -> dict[str, list[int]]:
    """URLs fetched more than once where an earlier answer was not a 5xx
    (Scrapy's RetryMiddleware fetches a 5xx page again, on purpose)."""
    answers: dict[str, list[int]] = defaultdict(list)
    for entry in sorted(web.entries(), key=lambda e: e.start):
        if entry.path != "/robots.txt":
            answers[next(iter(fetched_urls_of(web, [entry])))].append(entry.status)
    return {url: statuses for url, statuses in answers.items()
            if any(status < 500 for status in statuses[:-1])}


def test_sigkill_at_random_moments_then_resume_fetches_exactly_the_truth(
    tmp_path: Path, start_web: Any,
) -> None:
    web = start_web(hosts=15, pages=15, links=5, seed=11)
    interval = 0.5
    settings = {
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 6, "CONCURRENT_REQUESTS": 16,
        "DOWNLOAD_DELAY": 0.05, "JOBDIR": tmp_path / "job",
        "FRONTIER_CHECKPOINT_INTERVAL": interval,
        "CONTENTSEEN_ENABLED": False,  # the truth follows copies' links
    }
    truth = web.truth(depth_limit=6, robots_5xx="allow")
    rng = random.Random(5)
    kills: list[float] = []
    for run in range(3):
        proc = start_web_crawl(tmp_path / f"run{run}", str(web.seeds_file), settings)
        served = len(web.entries())
        target = served + rng.randint(5, 40)
        wait_until(lambda: len(web.entries()) >= target or ended([proc]), "kill moment",  # noqa: B023
                   CrawlActivity([tmp_path / f"run{run}"], also=lambda: len(web.entries())))
        if proc.poll() is not None:
            break
        kill_crawl(proc, signal.SIGKILL)
        kills.append(time.time())  # after the process is gone: nothing starts later
    assert kills, "the crawl ended before it could be killed"
    final = run_web_crawl(tmp_path / "final", str(web.seeds_file), settings, timeout=180)
    assert final.returncode == 0, final.log[-3000:]
    fetched = fetched_urls(web)
    assert set(truth.regular) <= set(fetched) <= set(truth.fetched)
    # A URL fetched again (not a retry of a 5xx) was in flight, or fetched
    # after the last checkpoint, when a kill came.
    repeated = repeats_other_than_retries(web)
    firsts: dict[str, float] = {}
    for entry in sorted(web.entries(), key=lambda e: e.start):
        url = next(iter(fetched_urls_of(web, [entry])))
        if url in repeated and url in firsts:
            first = firsts[url]
            assert any(k - interval - 1.0 <= first <= k for k in kills), (url, first, kills)
        firsts.setdefault(url, entry.start)
    assert len(repeated) <= len(kills) * 16 * 2


def fetched_urls_of(web: Any, entries: list[Any]) -> set[str]:
    from testweb.model import canonical_url

    return {canonical_url(f"http://{e.host}:{web.port}{e.path}") for e in entries}


def test_corrupt_frontier_database_stops_the_crawl_at_start_with_a_clear_error(
    tmp_path: Path, start_web: Any,
) -> None:
    web = start_web(hosts=2, pages=2, links=1)
    job = tmp_path / "job"
    job.mkdir()
    (job / "frontier.sqlite3").write_bytes(b"not a database " * 400)
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file),
                           {"DNS_HOSTS": web.hosts_file, "JOBDIR": job}, timeout=120)
    assert result.returncode != 0
    assert "cannot open the frontier database" in result.log
    assert str(job / "frontier.sqlite3") in result.log
    assert not [e for e in web.entries() if e.path != "/robots.txt"]
