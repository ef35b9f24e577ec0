"""The test web's pages of real weight (``WebConfig(weight="real")``)."""

from __future__ import annotations

import functools
import re
import statistics

from scrapy.http import HtmlResponse
from scrapy.linkextractors import LinkExtractor

from testweb.heavy import MAX_LINKS, MAX_SIZE, MIN_LINKS, SIZE_QUANTILES
from testweb.model import SiteModel, WebConfig, canonical_url

HOSTS, PAGES = 40, 25


@functools.cache
def pages(weight: str) -> list:
    model = SiteModel(WebConfig(hosts=HOSTS, pages=PAGES, weight=weight), 8080)
    return [(index, number, model.tree_page(index, number)) for index in range(HOSTS) for number in range(PAGES)]


def test_sizes_follow_the_real_pages() -> None:
    sizes = sorted(len(page.body) for _, _, page in pages("real"))
    median = statistics.median(sizes)
    assert SIZE_QUANTILES[8] <= median <= SIZE_QUANTILES[12]  # the real median is the 50% point, 21 KB
    assert 40_000 <= statistics.mean(sizes) <= 75_000  # the real mean, the largest pages capped: ~50 KB
    assert max(sizes) <= MAX_SIZE + 50_000
    tiny = statistics.median(len(page.body) for _, _, page in pages("tiny"))
    assert median > 10 * tiny


def test_pages_have_the_structure_of_real_pages() -> None:
    shares, code = [], 0
    sample = pages("real")[::25]
    for _, _, page in sample:
        html = page.body.decode()
        for part in ("<style>", "<script>", '<div class="sidebar">', "<h2", "<p>", "<code"):
            assert part in html
        code += "<pre>" in html
        text = re.sub(r"<[^>]+>", "", re.sub(r"<(script|style)>.*?</\1>", "", html, flags=re.S))
        shares.append(len(text) / len(html))
    assert 0.2 <= statistics.median(shares) <= 0.45  # visible text: ~30% of the bytes, as on the real pages
    assert code >= len(sample) / 2  # code blocks on most pages


def test_every_link_of_the_ground_truth_is_in_the_page_and_no_other() -> None:
    """The page's own URL aside: its in-page references, which add no page."""
    extractor = LinkExtractor(canonicalize=False, unique=False, tags=("a",))
    counts = []
    for index, number, page in pages("real")[::7]:
        url = f"http://h{index:04d}.test:8080/p/{number}.html"
        found = {canonical_url(link.url) for link in extractor.extract_links(HtmlResponse(url, body=page.body))}
        found.discard(canonical_url(url))  # in-page references (#name), as on real pages
        base = HtmlResponse(url, body=b"")
        assert found == {canonical_url(base.urljoin(link.href)) for link in page.links} - {canonical_url(url)}
        counts.append(len(page.links))
    assert MIN_LINKS <= statistics.median(counts) <= MAX_LINKS + 8 + 1  # plus the menu


def test_the_same_config_gives_the_same_bytes() -> None:
    first = SiteModel(WebConfig(hosts=3, pages=5, weight="real"), 8080).tree_page(2, 4).body
    again = SiteModel(WebConfig(hosts=3, pages=5, weight="real"), 8080).tree_page(2, 4).body
    assert first == again and len(first) > 5000
