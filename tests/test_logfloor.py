"""LogLevelFloor: the ``scrapy`` logger's level follows the lowest handler level
for the crawl, so per-page DEBUG calls build no record nobody emits."""

from __future__ import annotations

import logging
import pytest
from scrapy import signals
from scrapy.utils.test import get_crawler

from extensions.logfloor import LogLevelFloor, handler_floor


class Counting(logging.Handler):
    """A handler that keeps what it was given."""

    def __init__(self, level: int) -> None:
        super().__init__(level)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def isolated() -> tuple[logging.Logger, logging.Logger]:
    """A logging hierarchy of its own (root and 'scrapy'), so the test run's
    handlers (pytest attaches to the real root) do not count."""
    root = logging.RootLogger(logging.NOTSET)
    root.manager = logging.Manager(root)
    return root, root.manager.getLogger("scrapy")


def test_floor_is_the_lowest_level_of_the_handlers_records_reach(isolated: tuple[logging.Logger, logging.Logger]) -> None:
    root, child = isolated
    assert handler_floor(child) is None
    root.addHandler(Counting(logging.WARNING))
    root.addHandler(Counting(logging.INFO))
    assert handler_floor(child) == logging.INFO
    child.addHandler(Counting(logging.ERROR))
    assert handler_floor(child) == logging.INFO
    child.propagate = False  # the root's handlers are no longer reached
    assert handler_floor(child) == logging.ERROR


def test_debug_records_are_not_built_during_the_crawl_and_the_level_is_restored(
        isolated: tuple[logging.Logger, logging.Logger]) -> None:
    root, child = isolated
    handler = Counting(logging.INFO)
    root.addHandler(handler)
    built: list[str] = []
    child.addFilter(lambda record: built.append(record.getMessage()) or True)
    floor = LogLevelFloor(child)
    floor.engine_started()
    assert child.level == logging.INFO
    child.debug("Crawled (200) <GET http://a.test/>")
    child.info("Crawled 1 pages")
    assert built == ["Crawled 1 pages"]  # the DEBUG call built no record
    assert [r.getMessage() for r in handler.records] == ["Crawled 1 pages"]
    floor.engine_stopped()
    assert child.level == logging.NOTSET
    child.debug("after the crawl")
    assert built[-1] == "after the crawl"


def test_a_debug_handler_keeps_every_record(isolated: tuple[logging.Logger, logging.Logger]) -> None:
    root, child = isolated
    root.addHandler(Counting(logging.INFO))
    debug = Counting(logging.DEBUG)
    root.addHandler(debug)
    floor = LogLevelFloor(child)
    floor.engine_started()
    child.debug("Crawled (200) <GET http://a.test/>")
    assert [r.getMessage() for r in debug.records] == ["Crawled (200) <GET http://a.test/>"]
    floor.engine_stopped()
    assert child.level == logging.NOTSET


def test_connected_to_the_engine_signals_by_from_crawler() -> None:
    crawler = get_crawler(settings_dict={"LOG_LEVEL": "INFO"})
    floor = LogLevelFloor.from_crawler(crawler)
    scrapy_logger = logging.getLogger("scrapy")
    before = scrapy_logger.level
    handler = Counting(logging.WARNING)
    saved_handlers, logging.root.handlers = logging.root.handlers, [handler]
    saved_level = logging.root.level
    logging.root.setLevel(logging.NOTSET)  # as Scrapy's root handler leaves it
    try:
        crawler.signals.send_catch_log(signals.engine_started)
        assert scrapy_logger.level == logging.WARNING
        crawler.signals.send_catch_log(signals.engine_stopped)
        assert scrapy_logger.level == before
    finally:
        logging.root.handlers = saved_handlers
        logging.root.setLevel(saved_level)
    assert floor.saved is None
