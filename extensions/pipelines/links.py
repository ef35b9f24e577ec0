"""The last item pipeline: a page's outlinks are scheduled only after the
verdicts on the page are in.

In Scrapy, requests a callback yields reach the scheduler before the item
reaches the pipelines, so a content-seen verdict ("this page duplicates
another: do not follow its links", Mercator's rule) would come too late. The
``web`` spider therefore yields no link requests: it puts the links that
passed the URL filter into the item's ``links`` field, the pipelines before
this one judge the page (content-seen marks ``duplicate_of`` and
``content_group``), and this one

* hands the judged page to the frontier's one entry point,
  :meth:`Frontier.page_done <extensions.frontier.scheduler.Frontier.page_done>`
  (a :class:`~extensions.frontier.page.PageVerdict`): AOPIC's credit
  assignment (the page's cash to its history, exported as ``importance``;
  the tax to Lambda; the rest split over every outlink, known or new, so
  waiting URLs move up; a page of a low-yield host passes on only its
  ``credit_share``, see :mod:`extensions.pipelines.hostyield`) and the
  page's content-seen group for the URL database;
* schedules the outlinks unless the page is a duplicate, skipping links it
  scheduled lately (the frontier's URL-seen test would refuse them anyway;
  the cache only saves building the requests). Each goes through
  ``crawler.engine.crawl``, like any request from outside a callback: the
  engine sends ``request_scheduled`` (other extensions see the link), asks
  the scheduler, and sends ``request_dropped`` if the frontier refuses it.
  The spider middlewares do not see these requests (they run on a
  callback's output, long gone), so the two things they would add are set
  here (:func:`~extensions.frontier.page.link_request`): the ``depth`` meta
  (``DepthMiddleware``) and the ``Referer`` header (``RefererMiddleware``:
  the page's final URL); plus the link's AOPIC credit, which the frontier
  takes off the meta when it files the link;
* removes ``links`` and ``content_group`` from the item, so feeds hold only
  the count (``outlinks``).

When the frontier's answer comes through the shared frontier's worker thread
(Redis mode: :meth:`Frontier.page_done` returns a Deferred), this pipeline
returns a coroutine that schedules the links once the answer is in; the
engine holds the page's request until then, so its ``FINISH`` still reaches
Redis after its links' ``ENQUEUE`` commands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from extensions import defaults
from extensions.frontier.page import PageDone, PageVerdict, link_request
from extensions.frontier.scheduler import Frontier
from extensions.urls.recent import RecentLinks

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def verdict(item: Any, links: list[str], follow: bool, group: int | None) -> PageVerdict:
    """The page's verdict from its item (a duplicate's links too: the link graph records them)."""
    content = item.get("fingerprint")
    try:
        fingerprint = int(content, 16) if content else None
    except (TypeError, ValueError):
        fingerprint = None
    if fingerprint is not None and fingerprint >= 1 << 63:
        fingerprint -= 1 << 64  # signed, as the stores keep 64-bit values
    return PageVerdict(
        item["url"], links, follow, group, duplicate=bool(item.get("duplicate_of")),
        final_url=item.get("final_url"), status=int(item.get("status") or 200), content=fingerprint,
        etag=item.get("etag"), last_modified=item.get("last_modified"),
        not_modified=bool(item.get("not_modified")), credit_share=_share(item.get("credit_share")))


def _share(value: Any) -> float:
    """The item's ``credit_share`` in 0..1 (absent or unreadable: 1.0, all of the cash)."""
    try:
        share = float(value)
    except (TypeError, ValueError):
        return 1.0
    return min(1.0, max(0.0, share))


class LinkScheduler:
    """Hand the judged page to the frontier; schedule its outlinks."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.recent = RecentLinks(crawler.settings.getint("LINKS_RECENT_CACHE_SIZE"))
        self.follow_near = crawler.settings.getbool("CONTENTSEEN_FOLLOW_NEAR_DUPLICATES",
                                                    defaults.CONTENTSEEN_FOLLOW_NEAR_DUPLICATES)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LinkScheduler:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        """The item, its links scheduled; or a coroutine that schedules them
        and returns it once the frontier's answer is in (see the module docstring)."""
        if "links" not in item.fields:
            return item
        links: list[str] = item.pop("links", None) or []
        group = item.pop("content_group", None) if "content_group" in item.fields else None
        follow = not (item.get("duplicate_of") or (item.get("near_duplicate_of") and not self.follow_near))
        frontier = self.crawler.engine.scheduler
        done = None
        # not isinstance: Scrapy's scheduler metaclass answers it by duck
        # typing, so any scheduler "is" a Frontier (Scrapy's own has no page_done)
        if Frontier in type(frontier).__mro__ and item.get("url"):
            done = frontier.page_done(verdict(item, links, follow, group))
            if isinstance(done, Deferred):
                return self._schedule_later(item, links, follow, done)
        return self._schedule(item, links, follow, done)

    async def _schedule_later(self, item: Any, links: list[str], follow: bool, done: Deferred[PageDone]) -> Any:
        return self._schedule(item, links, follow, await maybe_deferred_to_future(done))

    def _schedule(self, item: Any, links: list[str], follow: bool, done: PageDone | None) -> Any:
        credit: dict[str, tuple[float, float]] = {}
        if done is not None:
            item["importance"] = done.history
            credit = done.credit
            if done.links is not None:  # a 304: the links stored at its last 200
                links = done.links
        if not follow:
            self.stats.inc_value("links/not_followed_duplicate", len(links))
            links = []
        depth = int(item.get("depth") or 0) + 1
        referer = item.get("final_url") or item.get("url")
        crawl, fresh = self.crawler.engine.crawl, self.recent.fresh
        recent_duplicates = 0  # counted here, added to the stats once per page
        for url in links:
            if fresh(url, depth):
                crawl(link_request(url, depth, referer, credit.get(url)))
            else:
                recent_duplicates += 1
        if recent_duplicates:
            self.stats.inc_value("links/recent_duplicates", recent_duplicates)
        return item
