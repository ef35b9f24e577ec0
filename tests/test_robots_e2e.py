"""robots.txt end to end: ``scrapy crawl web`` against the test web's
``robots-<variant>.test`` hosts, judged by the web's access log and its
RFC 9309 ground truth."""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from testweb import WebConfig, start_testweb
from tests.conftest import fetched_urls
from testweb.crawlrun import CrawlResult, run_web_crawl

# Hosts whose robots.txt decides once (no retries): status rules, BOM/CRLF,
# the 500 KiB cut, non-text bodies, redirects and a loop, agent groups.
STATIC = ("robots-bom.test", "robots-big.test", "robots-html.test", "robots-redirect.test",
          "robots-redirect5.test", "robots-loop.test", "robots-401.test", "robots-403.test",
          "robots-agents.test", "robots-delay.test")


def entries_of(web: Any, host: str) -> list[Any]:
    return sorted((e for e in web.entries() if e.host == host), key=lambda e: e.start)


def robots_entries(web: Any, host: str) -> list[Any]:
    return [e for e in entries_of(web, host) if "robots" in e.path]


def page_entries(web: Any, host: str) -> list[Any]:
    return [e for e in entries_of(web, host) if "robots" not in e.path]


def pages_of(web: Any, host: str) -> set[str]:
    """Canonical URLs of ``host`` served, robots.txt and its redirects aside."""
    return {url for url in fetched_urls(web)
            if f"//{host}:" in url and "robots" not in urlsplit(url).path}


def crawl(web: Any, workdir: Path, seeds: list[str], **settings: Any) -> CrawlResult:
    result = run_web_crawl(workdir, ",".join(seeds),
                           settings={"DNS_HOSTS": web.hosts_file, **settings})
    assert result.returncode == 0, result.log[-3000:]
    return result


@pytest.fixture(scope="module")
def static_crawl(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """One crawl of every single-decision robots host, 64 requests at once."""
    tmp = tmp_path_factory.mktemp("robots")
    with start_testweb(WebConfig(hosts=4, pages=6), tmp / "web") as web:
        seeds = [web.url(host) for host in STATIC]
        result = crawl(web, tmp / "crawl", seeds, CONCURRENT_REQUESTS=64,
                       JOBDIR=tmp / "job")
        yield web, seeds, result, tmp


@pytest.mark.parametrize("host", STATIC)
def test_fetched_set_is_the_rfc9309_truth(static_crawl: Any, host: str) -> None:
    web, _, _, _ = static_crawl
    truth = web.truth(seeds=[web.url(host)])
    fetched = pages_of(web, host)
    assert fetched == set(truth.fetched), (
        f"missing {sorted(set(truth.fetched) - fetched)}, extra {sorted(fetched - set(truth.fetched))}")


def test_rules_really_exclude_something(static_crawl: Any) -> None:
    """The truth is not trivially "everything": /private/ is excluded where
    the file says so, and allowed where the file must be ignored."""
    web, _, result, _ = static_crawl
    fetched = fetched_urls(web)

    def got(host: str, path: str) -> bool:
        return f"http://{host}:{web.port}{path}" in fetched

    for host in ("robots-bom.test", "robots-big.test", "robots-redirect.test",
                 "robots-redirect5.test", "robots-agents.test"):
        assert not got(host, "/private/secret.html"), host
    assert got("robots-big.test", "/p/1.html")  # Disallow: /p/ lies beyond 500 KiB
    assert not got("robots-agents.test", "/private/secret.html")  # the webcrawler group
    assert got("robots-agents.test", "/p/1.html")  # ... not the * group
    assert got("robots-agents.test", "/allowed.html")  # ... nor WebCrawler-News
    for host in ("robots-html.test", "robots-loop.test", "robots-401.test", "robots-403.test"):
        assert got(host, "/private/secret.html"), host
    assert result.stats["robotstxt/forbidden"] >= 5
    assert result.stats["robotstxt/truncated"] == 1
    assert result.stats["robotstxt/not_text"] == 1


def test_one_robots_fetch_per_host_before_its_pages(static_crawl: Any) -> None:
    web, _, _, _ = static_crawl
    for host in STATIC:
        robots = [e for e in robots_entries(web, host) if e.path == "/robots.txt"]
        assert len(robots) == (3 if host == "robots-loop.test" else 1), (host, robots)
        first_page = page_entries(web, host)[0]
        last_robots = robots_entries(web, host)[-1]  # after its redirects
        assert first_page.start >= last_robots.end, host


def test_redirects_are_followed_up_to_five_and_a_loop_is_cut(static_crawl: Any) -> None:
    web, _, _, _ = static_crawl
    assert len(robots_entries(web, "robots-redirect5.test")) == 6  # 5 redirects + the file
    loop = robots_entries(web, "robots-loop.test")
    assert len(loop) == 6  # the first request and five redirects, no more


def test_crawl_delay_reaches_the_frontier(static_crawl: Any) -> None:
    """robots-delay.test gives webcrawler 0.5 s: every page of the host starts
    at least 0.5 s after the previous fetch (robots.txt included) ended."""
    web, _, _, _ = static_crawl
    fetches = entries_of(web, "robots-delay.test")
    assert len(fetches) >= 4
    gaps = [b.start - a.end for a, b in zip(fetches, fetches[1:])]
    assert min(gaps) >= 0.5 - 0.01, gaps
    assert min(gaps) < 2.0  # the webcrawler group's delay, not the * group's 2 s


def test_excluded_urls_are_marked_in_the_url_database(static_crawl: Any) -> None:
    web, _, _, tmp = static_crawl
    with sqlite3.connect(tmp / "job" / "frontier.sqlite3") as db:
        rows = dict(db.execute("SELECT url, status FROM urls_readable WHERE host = ?",
                               ("robots-bom.test",)).fetchall())
    assert rows[f"http://robots-bom.test:{web.port}/private/secret.html"] == "excluded"
    assert rows[f"http://robots-bom.test:{web.port}/allowed.html"] == "done"


def test_first_page_waits_the_usual_gap_after_robots(start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=2, pages=4)
    crawl(web, tmp_path / "crawl", [web.url("robots-bom.test")], DOWNLOAD_DELAY=0.3)
    fetches = entries_of(web, "robots-bom.test")
    assert fetches[0].path == "/robots.txt"
    gaps = [b.start - a.end for a, b in zip(fetches, fetches[1:])]
    assert min(gaps) >= 0.3 - 0.01, gaps


def test_unreachable_robots_disallows_then_retries_with_backoff(start_web: Any, tmp_path: Path) -> None:
    """500 on every robots.txt fetch: no page while the host is unreachable,
    retries with growing gaps, then no restrictions after the period."""
    web = start_web(hosts=2, pages=4)
    result = crawl(web, tmp_path / "crawl", [web.url("robots-500.test")],
                   ROBOTSTXT_RETRY_DELAY=0.2, ROBOTSTXT_UNREACHABLE_PERIOD=1.5)
    robots = robots_entries(web, "robots-500.test")
    pages = page_entries(web, "robots-500.test")
    assert len(robots) >= 3
    starts = [e.start for e in robots]
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    assert all(b > a * 1.5 for a, b in zip(gaps, gaps[1:])), gaps  # back-off grows
    assert pages, "after the unreachable period the host has no restrictions"
    assert pages[0].start >= robots[0].start + 1.5
    assert {f"http://robots-500.test:{web.port}{e.path}" for e in pages} == \
        set(web.truth(seeds=[web.url("robots-500.test")], robots_5xx="allow").fetched)
    assert result.stats["robotstxt/held"] >= 2
    assert result.stats["robotstxt/unreachable_expired"] == 1


def test_unreachable_robots_keeps_urls_queued(start_web: Any, tmp_path: Path) -> None:
    """Within the period nothing of the host is fetched and nothing is lost:
    the URLs stay queued in the frontier (a resumed crawl gets them)."""
    web = start_web(hosts=2, pages=4)
    result = crawl(web, tmp_path / "crawl", [web.url("robots-500.test")],
                   ROBOTSTXT_RETRY_DELAY=0.2, ROBOTSTXT_UNREACHABLE_PERIOD=3600,
                   CLOSESPIDER_TIMEOUT=2, JOBDIR=tmp_path / "job")
    assert page_entries(web, "robots-500.test") == []
    assert len(robots_entries(web, "robots-500.test")) >= 2
    with sqlite3.connect(tmp_path / "job" / "frontier.sqlite3") as db:
        statuses = Counter(row[0] for row in db.execute("SELECT status FROM urls_readable"))
    assert statuses == Counter({"queued": 1}), statuses
    assert result.stats["robotstxt/held"] >= 2


def test_flaky_robots_is_retried_until_it_answers(start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=2, pages=4, robots_flaky_failures=2)
    crawl(web, tmp_path / "crawl", [web.url("robots-flaky.test")], ROBOTSTXT_RETRY_DELAY=0.2)
    robots = robots_entries(web, "robots-flaky.test")
    assert [e.status for e in robots] == [503, 503, 200]
    fetched = pages_of(web, "robots-flaky.test")
    assert fetched == set(web.truth(seeds=[web.url("robots-flaky.test")]).fetched)
    assert all(e.start >= robots[-1].end for e in page_entries(web, "robots-flaky.test"))


def test_one_fetch_serves_many_waiting_requests(start_web: Any, tmp_path: Path) -> None:
    """64 requests of one host in flight at once while its (slow) robots.txt
    is fetched: one fetch, and no page before it ended."""
    web = start_web(hosts=2, pages=4, slow_delay=0.5)
    host = "robots-slow.test"
    seeds = [web.url(host, f"/n/{i}.html") for i in range(64)]
    crawl(web, tmp_path / "crawl", seeds, CONCURRENT_REQUESTS=64,
          CONCURRENT_REQUESTS_PER_DOMAIN=64, DEPTH_LIMIT=1)
    robots = robots_entries(web, host)
    assert len(robots) == 1
    pages = page_entries(web, host)
    assert len(pages) >= 64
    assert min(e.start for e in pages) >= robots[0].end


def test_cache_ttl_refetches_robots(start_web: Any, tmp_path: Path) -> None:
    """A short TTL: robots.txt is fetched again once it expired, never sooner."""
    web = start_web(hosts=2, pages=4)
    result = crawl(web, tmp_path / "crawl", [web.url("robots-delay.test")],
                   ROBOTSTXT_CACHE_TTL=1.0)
    robots = robots_entries(web, "robots-delay.test")
    assert len(robots) >= 2  # six fetches 0.5 s apart outlive a 1 s TTL
    starts = [e.start for e in robots]
    assert all(b - a >= 1.0 for a, b in zip(starts, starts[1:])), starts
    assert result.stats["robotstxt/cache_hits"] >= 1


def test_cache_is_bounded(start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=2, pages=4)
    result = crawl(web, tmp_path / "crawl", [web.url(h) for h in STATIC[:5]],
                   ROBOTSTXT_CACHE_SIZE=2)
    assert result.stats["robotstxt/cache_size"] <= 2
    assert result.stats["robotstxt/cache_evictions"] >= 3


def test_sitemaps_are_recorded_and_optionally_crawled(start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=2, pages=4)
    host = "robots-sitemap.test"
    hidden = {f"http://{host}:{web.port}/s/{i}.html" for i in (1, 2, 3)}
    plain = crawl(web, tmp_path / "plain", [web.url(host)])
    assert plain.stats["robotstxt/sitemaps"] == 2
    assert not hidden & set(fetched_urls(web))
    seeded = crawl(web, tmp_path / "seeded", [web.url(host)], ROBOTSTXT_SITEMAP_SEEDS=True)
    assert hidden <= set(fetched_urls(web))
    assert f"http://{host}:{web.port}/private/secret.html" not in fetched_urls(web)
    assert seeded.stats["sitemaps/parsed"] >= 2
    # a sitemap's entries are requested as its links would be: depth 1, the sitemap as Referer
    sitemap = f"http://{host}:{web.port}/sitemap.xml"
    entries = [item for item in seeded.items if item["url"] in hidden]
    assert len(entries) == 3
    assert all(item["referer"] == sitemap and item["depth"] == 1 for item in entries)
