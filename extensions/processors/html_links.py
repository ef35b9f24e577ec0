"""Link extraction for HTML: the processing module that feeds the frontier.

Reads the page's link elements from its one parse
(:func:`extensions.processors.parsedpage.parsed_page`), or scans a document
too large for a tree with :func:`extensions.processors.htmlscan.scan_html`.
Not Scrapy's ``LinkExtractor``: it cannot keep ``link`` elements by their
``rel``, knows nothing of ``<meta name=robots>``, and canonicalises with its
own rules, while the URL-seen test needs exactly
:func:`extensions.urls.canonical.canonicalize`.

Links come from ``a``/``area`` (``href``), ``link`` (``href``, only
``rel`` next, prev or alternate: pagination and translations, not style
sheets) and ``frame``/``iframe`` (``src``), resolved against the first
``<base href>`` (or the response URL; wherever the ``<base>`` stands, as in a
browser), canonicalised with the page's encoding (for non-ASCII query
strings) and deduplicated in document order.

``rel=nofollow`` links are skipped, and every link when the page says
``<meta name=robots content=nofollow|none>``, unless
``LINKS_IGNORE_NOFOLLOW`` is true. Stats: ``links/nofollow`` (links skipped
for nofollow), ``links/invalid`` (unparseable or not http(s)).

Bounds: only the first ``PROCESSING_MAX_PARSE_BYTES`` of a document are read
(``processors/truncated/HtmlLinkExtractor`` counts the documents cut), and
the scan stops once ``LINKS_MAX_PER_PAGE`` distinct links are found
(``links/capped`` counts those pages). The cap is on distinct ``href``
values without their fragment, before resolution and canonicalisation, so a
page yields at most that many links.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.http import TextResponse

from extensions import defaults
from extensions.processors.htmlscan import scan_html
from extensions.processors.parsedpage import parsed_page
from extensions.processors.registry import LateStats
from extensions.urls.canonical import InvalidURL, Resolver, canonicalize, resolve

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["HtmlLinkExtractor", "LinkScan"]

_IGNORE_NOFOLLOW: bool = defaults.LINKS_IGNORE_NOFOLLOW
_MAX_LINKS: int = defaults.LINKS_MAX_PER_PAGE
_MAX_PARSE_BYTES: int = defaults.PROCESSING_MAX_PARSE_BYTES

#: Element -> attribute holding its link.
LINK_ATTRIBUTES: dict[str, str] = {
    "a": "href", "area": "href", "link": "href", "frame": "src", "iframe": "src",
}
#: ``rel`` values that make a ``<link>`` a document worth crawling.
FOLLOWED_LINK_RELS = frozenset({"next", "prev", "alternate"})
_SCHEMES = ("http://", "https://")
_NO_RELS: frozenset[str] = frozenset()


class LinkScan:
    """A scan target collecting what link extraction needs, in one pass.

    ``hrefs`` maps each followable ``href`` (fragment cut) to the number of
    elements carrying it, in order of first appearance; ``done`` is set once
    it holds ``max_links`` of them. ``base`` is the first ``<base href>``.
    """

    def __init__(self, max_links: int, ignore_nofollow: bool) -> None:
        self.max_links = max_links
        self.ignore_nofollow = ignore_nofollow
        self.done = False
        self.base: str | None = None
        self.page_nofollow = False
        self.hrefs: dict[str, int] = {}
        self.rel_nofollow = 0  # link elements skipped for their own rel=nofollow

    def start(self, tag: str, attrib: Any) -> None:
        name = LINK_ATTRIBUTES.get(tag)
        if name is None:
            if tag == "meta":
                self.page_nofollow = self.page_nofollow or meta_says_nofollow(attrib)
            elif tag == "base" and self.base is None:
                self.base = attrib.get("href")
            return
        value = attrib.get(name)
        if value is None or self.done:
            return
        rel = attrib.get("rel")
        rels = frozenset(rel.lower().split()) if rel else _NO_RELS
        if tag == "link" and not rels & FOLLOWED_LINK_RELS:
            return
        if "nofollow" in rels and not self.ignore_nofollow:
            self.rel_nofollow += 1
            return
        key = value.partition("#")[0]  # canonical URLs have no fragment
        hrefs = self.hrefs
        hrefs[key] = hrefs.get(key, 0) + 1
        if len(hrefs) >= self.max_links:
            self.done = True

    @property
    def nofollow_skipped(self) -> int:
        """Link elements skipped for nofollow (all of them on a nofollow page)."""
        if self.ignore_nofollow:
            return 0
        return self.rel_nofollow + (sum(self.hrefs.values()) if self.page_nofollow else 0)


class HtmlLinkExtractor:
    """Returns ``{"links": [canonical URLs], "nofollow": page-wide nofollow}``."""

    def __init__(self, ignore_nofollow: bool = False, stats: Any = None,
                 max_links: int = _MAX_LINKS, max_parse_bytes: int = _MAX_PARSE_BYTES) -> None:
        if max_links < 1:
            raise ValueError(f"LINKS_MAX_PER_PAGE must be >= 1, got {max_links!r}")
        if max_parse_bytes < 1:
            raise ValueError(f"PROCESSING_MAX_PARSE_BYTES must be >= 1, got {max_parse_bytes!r}")
        self.ignore_nofollow = ignore_nofollow
        self.stats = stats
        self.max_links = max_links
        self.max_parse_bytes = max_parse_bytes

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HtmlLinkExtractor:
        settings = crawler.settings
        return cls(
            ignore_nofollow=settings.getbool("LINKS_IGNORE_NOFOLLOW", defaults.LINKS_IGNORE_NOFOLLOW),
            stats=LateStats(crawler),
            max_links=settings.getint("LINKS_MAX_PER_PAGE", defaults.LINKS_MAX_PER_PAGE),
            max_parse_bytes=settings.getint("PROCESSING_MAX_PARSE_BYTES", defaults.PROCESSING_MAX_PARSE_BYTES),
        )

    def process(self, response: Response) -> dict[str, Any]:
        if not isinstance(response, TextResponse) or not response.body:
            return {"links": [], "nofollow": False}
        encoding = response.encoding
        scan = LinkScan(self.max_links, self.ignore_nofollow)
        page = parsed_page(response, self.max_parse_bytes)
        if page is not None and page.exact:
            page.replay(scan)
            truncated = page.truncated and not scan.done
        else:
            truncated = scan_html(response.body, encoding, scan, self.max_parse_bytes)
        self._count("processors/truncated/HtmlLinkExtractor", int(truncated))
        self._count("links/capped", int(scan.done))
        self._count("links/nofollow", scan.nofollow_skipped)
        if scan.page_nofollow and not self.ignore_nofollow:
            return {"links": [], "nofollow": True}
        resolver = Resolver(base_url(scan.base, response.url))  # the base split once per page
        links: dict[str, None] = {}
        invalid = 0
        for value, elements in scan.hrefs.items():
            try:
                url = canonicalize(resolver.resolve(value), encoding=encoding)
            except InvalidURL:
                invalid += elements
                continue
            if not url.startswith(_SCHEMES):
                invalid += elements
                continue
            links[url] = None
        self._count("links/invalid", invalid)
        return {"links": list(links), "nofollow": scan.page_nofollow}

    def _count(self, key: str, count: int) -> None:
        if count and self.stats is not None:
            self.stats.inc_value(key, count)


def meta_says_nofollow(attrib: Any) -> bool:
    """True if these are the attributes of a ``<meta name=robots>`` saying
    nofollow (or none)."""
    if (attrib.get("name") or "").strip().lower() != "robots":
        return False
    directives = {d.strip() for d in (attrib.get("content") or "").lower().split(",")}
    return bool(directives & {"nofollow", "none"})


def base_url(href: str | None, url: str) -> str:
    """``href`` (a ``<base href>``) resolved against ``url``; ``url`` if
    absent or unusable."""
    if href is None:
        return url
    try:
        resolved = resolve(url, href)
    except InvalidURL:
        return url
    return resolved if resolved.lower().startswith(_SCHEMES) else url
