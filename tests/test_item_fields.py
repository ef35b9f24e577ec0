"""Internal item fields (data from the spider to the pipelines) never reach
a feed, and the add-on refuses a ``LINKS_IN_ITEMS`` that no pipeline honours."""

from __future__ import annotations

import logging

import pytest
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from crawler.items import PageItem
from extensions.addon import WebcrawlerAddon
from extensions.pipelines.internal import InternalFields, internal_fields

LINK_SCHEDULER = "extensions.pipelines.links.LinkScheduler"


def test_the_page_items_internal_fields_name_their_consumers() -> None:
    assert internal_fields(PageItem) == {
        "links": LINK_SCHEDULER,
        "content_features": "extensions.pipelines.contentseen.ContentSeenPipeline",
        "content_group": None,
        "etag": None,  # the frontier's, through LinkScheduler's PageVerdict
        "last_modified": None,
        "credit_share": None,  # the frontier's AOPIC step, through LinkScheduler's PageVerdict
    }
    assert internal_fields(dict) == {}


def test_internal_fields_left_are_removed_and_an_unconsumed_one_is_reported_once(
        caplog: pytest.LogCaptureFixture) -> None:
    crawler = get_crawler()
    crawler.stats.open_spider()
    last = InternalFields.from_crawler(crawler)
    with caplog.at_level(logging.ERROR):
        items = [last.process_item(PageItem(url=f"http://a.test/{n}", status=200, links=["http://b.test/"],
                                            content_group=3)) for n in range(2)]
    assert items == [PageItem(url=f"http://a.test/{n}", status=200) for n in range(2)]
    assert crawler.stats.get_value("items/unconsumed/links") == 2
    assert crawler.stats.get_value("items/unconsumed/content_group") is None  # nothing must consume it
    errors = [record.getMessage() for record in caplog.records]
    assert len(errors) == 1 and LINK_SCHEDULER in errors[0] and "'links'" in errors[0]


def test_an_item_with_only_exported_fields_passes_unchanged() -> None:
    crawler = get_crawler()
    crawler.stats.open_spider()
    item = PageItem(url="http://a.test/", status=200, duplicate_of="http://b.test/")
    assert InternalFields.from_crawler(crawler).process_item(item) == dict(item)
    assert crawler.stats.get_stats() == {}


def addon_settings(**values: object) -> Settings:
    settings = Settings()
    settings.setdict(values, priority="project")
    WebcrawlerAddon().update_settings(settings)
    return settings


def test_the_addon_enables_link_scheduling_and_the_last_pipeline_by_default() -> None:
    settings = addon_settings()
    pipelines = {getattr(key, "__module__", "") + "." + getattr(key, "__name__", str(key)): order
                 for key, order in settings.getdict("ITEM_PIPELINES").items()}
    assert settings.getbool("LINKS_IN_ITEMS")
    assert pipelines[LINK_SCHEDULER] < pipelines["extensions.pipelines.internal.InternalFields"]
    assert max(pipelines.values()) == pipelines["extensions.pipelines.internal.InternalFields"]


def test_the_spider_may_follow_links_itself_when_no_pipeline_schedules_them() -> None:
    settings = addon_settings(LINKS_IN_ITEMS=False, ITEM_PIPELINES={LINK_SCHEDULER: None})
    assert not settings.getbool("LINKS_IN_ITEMS")


@pytest.mark.parametrize("values", [
    {"ITEM_PIPELINES": {LINK_SCHEDULER: None}},
    {"LINKS_IN_ITEMS": False},
], ids=["links-in-items-without-scheduler", "scheduler-without-links-in-items"])
def test_links_in_items_disagreeing_with_the_pipelines_is_refused(values: dict[str, object]) -> None:
    with pytest.raises(ValueError, match=f"LINKS_IN_ITEMS.*{LINK_SCHEDULER}"):
        addon_settings(**values)
