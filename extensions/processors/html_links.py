"""Link extraction for HTML: the processing module that feeds the frontier.

Reads the lxml tree parsel already built for the response (one parse per
document, shared with the other HTML processors) rather than running
Scrapy's ``LinkExtractor``: that one cannot keep ``link`` elements by their
``rel``, knows nothing of ``<meta name=robots>``, and canonicalises with its
own rules, while the frontier's URL-seen test needs exactly
:func:`extensions.urls.canonical.canonicalize`.

Links come from ``a``/``area`` (``href``), ``link`` (``href``, only
``rel`` next, prev or alternate: pagination and translations, not style
sheets) and ``frame``/``iframe`` (``src``), resolved against ``<base
href>`` (or the response URL), canonicalised with the page's encoding (for
non-ASCII query strings) and deduplicated in document order.

``rel=nofollow`` links are skipped, and every link when the page says
``<meta name=robots content=nofollow|none>``, unless
``LINKS_IGNORE_NOFOLLOW`` is true. Stats: ``links/nofollow`` (links skipped
for nofollow), ``links/invalid`` (unparseable or not http(s)).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.http import TextResponse

from extensions import defaults
from extensions.processors.registry import LateStats
from extensions.urls.canonical import InvalidURL, canonicalize, resolve

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["HtmlLinkExtractor"]

_IGNORE_NOFOLLOW: bool = getattr(defaults, "LINKS_IGNORE_NOFOLLOW", False)

#: Element -> attribute holding its link.
LINK_ATTRIBUTES: dict[str, str] = {
    "a": "href", "area": "href", "link": "href", "frame": "src", "iframe": "src",
}
#: ``rel`` values that make a ``<link>`` a document worth crawling.
FOLLOWED_LINK_RELS = frozenset({"next", "prev", "alternate"})
_SCHEMES = ("http://", "https://")


class HtmlLinkExtractor:
    """Returns ``{"links": [canonical URLs], "nofollow": page-wide nofollow}``."""

    def __init__(self, ignore_nofollow: bool = False, stats: Any = None) -> None:
        self.ignore_nofollow = ignore_nofollow
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> HtmlLinkExtractor:
        ignore = crawler.settings.getbool("LINKS_IGNORE_NOFOLLOW", _IGNORE_NOFOLLOW)
        return cls(ignore_nofollow=ignore, stats=LateStats(crawler))

    def process(self, response: Response) -> dict[str, Any]:
        if not isinstance(response, TextResponse) or not response.body:
            return {"links": [], "nofollow": False}
        root = response.selector.root
        if not hasattr(root, "iter"):  # parsel gave up on the document
            return {"links": [], "nofollow": False}
        page_nofollow = meta_robots_nofollow(root)
        base = base_url(root, response.url)
        encoding = response.encoding
        links: dict[str, None] = {}
        skipped = invalid = 0
        for element in root.iter(*LINK_ATTRIBUTES):
            value = element.get(LINK_ATTRIBUTES[element.tag])
            if value is None:
                continue
            rels = _rel_tokens(element)
            if element.tag == "link" and not rels & FOLLOWED_LINK_RELS:
                continue
            if (page_nofollow or "nofollow" in rels) and not self.ignore_nofollow:
                skipped += 1
                continue
            try:
                url = canonicalize(resolve(base, value), encoding=encoding)
            except InvalidURL:
                invalid += 1
                continue
            if not url.startswith(_SCHEMES):
                invalid += 1
                continue
            links[url] = None
        self._count(skipped, invalid)
        return {"links": list(links), "nofollow": page_nofollow}

    def _count(self, skipped: int, invalid: int) -> None:
        if self.stats is None:
            return
        if skipped:
            self.stats.inc_value("links/nofollow", skipped)
        if invalid:
            self.stats.inc_value("links/invalid", invalid)


def _rel_tokens(element: Any) -> frozenset[str]:
    rel = element.get("rel")
    return frozenset(rel.lower().split()) if rel else frozenset()


def meta_robots_nofollow(root: Any) -> bool:
    """True if a ``<meta name=robots>`` says nofollow (or none)."""
    for meta in root.iter("meta"):
        if (meta.get("name") or "").strip().lower() != "robots":
            continue
        directives = {d.strip() for d in (meta.get("content") or "").lower().split(",")}
        if directives & {"nofollow", "none"}:
            return True
    return False


def base_url(root: Any, url: str) -> str:
    """The first ``<base href>`` resolved against ``url``; ``url`` if none usable."""
    for base in root.iter("base"):
        href = base.get("href")
        if href is None:
            continue
        try:
            resolved = resolve(url, href)
        except InvalidURL:
            return url
        return resolved if resolved.lower().startswith(_SCHEMES) else url
    return url
