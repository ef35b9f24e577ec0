"""Link extraction for HTML, the processing module that feeds the frontier:
``a``, ``area``, ``link`` (rel next, prev, alternate), ``frame`` and ``iframe``
targets against the first ``<base href>``, canonicalised, deduplicated in
document order, nofollow skipped unless ``LINKS_IGNORE_NOFOLLOW``. Stats ``links/*``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.http import TextResponse

from extensions import defaults
from extensions.backends.settings import flag_setting, number_setting
from extensions.processors.htmlscan import scan_html
from extensions.processors.parsedpage import parsed_page
from extensions.urls.canonical import InvalidURL, Resolver, canonicalize, resolve

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

#: Element -> attribute holding its link.
LINK_ATTRIBUTES: dict[str, str] = {
    "a": "href", "area": "href", "link": "href", "frame": "src", "iframe": "src",
}
#: ``rel`` values that make a ``<link>`` a document worth crawling.
FOLLOWED_LINK_RELS = frozenset({"next", "prev", "alternate"})
_SCHEMES = ("http://", "https://")
_NO_RELS: frozenset[str] = frozenset()


class LinkScan:
    """Scan target collecting the first ``<base href>`` and each followable ``href``."""

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
                 max_links: int = defaults.LINKS_MAX_PER_PAGE,
                 max_parse_bytes: int = defaults.PROCESSING_MAX_PARSE_BYTES) -> None:
        self.ignore_nofollow = ignore_nofollow
        self.stats = stats
        self.max_links = max_links
        self.max_parse_bytes = max_parse_bytes

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HtmlLinkExtractor:
        settings = crawler.settings
        return cls(flag_setting(settings, "LINKS_IGNORE_NOFOLLOW"), crawler.stats,
                   number_setting(settings, "LINKS_MAX_PER_PAGE", 1, int),
                   number_setting(settings, "PROCESSING_MAX_PARSE_BYTES", 1, int))

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
                url = ""
            if url.startswith(_SCHEMES):
                links[url] = None
            else:
                invalid += elements
        self._count("links/invalid", invalid)
        return {"links": list(links), "nofollow": scan.page_nofollow}

    def _count(self, key: str, count: int) -> None:
        if count and self.stats is not None:
            self.stats.inc_value(key, count)


def meta_says_nofollow(attrib: Any) -> bool:
    """True for the attributes of a ``<meta name=robots>`` saying nofollow (or none)."""
    if (attrib.get("name") or "").strip().lower() != "robots":
        return False
    directives = {d.strip() for d in (attrib.get("content") or "").lower().split(",")}
    return bool(directives & {"nofollow", "none"})


def base_url(href: str | None, url: str) -> str:
    """``href`` (a ``<base href>``) resolved against ``url``; ``url`` if absent or unusable."""
    if href is None:
        return url
    try:
        resolved = resolve(url, href)
    except InvalidURL:
        return url
    return resolved if resolved.lower().startswith(_SCHEMES) else url
