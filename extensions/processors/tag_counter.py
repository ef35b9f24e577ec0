"""Tag counting, Mercator's statistics processor: elements of the first
``PROCESSING_MAX_PARSE_BYTES`` by tag, the ``TAG_COUNTER_MAX_TAGS`` commonest."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from scrapy.http import TextResponse

from extensions import defaults
from extensions.backends.settings import number_setting
from extensions.processors.htmlscan import scan_html
from extensions.processors.parsedpage import parsed_page

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response


class _TagScan:
    """A scan target counting start tags."""

    done = False

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def start(self, tag: str, attrib: Any) -> None:
        self.counts[tag] += 1


class TagCounter:
    """Returns ``{"tags": {tag: count}}``, most common first, at most ``max_tags``."""

    def __init__(self, max_tags: int = defaults.TAG_COUNTER_MAX_TAGS,
                 max_parse_bytes: int = defaults.PROCESSING_MAX_PARSE_BYTES, stats: Any = None) -> None:
        self.max_tags = max_tags
        self.max_parse_bytes = max_parse_bytes
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TagCounter:
        settings = crawler.settings
        return cls(number_setting(settings, "TAG_COUNTER_MAX_TAGS", 1, int),
                   number_setting(settings, "PROCESSING_MAX_PARSE_BYTES", 1, int), crawler.stats)

    def process(self, response: Response) -> dict[str, Any]:
        if not isinstance(response, TextResponse) or not response.body:
            return {"tags": {}}
        page = parsed_page(response, self.max_parse_bytes)
        if page is not None and page.exact:
            counts, truncated = page.tags, page.truncated
        else:
            scan = _TagScan()
            truncated = scan_html(response.body, response.encoding, scan, self.max_parse_bytes)
            counts = scan.counts
        if truncated and self.stats is not None:
            self.stats.inc_value("processors/truncated/TagCounter")
        return {"tags": dict(counts.most_common(self.max_tags))}
