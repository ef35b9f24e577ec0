"""The page's verdict, handed to the frontier's ``page_done``, and its outlinks' requests."""

from __future__ import annotations

from dataclasses import dataclass, field

from scrapy import Request

from extensions.frontier.fingerprint import url_fingerprint

@dataclass(frozen=True, slots=True)
class PageVerdict:
    """What the pipelines concluded about a fetched page."""

    url: str  # as requested (the URL whose cash is taken)
    links: list[str] = field(default_factory=list)  # accepted outlinks, canonical (the extractor's)
    follow: bool = True  # not a duplicate: its links are credited and followed (recorded either way)
    content_group: int | None = None  # its similar-content group (URL database)
    duplicate: bool = False  # a duplicate of an earlier page of that group
    final_url: str | None = None  # where it was fetched after redirects (None: url); its links' source
    status: int = 200  # the HTTP status answered
    content: int | None = None  # the body's exact fingerprint (signed 64-bit), if computed
    etag: str | None = None  # the response's validators (a conditional GET sends them next time)
    last_modified: str | None = None
    not_modified: bool = False  # a 304 to a conditional GET: no body, the stored outlinks stand
    depth: int = 0  # the page's depth: its outlinks are one deeper
    credit_share: float = 1.0  # share of its cash (after the tax) its outlinks get; the rest to Lambda


@dataclass(frozen=True, slots=True)
class PageDone:
    """The page's AOPIC history, each outlink's credit and, for a 304, its stored outlinks."""

    history: float = 0.0
    credit: dict[str, tuple[float, float]] = field(default_factory=dict)
    links: list[str] | None = None  # a 304's stored outlinks, to schedule in place of the item's


def page_fingerprints(page: PageVerdict) -> tuple[int, int]:
    """Fingerprints of the URL the page was requested as and of its final URL."""
    requested, _ = url_fingerprint(page.url)
    if not page.final_url or page.final_url == page.url:
        return requested, requested
    return requested, url_fingerprint(page.final_url)[0]


def link_request(url: str, depth: int, referer: str | None) -> Request:
    """The request for an outlink, as Scrapy's Depth and Referer middlewares would build it."""
    return Request(url, meta={"depth": depth}, headers={"Referer": referer} if referer else None)
