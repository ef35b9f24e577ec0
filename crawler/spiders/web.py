"""The ``web`` spider: fetch, hand each document to its processing modules,
follow the links they find.

``scrapy crawl web -a seeds=FILE_OR_URLS [-a allowed_domains=a.test,b.org]``

With ``-s FRONTIER_BACKEND=redis`` seeds may also be pushed to the running
crawl (``redis-cli lpush web:start_urls URL``, :mod:`extensions.backends.redis.seeds`),
and ``-a seeds`` may be left out: the process then waits for them.

The spider stays thin on purpose: what to do with a document is decided by
the processing modules registered for its MIME type (``PROCESSING_MODULES``), which
URLs may be crawled by the URL filter (``URL_FILTER_*``), and in which order
and how politely by the frontier (the scheduler).

Per document the spider yields one item carrying, besides its exported
fields, data for the item pipelines (internal fields, never exported; see
:mod:`crawler.items`): the content-seen test's features
(``content_features``, :mod:`extensions.processors.content_features`) and,
with ``LINKS_IN_ITEMS`` (the default, with the add-on's ``LinkScheduler``),
the accepted links (``links``), which the pipelines schedule after the
content-seen verdict. With ``LINKS_IN_ITEMS = False`` it yields the links as
requests itself, and nothing waits for the verdict.

Re-visits (:mod:`extensions.revisit.conditional`): the item of a 2xx carries
the response's validators (internal ``etag``, ``last_modified``) for the
frontier; a 304 Not Modified becomes an item with ``not_modified = True``
and nothing else of the page: no parsing, no processing modules, no content
features, no ``links`` (the frontier offers the page's stored outlinks).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timezone
from typing import Any

import scrapy
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.http import Response
from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.spidermiddlewares.metacopy import MetaCopyDetectionMiddleware
from scrapy.spidermiddlewares.urllength import UrlLengthMiddleware
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

from crawler.items import PageItem
from extensions.addon import placed_components
from extensions.backends import crawl_backend
from extensions.frontier.page import link_request
from extensions.processors.content_features import ContentFeatureExtractor
from extensions.processors.registry import ProcessorRegistry
from extensions.revisit.conditional import NOT_MODIFIED, response_validators
from extensions.signals import urls_refused
from extensions.urls.ascending import ancestors
from extensions.urls.canonical import InvalidURL, canonicalize, strip_params
from extensions.urls.filters import UrlFilter
from extensions.urls.recent import RecentLinks
from extensions.urls.seeds import SeedsError, iter_seed_lines
from extensions import defaults

logger = logging.getLogger(__name__)


def switch_off(settings: BaseSettings, name: str, components: list[type]) -> None:
    """Set each of ``components`` to None in the component dictionary
    ``name``, unless the project placed it there itself."""
    placed = placed_components(settings, name)
    middlewares = settings.getdict(name)
    middlewares.update({component: None for component in components if component not in placed})
    # at spider priority at least: the crawler runner merges its own (default
    # priority) dictionaries into the crawler's settings afterwards
    settings.set(name, middlewares, priority=max(settings.getpriority(name) or 0, SETTINGS_PRIORITIES["spider"]))


def split_list(value: str | list[str] | None) -> list[str]:
    """``"a.test, b.org"`` -> ``["a.test", "b.org"]``; lists pass through."""
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(",")
    return [part.strip().lower() for part in value if part and part.strip()]


class WebSpider(scrapy.Spider):
    """A general-purpose crawler spider driven by seeds and settings."""

    name = "web"

    def __init__(self, seeds: str | None = None, allowed_domains: Any = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.seeds = seeds  # the argument as given (a file name or URLs), as Scrapy keeps spider arguments
        # Read the seeds now, so that a missing file fails the crawl at start
        # with a non-zero exit instead of running an empty crawl.
        self.seed_lines: list[str] = list(iter_seed_lines(seeds)) if seeds else []
        self.allowed_domains: list[str] = split_list(allowed_domains)
        self.url_filter: UrlFilter | None = None
        self.processors: ProcessorRegistry | None = None
        self.content_features: ContentFeatureExtractor | None = None
        self.recent_links = RecentLinks(0)
        self.links_in_items = defaults.LINKS_IN_ITEMS
        self.path_ascending = False
        self.strip_names: frozenset[str] = frozenset()

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        """Scrapy's default spider middlewares that can change nothing this
        spider yields off (unless placed in ``SPIDER_MIDDLEWARES``): each
        wraps every page's output in one more async generator."""
        super().update_settings(settings)
        off: list[type] = []
        # UrlLengthMiddleware drops requests longer than URLLENGTH_LIMIT; every
        # request this spider yields (seeds, sitemap entries, links) passed its
        # URL filter, which refuses URLs longer than URL_FILTER_MAX_LENGTH, so
        # with that limit set and no larger it never drops one.
        max_length = settings.getint("URL_FILTER_MAX_LENGTH", defaults.URL_FILTER_MAX_LENGTH)
        if 0 < max_length <= settings.getint("URLLENGTH_LIMIT"):
            off.append(UrlLengthMiddleware)
        # MetaCopyDetectionMiddleware warns about requests built with a copy of
        # response.meta; this spider builds every request's meta itself.
        off.append(MetaCopyDetectionMiddleware)
        switch_off(settings, "SPIDER_MIDDLEWARES", off)

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> WebSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        if not spider.seed_lines and not crawl_backend(crawler).takes_pushed_seeds:
            raise SeedsError("seeds: missing; run `scrapy crawl web -a seeds=FILE_OR_URLS` "
                             "(or push them to Redis with -s FRONTIER_BACKEND=redis)")
        if not spider.allowed_domains:
            # Scrapy's OffsiteMiddleware lets every host through for a spider
            # without allowed_domains, at two URL parses per request. The
            # spider exists before Scrapy builds its middlewares and freezes
            # the settings, so the choice can be made here.
            switch_off(crawler.settings, "DOWNLOADER_MIDDLEWARES", [OffsiteMiddleware])
        # Scrapy builds the spider before add-ons apply their settings and
        # before stats exist; our components are built when the spider opens.
        crawler.signals.connect(spider.build_components, signals.spider_opened)
        return spider

    def build_components(self) -> None:
        """The URL filter, processing modules and content features, from the
        final settings."""
        settings = self.crawler.settings
        self.url_filter = UrlFilter.from_crawler(self.crawler)
        self.url_filter.set_allowed_domains(self.allowed_domains)
        self.processors = ProcessorRegistry.from_crawler(self.crawler)
        try:
            self.content_features = ContentFeatureExtractor.from_crawler(self.crawler)
        except NotConfigured:
            self.content_features = None
        self.recent_links = RecentLinks(settings.getint("LINKS_RECENT_CACHE_SIZE"))
        self.path_ascending = settings.getbool("LINKS_PATH_ASCENDING")
        self.strip_names = frozenset(
            name.lower() for name in settings.getlist("LINKS_STRIP_PARAMS", defaults.LINKS_STRIP_PARAMS))
        # the add-on checks that LinkScheduler is enabled exactly when this is on
        self.links_in_items = settings.getbool("LINKS_IN_ITEMS", defaults.LINKS_IN_ITEMS)

    async def start(self) -> AsyncIterator[Any]:
        for request in self.seed_requests():
            yield request

    def seed_requests(self) -> Iterator[scrapy.Request]:
        """Canonical, filtered seed requests; invalid seeds are counted and skipped."""
        stats = self.crawler.stats
        for raw in self.seed_lines:
            try:
                request = self.seed_request(raw, stats)
            except ValueError as err:
                stats.inc_value("seeds/invalid")
                logger.warning("Skipping invalid seed %r: %s", raw, err)
                continue
            if request is None:
                stats.inc_value("seeds/filtered")
                continue
            stats.inc_value("seeds/accepted")
            yield request

    def seed_request(self, raw: str, stats: Any) -> scrapy.Request | None:
        """The request for one seed, None if the URL filter refuses it;
        ValueError (InvalidURL) if it is not a URL."""
        url = canonicalize(raw)
        refused: list[tuple[str, str]] = []
        if self.url_filter.check(url, 0, stats, refused):
            return scrapy.Request(url)
        self.report_refused(refused)
        return None

    def parse(self, response: Response) -> Iterator[Any]:
        """One item per document; requests for the links its processors found."""
        if response.status == NOT_MODIFIED:
            yield self.not_modified_item(response)
            return
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1")
        links: list[str] = []
        processed: dict[str, Any] = {}
        features = None
        if 200 <= response.status < 300:
            mime = content_type.split(";", 1)[0].strip().lower()
            if self.content_features is not None:
                features = self.content_features.extract(response, mime)
            processed = self.processors.run(response, mime)
            links = processed.pop("links", [])
            if self.path_ascending:
                links = links + ancestors(response.url)
            if self.strip_names:
                names = self.strip_names
                links = [strip_params(url, names) if "?" in url or ";" in url else url for url in links]
        depth = response.meta.get("depth", 0)
        item = self.page_item(response, content_type, depth, len(links), processed)
        if features is not None:
            item["content_features"] = features  # judged by ContentSeenPipeline
        stats = self.crawler.stats
        refused: list[tuple[str, str]] = []
        accepted = [url for url in links if self.url_filter.check(url, depth + 1, stats, refused)]
        self.report_refused(refused)
        if self.links_in_items:
            item["links"] = accepted  # scheduled by LinkScheduler after the verdicts
            yield item
            return
        yield item
        recent = self.recent_links
        fresh = [url for url in accepted if recent.fresh(url, depth + 1)]
        if len(fresh) < len(accepted):  # counted once per page, not per link
            stats.inc_value("links/recent_duplicates", len(accepted) - len(fresh))
        for url in fresh:
            yield scrapy.Request(url)

    def report_refused(self, refused: list[tuple[str, str]]) -> None:
        """Tell the frontier which URLs the filter refused (it records them)."""
        if refused:
            self.crawler.signals.send_catch_log(urls_refused, refusals=refused)

    def sitemap_requests(self, urls: list[str], referer: str | None = None) -> Iterator[scrapy.Request]:
        """Requests for sitemaps (robots.txt ``Sitemap:`` lines, or a sitemap
        index's entries, ``referer`` its URL), as seeds."""
        for raw in urls:
            try:
                url = canonicalize(raw)
            except InvalidURL:
                self.crawler.stats.inc_value("sitemaps/invalid")
                continue
            refused: list[tuple[str, str]] = []
            if self.url_filter.check(url, 0, self.crawler.stats, refused):
                yield scrapy.Request(url, callback=self.parse_sitemap, meta={"depth": 0},
                                     headers={"Referer": referer} if referer else None)
            self.report_refused(refused)

    def parse_sitemap(self, response: Response) -> Iterator[Any]:
        """A sitemap or sitemap index (sitemaps.org, gzip allowed): its item,
        and requests for the URLs it lists (nested sitemaps to this method)."""
        if response.status == NOT_MODIFIED:
            yield self.not_modified_item(response)
            return
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1")
        body = response.body
        if body[:2] == b"\x1f\x8b":
            try:
                body = gunzip(body, max_size=self.crawler.settings.getint("DOWNLOAD_MAXSIZE"))
            except (OSError, ValueError):
                body = b""
        try:
            sitemap = Sitemap(body) if 200 <= response.status < 300 and body else None
        except Exception:  # noqa: BLE001 - malformed XML is a counted skip
            sitemap = None
        if sitemap is None:
            self.crawler.stats.inc_value("sitemaps/unparsable")
            yield self.page_item(response, content_type, 0, 0, {})
            return
        urls = [entry["loc"] for entry in sitemap if entry.get("loc")]
        self.crawler.stats.inc_value("sitemaps/parsed")
        yield self.page_item(response, content_type, 0, len(urls), {"sitemap": sitemap.type})
        if sitemap.type == "sitemapindex":
            yield from self.sitemap_requests(urls, response.url)
            return
        stats = self.crawler.stats
        refused: list[tuple[str, str]] = []
        for raw in urls:
            try:
                url = canonicalize(raw)
            except InvalidURL:
                stats.inc_value("sitemaps/invalid")
                continue
            if self.url_filter.check(url, 1, stats, refused) and self.recent_links.fresh(url, 1):
                yield link_request(url, 1, response.url)
        self.report_refused(refused)

    def page_item(
        self, response: Response, content_type: str, depth: int, outlinks: int,
        processed: dict[str, Any],
    ) -> PageItem:
        item = self.fetch_item(response, content_type, depth)
        item["outlinks"] = outlinks
        item["processed"] = processed
        if 200 <= response.status < 300:  # the frontier sends them back on the re-visit
            item["etag"], item["last_modified"] = response_validators(response.headers, self.crawler.stats)
        return item

    def not_modified_item(self, response: Response) -> PageItem:
        """The item of a 304: the page is as it was, so nothing is read from
        it; validators the 304 repeats are passed on (None: keep the stored ones)."""
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1")
        item = self.fetch_item(response, content_type, response.meta.get("depth", 0))
        item["not_modified"] = True
        item["etag"], item["last_modified"] = response_validators(response.headers, self.crawler.stats)
        return item

    @staticmethod
    def fetch_item(response: Response, content_type: str, depth: int) -> PageItem:
        """The fields every item has: what was fetched, when, from where."""
        request = response.request
        referer = request.headers.get(b"Referer") if request is not None else None
        first_url = response.meta.get("redirect_urls", [response.url])[0]
        return PageItem(
            url=first_url,
            final_url=response.url,
            status=response.status,
            content_type=content_type,
            length=len(response.body),
            fetched_at=datetime.now(timezone.utc).isoformat(timespec="milliseconds"),
            depth=depth,
            referer=referer.decode("latin-1") if referer else None,
        )
