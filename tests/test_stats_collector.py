"""The add-on's stats collector keeps Scrapy's values and warnings, without
Scrapy's per-call method wrapper."""

from __future__ import annotations

import warnings
from datetime import datetime, timezone

import pytest
from scrapy.exceptions import ScrapyDeprecationWarning
from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.misc import load_object
from scrapy.utils.test import get_crawler

from extensions.addon import WebcrawlerAddon
from extensions.stats import DirectStatsCollector


def exercise(stats: MemoryStatsCollector) -> dict[str, object]:
    """The same calls, in the same order, as the crawl's components make them."""
    stats.open_spider()
    started = datetime(2026, 1, 1, tzinfo=timezone.utc)
    stats.set_value("start_time", started)
    for count in (1, 1, 3):
        stats.inc_value("frontier/enqueued", count)
    stats.inc_value("links/recent_duplicates", 0)
    stats.inc_value("dns/ttl", 2, start=10)
    for value in (4, 9, 2):
        stats.max_value("request_depth_max", value)
        stats.min_value("depth/min", value)
    assert stats.get_value("absent", 7) == 7
    return dict(stats.get_stats())


def test_values_are_those_of_scrapys_memory_collector() -> None:
    ours = exercise(DirectStatsCollector(get_crawler()))
    assert ours == exercise(MemoryStatsCollector(get_crawler()))
    assert ours["frontier/enqueued"] == 5 and ours["dns/ttl"] == 12
    assert ours["request_depth_max"] == 9 and ours["depth/min"] == 2


def test_methods_are_not_wrapped_on_each_access() -> None:
    stats = DirectStatsCollector(get_crawler())
    # Scrapy's collector hands out a new wrapper object, cached on the instance
    assert stats.inc_value.__func__ is DirectStatsCollector.inc_value
    assert "_cached_inc_value" not in vars(stats)


def test_a_spider_argument_still_warns() -> None:
    stats = DirectStatsCollector(get_crawler())
    with pytest.warns(ScrapyDeprecationWarning, match="inc_value"):
        stats.inc_value("a", spider=object())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats.inc_value("a")
    assert stats.get_value("a") == 2


def addon_settings(**values: object) -> Settings:
    settings = Settings()
    settings.setdict(values, priority="project")
    WebcrawlerAddon().update_settings(settings)
    return settings


def test_the_addon_makes_it_the_crawls_collector_unless_the_project_chose_one() -> None:
    assert load_object(addon_settings()["STATS_CLASS"]) is DirectStatsCollector
    memory = "scrapy.statscollectors.MemoryStatsCollector"
    assert addon_settings(STATS_CLASS=memory)["STATS_CLASS"] == memory
