"""Traps starve under a page budget: ``scrapy crawl web`` with no depth limit
on a test web of 100 hosts (one of them ``trap.test``: an infinite calendar,
ever deeper paths, session ids), a budget equal to the number of reachable
non-trap pages, and the defaults: AOPIC priorities, dispatch by priority
among ready hosts, the URL filter's repeat limit, session ids stripped."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import fetched_urls
from testweb.crawlrun import run_web_crawl


def test_traps_get_at_most_2_percent_while_95_percent_of_pages_are_fetched(
        start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=100, pages=20)
    truth = web.truth(depth_limit=40, robots_5xx="allow")
    regular = truth.regular - set(truth.duplicates)
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file), timeout=300, settings={
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 0, "CONCURRENT_REQUESTS": 8,
        "CLOSESPIDER_PAGECOUNT": len(regular)})
    assert result.returncode == 0, result.log[-2000:]
    assert result.report["finish_reason"] == "closespider_pagecount"  # the budget ran out
    fetched = fetched_urls(web)
    total = sum(fetched.values())
    trap = sum(count for url, count in fetched.items() if "//trap.test:" in url)
    assert trap <= 0.02 * total, (trap, total)
    assert trap > 0  # the trap is reachable: it is starved, not unreachable
    assert len(regular & set(fetched)) >= 0.95 * len(regular)
    assert result.stats["urlfilter/filtered/repeats"] >= 1


def test_session_ids_are_stripped_from_links(start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=2, pages=4)
    cart = web.url("trap.test", "/shop/cart.html")
    result = run_web_crawl(tmp_path / "strip", web.url("trap.test"), settings={
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 3})
    assert result.returncode == 0
    carts = [url for url in fetched_urls(web) if "/shop/" in url]
    assert carts == [cart]  # one cart page, not one per session
    kept = run_web_crawl(tmp_path / "kept", web.url("trap.test"), settings={
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 3, "LINKS_STRIP_PARAMS": ""})
    assert kept.returncode == 0
    assert len([url for url in fetched_urls(web) if "/shop/cart.html?sid=" in url]) >= 2
