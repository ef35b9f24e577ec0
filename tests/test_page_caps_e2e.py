"""Per-page bounds end to end: ``scrapy crawl web`` on the synthetic test web
reads at most PROCESSING_MAX_PARSE_BYTES of a huge page and follows at most
LINKS_MAX_PER_PAGE links of any page, and says so in its stats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import fetched_urls
from testweb.crawlrun import run_web_crawl

MIB = 1024 * 1024
FILLER_BYTES = len(b"<p>" + b"frontier politeness " * 50 + b"</p>\n")  # testweb.special.big_page


def test_huge_page_is_parsed_only_up_to_the_byte_cap(start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=2, pages=2, links=2, big_page_mb=3)
    result = run_web_crawl(tmp_path / "crawl", web.url("special.test", "/big.html"), settings={
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 1, "PROCESSING_MAX_PARSE_BYTES": MIB})
    assert result.returncode == 0, result.log[-3000:]
    big = next(item for item in result.items if item["url"].endswith("/big.html"))
    assert big["length"] == 3 * MIB
    assert big["outlinks"] == 1  # its one link stands in the first bytes
    paragraphs = big["processed"]["tags"]["p"]
    assert MIB // FILLER_BYTES - 2 <= paragraphs <= MIB // FILLER_BYTES + 2  # not the ~3,100 of the page
    assert result.stats["processors/truncated/HtmlLinkExtractor"] == 1
    assert result.stats["processors/truncated/TagCounter"] == 1


def test_links_beyond_the_per_page_cap_are_neither_kept_nor_followed(start_web: Any, tmp_path: Path) -> None:
    web = start_web(hosts=6, pages=12, links=12)
    result = run_web_crawl(tmp_path / "crawl", web.url("h0000.test", "/"), settings={
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 2, "LINKS_MAX_PER_PAGE": 3})
    assert result.returncode == 0, result.log[-3000:]
    assert result.items and max(item["outlinks"] for item in result.items) <= 3
    assert result.stats["links/capped"] >= 1
    assert len(fetched_urls(web)) <= 1 + 3 + 3 * 3  # a tree of fan-out 3 at most, depth 2
