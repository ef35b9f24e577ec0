"""The last item pipeline: a page's outlinks are filed once its verdicts are in,
through :meth:`Frontier.page_done <extensions.frontier.scheduler.Frontier.page_done>`
(under another scheduler through ``engine.crawl``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from extensions import defaults
from extensions.contentseen.fingerprint import to_signed64
from extensions.frontier.page import PageDone, PageVerdict, link_request
from extensions.frontier.scheduler import Frontier

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


def verdict(item: Any, links: list[str], follow: bool, group: int | None) -> PageVerdict:
    """The page's verdict from its item (a duplicate's links too: the link graph records them)."""
    content = item.get("fingerprint")
    try:  # signed, as the stores keep 64-bit values
        fingerprint = to_signed64(int(content, 16)) if content else None
    except (TypeError, ValueError):
        fingerprint = None
    try:  # in 0..1; absent or unreadable: 1.0, all of the cash
        share = min(1.0, max(0.0, float(item.get("credit_share"))))
    except (TypeError, ValueError):
        share = 1.0
    return PageVerdict(
        item["url"], links, follow, group, duplicate=bool(item.get("duplicate_of")),
        final_url=item.get("final_url"), status=int(item.get("status") or 200), content=fingerprint,
        etag=item.get("etag"), last_modified=item.get("last_modified"),
        not_modified=bool(item.get("not_modified")), depth=int(item.get("depth") or 0),
        credit_share=share)


class LinkScheduler:
    """Hand the judged page, with its links, to the frontier."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.follow_near = crawler.settings.getbool("CONTENTSEEN_FOLLOW_NEAR_DUPLICATES",
                                                    defaults.CONTENTSEEN_FOLLOW_NEAR_DUPLICATES)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LinkScheduler:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        """The item, its links filed; or a coroutine that returns it once they are."""
        if "links" not in item.fields:
            return item
        links: list[str] = item.pop("links", None) or []
        group = item.pop("content_group", None) if "content_group" in item.fields else None
        follow = not (item.get("duplicate_of") or (item.get("near_duplicate_of") and not self.follow_near))
        frontier = self.crawler.engine.scheduler
        # not isinstance: Scrapy's scheduler metaclass makes any scheduler "a Frontier"
        if Frontier not in type(frontier).__mro__ or not item.get("url"):
            return self._crawl(item, links if follow else [])
        done = frontier.page_done(verdict(item, links, follow, group))
        if isinstance(done, Deferred):
            return self._later(item, done)
        item["importance"] = done.history
        return item

    async def _later(self, item: Any, done: Deferred[PageDone]) -> Any:
        item["importance"] = (await maybe_deferred_to_future(done)).history
        return item

    def _crawl(self, item: Any, links: list[str]) -> Any:
        """Another scheduler: the links through the engine."""
        depth = int(item.get("depth") or 0) + 1
        referer = item.get("final_url") or item.get("url")
        for url in links:
            self.crawler.engine.crawl(link_request(url, depth, referer))
        return item
