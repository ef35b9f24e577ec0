"""One parse of an HTML page, memoised per response, shared by link extraction,
tag counting and the content-seen text (``exact`` False: the processors scan)."""

from __future__ import annotations

from collections import Counter
from operator import attrgetter
from typing import TYPE_CHECKING

from lxml import etree
from scrapy.utils.datatypes import LocalWeakReferencedCache

from extensions import defaults
from extensions.contentseen.text import text_of, text_tree

if TYPE_CHECKING:
    from scrapy.http import Response

    from extensions.processors.htmlscan import ScanTarget

#: Largest document (bytes read) parsed into a tree; larger ones are streamed.
TREE_MAX_BYTES: int = defaults.CONTENTSEEN_MAX_TEXT_BYTES
#: Elements a link extractor looks at, in document order.
LINK_ELEMENTS = ("a", "area", "link", "frame", "iframe", "base", "meta")

_TAG = attrgetter("tag")


class ParsedPage:
    """What the HTML processors and content-seen read of one page (``exact``: as a scan reads it)."""

    __slots__ = ("exact", "link_elements", "read_bytes", "tags", "text", "truncated", "__weakref__")

    def __init__(self, read_bytes: int, truncated: bool, exact: bool, tags: Counter[str],
                 link_elements: list[etree._Element], text: str | None) -> None:
        self.read_bytes = read_bytes
        self.truncated = truncated
        self.exact = exact
        self.tags = tags
        self.link_elements = link_elements
        self.text = text

    def replay(self, target: ScanTarget) -> None:
        """Feed the link elements to ``target`` as a scan would, until it is done."""
        start = target.start
        for element in self.link_elements:
            if target.done:
                return
            start(element.tag, element)


def parse_page(body: bytes, encoding: str | None, max_bytes: int, text: bool = True) -> ParsedPage:
    """Parse ``body[:max_bytes]`` once: tag counts, link elements, visible text if asked."""
    read = body[:max_bytes] if len(body) > max_bytes else body
    root, complete = text_tree(read, encoding)
    tags: Counter[str] = Counter()
    elements: list[etree._Element] = []
    # the scan reads the same decoded text with the same parser, NULs removed
    # and without libxml2's resource limits
    exact = complete and b"\x00" not in read
    if exact and root is not None:
        elements = list(root.iter(*LINK_ELEMENTS))
        tags.update(map(_TAG, root.iter(etree.Element)))
    return ParsedPage(len(read), len(body) > max_bytes, exact, tags, elements,
                      text_of(root) if text else None)


_LAST: LocalWeakReferencedCache[Response, ParsedPage] = LocalWeakReferencedCache(limit=1)  # the last page only


def parsed_page(response: Response, max_bytes: int, text: bool = False) -> ParsedPage | None:
    """The parse of ``response``'s first ``max_bytes``, once; None: stream it."""
    body = response.body
    read_bytes = min(len(body), max_bytes)
    page = _LAST[response]
    if page is not None and page.read_bytes == read_bytes and (page.text is not None or not text):
        return page
    if not text and read_bytes > TREE_MAX_BYTES:
        return None
    page = parse_page(body, getattr(response, "encoding", None), max_bytes, text)
    _LAST[response] = page
    return page
