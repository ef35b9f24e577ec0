"""The page's verdict, handed to the frontier by the last item pipeline.

The judged page comes back to the frontier through one entry point,
:meth:`Frontier.page_done(verdict) <extensions.frontier.scheduler.Frontier.page_done>`,
which records its outlinks for the link graph (:mod:`.linkrecord`), runs
AOPIC's credit assignment (the page's cash to its history, the rest over
its outlinks), keeps the content-seen group in the URL database and files
the outlinks to follow, each at the level its new cash earns, as requests
built by :func:`link_request`.
"""

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
    """The page's AOPIC history (its importance), each outlink's credit
    (its cash then, the ledger's dividend then) and, for a 304, its stored outlinks."""

    history: float = 0.0
    credit: dict[str, tuple[float, float]] = field(default_factory=dict)
    links: list[str] | None = None  # a 304's stored outlinks, to schedule in place of the item's


def page_fingerprints(page: PageVerdict) -> tuple[int, int]:
    """The fingerprints of the URL the page was requested as (its cash, its
    content group) and of the one its links belong to (the final URL after
    redirects): each URL canonicalised once for every step of the verdict."""
    requested, _ = url_fingerprint(page.url)
    if not page.final_url or page.final_url == page.url:
        return requested, requested
    return requested, url_fingerprint(page.final_url)[0]


def link_request(url: str, depth: int, referer: str | None) -> Request:
    """The request for an outlink found at ``depth - 1``, as Scrapy's
    spider middlewares would build it: ``depth`` meta (DepthMiddleware) and
    the ``Referer`` header (RefererMiddleware, default policy: the page's
    final URL)."""
    return Request(url, meta={"depth": depth}, headers={"Referer": referer} if referer else None)
