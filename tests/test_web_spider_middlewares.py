"""The web spider switches off the two Scrapy spider middlewares that can
change nothing it yields, and only those, only when that holds."""

from __future__ import annotations

from typing import Any

from scrapy.crawler import Crawler, CrawlerRunner
from scrapy.spidermiddlewares.depth import DepthMiddleware
from scrapy.spidermiddlewares.metacopy import MetaCopyDetectionMiddleware
from scrapy.spidermiddlewares.referer import RefererMiddleware
from scrapy.spidermiddlewares.urllength import UrlLengthMiddleware
from scrapy.utils.misc import load_object
from scrapy.settings import Settings

from crawler.spiders.web import WebSpider
from extensions.addon import WebcrawlerAddon


def spider_middlewares(**values: Any) -> dict[type, int | None]:
    # the project's settings module, without get_project_settings(): that sets
    # SCRAPY_SETTINGS_MODULE in os.environ, which later tests' subprocesses inherit
    settings = Settings()
    settings.setmodule("crawler.settings", priority="project")
    settings.setdict(values, priority="cmdline")
    # as `scrapy crawl` builds it: the runner merges its settings in afterwards
    crawler = CrawlerRunner(settings).create_crawler(Crawler(WebSpider, settings))
    merged = crawler.settings.get_component_priority_dict_with_base("SPIDER_MIDDLEWARES")
    return {load_object(path): order for path, order in merged.items()}


def enabled(**values: Any) -> set[type]:
    return {cls for cls, order in spider_middlewares(**values).items() if order is not None}


def test_url_length_and_meta_copy_are_off_and_depth_and_referer_stay_on() -> None:
    """Scrapy's Depth and Referer middlewares stay on (the Referer middleware
    also gives a redirect its Referer); the two that change nothing are off."""
    assert not {UrlLengthMiddleware, MetaCopyDetectionMiddleware} & enabled()
    assert {DepthMiddleware, RefererMiddleware} <= enabled()
    assert {DepthMiddleware, RefererMiddleware} <= enabled(LINKS_IN_ITEMS=False)


def test_url_length_stays_when_its_limit_is_below_the_url_filters() -> None:
    assert spider_middlewares(URLLENGTH_LIMIT=100)[UrlLengthMiddleware] is not None
    assert spider_middlewares(URL_FILTER_MAX_LENGTH=0)[UrlLengthMiddleware] is not None


def test_a_project_that_places_them_keeps_its_choice() -> None:
    placed = spider_middlewares(SPIDER_MIDDLEWARES={
        "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": 800,
        "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": 1000})
    assert placed[UrlLengthMiddleware] == 800 and placed[MetaCopyDetectionMiddleware] == 1000


def crawler_settings(**values: Any) -> Settings:
    """The project's settings with the add-on applied, as at a crawl's start."""
    settings = Settings()
    settings.setmodule("crawler.settings", priority="project")
    settings.setdict(values, priority="cmdline")
    WebcrawlerAddon().update_settings(settings)
    return settings


def test_scrapys_remote_control_server_is_off_unless_asked_for() -> None:
    """RemoteControl runs Python code sent over HTTP inside the crawl: off, as
    the telnet console is; ``-s REMOTE_CONTROL_ENABLED=True`` turns it on."""
    assert crawler_settings().getbool("REMOTE_CONTROL_ENABLED") is False
    assert crawler_settings(REMOTE_CONTROL_ENABLED=True).getbool("REMOTE_CONTROL_ENABLED") is True


def downloader_middlewares(**values: Any) -> dict[type, int | None]:
    merged = crawler_settings(**values).get_component_priority_dict_with_base("DOWNLOADER_MIDDLEWARES")
    return {load_object(path) if isinstance(path, str) else path: order for path, order in merged.items()}


def test_our_meta_refresh_takes_scrapys_place_unless_the_project_placed_scrapys() -> None:
    from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware as Scrapys
    from extensions.metarefresh import MetaRefreshMiddleware as Ours
    default = downloader_middlewares()
    assert default[Ours] == 580 and default.get(Scrapys) is None  # None: left out of the merged dict
    scrapys = "scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware"
    off = downloader_middlewares(DOWNLOADER_MIDDLEWARES={scrapys: None})  # meta refresh switched off
    assert off.get(Scrapys) is None and off.get(Ours) is None
    moved = downloader_middlewares(DOWNLOADER_MIDDLEWARES={scrapys: 650})
    assert moved[Scrapys] == 650 and moved.get(Ours) is None
