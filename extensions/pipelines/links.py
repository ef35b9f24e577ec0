"""The last item pipeline: a page's outlinks are scheduled only after the
verdicts on the page are in.

In Scrapy, requests a callback yields reach the scheduler before the item
reaches the pipelines, so a content-seen verdict ("this page duplicates
another: do not follow its links", Mercator's rule) would come too late. The
``web`` spider therefore yields no link requests: it puts the links that
passed the URL filter into the item's ``links`` field, the pipelines before
this one judge the page (content-seen marks ``duplicate_of``), and this one

* runs AOPIC's credit assignment in the frontier: the page's cash moves to
  its history (exported as ``importance``), the tax to Lambda, the rest is
  split over every outlink, known or new, so waiting URLs move up;
* schedules the outlinks (``crawler.engine.crawl``) unless the page is a
  duplicate, skipping links it scheduled lately (the frontier's URL-seen test
  would refuse them anyway; the cache only saves building the requests);
* removes ``links`` from the item, so feeds hold only the count
  (``outlinks``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request

from extensions.urls.recent import RecentLinks
from extensions import defaults

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class LinkScheduler:
    """Credit and schedule the outlinks of a judged page."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.recent = RecentLinks(crawler.settings.getint("LINKS_RECENT_CACHE_SIZE"))
        self.follow_near = crawler.settings.getbool("CONTENTSEEN_FOLLOW_NEAR_DUPLICATES", defaults.CONTENTSEEN_FOLLOW_NEAR_DUPLICATES)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> LinkScheduler:
        return cls(crawler)

    def process_item(self, item: Any) -> Any:
        if "links" not in item.fields:
            return item
        links: list[str] = item.pop("links", None) or []
        if item.get("duplicate_of") or (item.get("near_duplicate_of") and not self.follow_near):
            self.stats.inc_value("links/not_followed_duplicate", len(links))
            links = []
        frontier = getattr(self.crawler.engine, "scheduler", None)
        if hasattr(frontier, "distribute") and item.get("url"):
            item["importance"] = frontier.distribute(item["url"], links)
        depth = int(item.get("depth") or 0) + 1
        referer = item.get("final_url") or item.get("url")
        crawl, fresh = self.crawler.engine.crawl, self.recent.fresh
        for url in links:
            if fresh(url, depth):
                crawl(Request(url, meta={"depth": depth}, headers={"Referer": referer}))
            else:
                self.stats.inc_value("links/recent_duplicates")
        return item
