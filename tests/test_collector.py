"""CollectorTuning: startup objects frozen out of the collector's walks and
larger generations for the crawl, put back when the engine stops; cyclic
garbage is still collected and counted."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from extensions.collector import CollectorTuning, parse_threshold


class Cycle:
    """An object that refers to itself: only the cyclic collector frees it."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture
def restored() -> Iterator[None]:
    """The process's collector state as it was, whatever a test left."""
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


def _tuning(threshold: tuple[int, int, int] = (5000, 7, 9), freeze: bool = True) -> CollectorTuning:
    return CollectorTuning(MemoryStatsCollector(get_crawler()), threshold, freeze)


def test_threshold_setting_is_three_positive_integers() -> None:
    assert parse_threshold([10000, 10, 10]) == (10000, 10, 10)
    assert parse_threshold("2000, 5,5") == (2000, 5, 5)
    for bad in ([1, 2], "a,b,c", [0, 10, 10], None, [1, 2, 3, 4]):
        with pytest.raises(ValueError, match="GC_THRESHOLD"):
            parse_threshold(bad)


def test_engine_start_freezes_and_sets_thresholds_and_stop_restores(restored: None) -> None:
    before = gc.get_threshold()
    tuning = _tuning()
    tuning.engine_started()
    assert gc.get_threshold() == (5000, 7, 9)
    frozen = gc.get_freeze_count()
    assert frozen > 1000  # the modules, classes and functions imported so far
    assert tuning.stats.get_value("gc/frozen") == frozen
    tuning.engine_stopped()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_cycles_made_during_the_crawl_are_still_collected_and_counted(restored: None) -> None:
    tuning = _tuning((1_000_000, 100, 100))  # no automatic collection during the test
    tuning.engine_started()
    for _ in range(100):
        Cycle()
    gc.collect(0)
    gc.collect()
    tuning.engine_stopped()
    stats = tuning.stats
    assert stats.get_value("gc/collections/0") == 1
    assert stats.get_value("gc/collections/2") == 1
    assert stats.get_value("gc/collected") >= 100
    gc.collect()  # after the engine stopped: not counted any more
    assert stats.get_value("gc/collections/2") == 1


def test_without_freeze_only_the_thresholds_change(restored: None) -> None:
    tuning = _tuning(freeze=False)
    tuning.engine_started()
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == (5000, 7, 9)
    tuning.engine_stopped()


def test_the_last_of_two_crawls_in_one_process_restores(restored: None) -> None:
    before = gc.get_threshold()
    first, second = _tuning(), _tuning((3000, 5, 5))
    first.engine_started()
    second.engine_started()
    first.engine_stopped()
    assert gc.get_threshold() == (3000, 5, 5)
    assert gc.get_freeze_count() > 0
    second.engine_stopped()
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_from_crawler_reads_the_settings_and_can_be_switched_off() -> None:
    from scrapy.exceptions import NotConfigured
    crawler = get_crawler(settings_dict={"GC_TUNING_ENABLED": True, "GC_THRESHOLD": "4000,10,10",
                                         "GC_FREEZE": False})
    tuning = CollectorTuning.from_crawler(crawler)
    assert (tuning.threshold, tuning.freeze) == ((4000, 10, 10), False)
    with pytest.raises(NotConfigured):
        CollectorTuning.from_crawler(get_crawler(settings_dict={"GC_TUNING_ENABLED": False}))
    with pytest.raises(ValueError, match="GC_THRESHOLD"):
        CollectorTuning.from_crawler(get_crawler(settings_dict={"GC_TUNING_ENABLED": True,
                                                                "GC_THRESHOLD": [10, 10]}))
