"""Tag counting: Mercator's example of a statistics-gathering processor.

Counts the elements of an HTML document by tag name, on the lxml tree parsel
already built for the response (parsel caches the selector on the response,
so every HTML processor shares one parse). Only the ``TAG_COUNTER_MAX_TAGS``
most common tags are reported, so a page of invented tags (a trap, or a
custom-element framework) cannot bloat every item.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from lxml import etree
from scrapy.http import TextResponse

from extensions import defaults

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["TagCounter"]

_MAX_TAGS: int = getattr(defaults, "TAG_COUNTER_MAX_TAGS", 50)


class TagCounter:
    """Returns ``{"tags": {tag: count}}``, most common first, at most ``max_tags``."""

    def __init__(self, max_tags: int = _MAX_TAGS) -> None:
        if max_tags < 1:
            raise ValueError(f"TAG_COUNTER_MAX_TAGS must be >= 1, got {max_tags!r}")
        self.max_tags = max_tags

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> TagCounter:
        return cls(crawler.settings.getint("TAG_COUNTER_MAX_TAGS", _MAX_TAGS))

    def process(self, response: Response) -> dict[str, Any]:
        if not isinstance(response, TextResponse) or not response.body:
            return {"tags": {}}
        root = response.selector.root
        if not hasattr(root, "iter"):
            return {"tags": {}}
        # iter(etree.Element) skips comments and processing instructions,
        # whose ``tag`` is a function, not a name.
        counts = Counter(element.tag for element in root.iter(etree.Element))
        return {"tags": dict(counts.most_common(self.max_tags))}
