"""Host yield: the windowed share of new content per host (numbers only), the
pipeline that feeds it from the content-seen verdicts and stops low-yield
hosts, and AOPIC's smaller payment from a low-yield host's pages."""

from __future__ import annotations

import math
from typing import Any

import pytest
from scrapy import Request
from twisted.internet.task import Clock

from crawler.items import PageItem
from extensions.aopic.ledger import AOPICLedger, tax_for_share
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.holds import LOW_YIELD
from extensions.pipelines.hostyield import HostYield, PageKind
from extensions.frontier.page import PageVerdict
from extensions.frontier.prioritizer import CashPrioritizer
from extensions.pipelines.hostyield import HostYieldPipeline, page_kind
from extensions.pipelines.links import verdict
from extensions.signals import origin_deferred
from tests.test_frontier_support import STORES, drain, make_frontier, opened_store
from tests.aopic_helpers import ledger_totals

NEW, OLD, ERROR = PageKind.NEW, PageKind.OLD, PageKind.ERROR


# -- the arithmetic ----------------------------------------------------------------
def test_a_host_without_pages_yields_everything() -> None:
    assert HostYield(window=10, threshold=0.4).share("a.test") == 1.0


def test_each_old_page_pushes_one_imaginary_new_page_out_of_the_window() -> None:
    tracker = HostYield(window=10, threshold=0.4)
    shares = [tracker.record("a.test", OLD).share for _ in range(5)]
    assert shares == pytest.approx([0.9, 0.8, 0.7, 0.6, 0.5])


def test_the_yield_is_the_share_of_new_pages_among_the_last_window() -> None:
    tracker = HostYield(window=4, threshold=0.0)
    for kind in (OLD, OLD, OLD, OLD, NEW, OLD, NEW):
        reading = tracker.record("a.test", kind)
    assert reading.share == 0.5  # O, N, O, N
    assert tracker.record("a.test", NEW).share == 0.75  # N, O, N, N


def test_the_host_stops_on_the_page_that_takes_it_below_the_threshold() -> None:
    tracker = HostYield(window=10, threshold=0.4)
    readings = [tracker.record("a.test", OLD) for _ in range(8)]
    assert [r.stopped_now for r in readings] == [False] * 6 + [True, False]
    assert [r.stopped for r in readings] == [False] * 6 + [True, True]
    assert readings[6].share == pytest.approx(0.3)


def test_a_stopped_host_stays_stopped_whatever_it_yields_later() -> None:
    tracker = HostYield(window=4, threshold=0.5)
    for _ in range(3):
        tracker.record("a.test", OLD)
    readings = [tracker.record("a.test", NEW) for _ in range(5)]
    assert all(r.stopped and not r.stopped_now for r in readings)
    assert readings[-1].share == 1.0


def test_a_host_at_half_new_pages_is_never_stopped_by_a_lower_threshold() -> None:
    tracker = HostYield(window=10, threshold=0.4)
    readings = [tracker.record("a.test", NEW if i % 2 else OLD) for i in range(1000)]
    assert not any(r.stopped for r in readings)
    assert min(r.share for r in readings) == 0.5


def test_errors_are_left_out_of_the_window() -> None:
    tracker = HostYield(window=10, threshold=0.4)
    for _ in range(9):  # broken links: fewer than a window in a row
        tracker.record("a.test", ERROR)
    assert tracker.record("a.test", NEW).share == 1.0
    for _ in range(9):
        tracker.record("a.test", ERROR)
    assert tracker.record("a.test", OLD).share == 0.9


def test_a_window_of_errors_in_a_row_empties_the_window() -> None:
    tracker = HostYield(window=10, threshold=0.4)
    readings = [tracker.record("a.test", ERROR) for _ in range(10)]
    assert not readings[8].stopped
    assert readings[9].share == 0.0 and readings[9].stopped_now


def test_hosts_are_judged_apart() -> None:
    tracker = HostYield(window=4, threshold=0.5)
    for _ in range(3):
        tracker.record("trap.test", OLD)
    assert tracker.record("docs.test", NEW).share == 1.0
    assert tracker.record("trap.test", OLD).stopped
    assert not tracker.record("docs.test", OLD).stopped


def test_a_threshold_of_zero_never_stops() -> None:
    tracker = HostYield(window=3, threshold=0.0)
    assert not any(tracker.record("a.test", OLD).stopped for _ in range(20))


def test_the_least_recently_seen_host_is_forgotten_when_memory_is_full() -> None:
    tracker = HostYield(window=4, threshold=0.5, max_hosts=2)
    tracker.record("a.test", OLD)
    tracker.record("b.test", OLD)
    tracker.record("a.test", OLD)  # a is the more recent now
    tracker.record("c.test", OLD)  # b goes
    assert sorted(tracker.hosts) == ["a.test", "c.test"]
    assert tracker.share("b.test") == 1.0 and tracker.share("a.test") == 0.5


@pytest.mark.parametrize(("window", "threshold", "max_hosts", "name"), [
    (0, 0.4, 10, "HOST_YIELD_WINDOW"), (10, 1.5, 10, "HOST_YIELD_THRESHOLD"),
    (10, -0.1, 10, "HOST_YIELD_THRESHOLD"), (10, 0.4, 0, "HOST_YIELD_MAX_HOSTS")])
def test_invalid_settings_are_refused_naming_the_setting(window: int, threshold: float, max_hosts: int,
                                                        name: str) -> None:
    with pytest.raises(ValueError, match=name):
        HostYield(window, threshold, max_hosts)


# -- the pipeline -------------------------------------------------------------------------
def page(url: str, status: int = 200, **fields: Any) -> PageItem:
    item = PageItem(url=url, status=status, **fields)
    if 200 <= status < 300 and "fingerprint" not in fields:
        item["fingerprint"] = "00000000000000aa"
    return item


class Signals:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, dict[str, Any]]] = []

    def send(self, signal: Any, **kwargs: Any) -> None:
        self.sent.append((signal, kwargs))


class Stats(dict):
    def inc_value(self, key: str, count: int = 1) -> None:
        self[key] = self.get(key, 0) + count


def pipeline(window: int = 10, threshold: float = 0.4) -> tuple[HostYieldPipeline, Signals, Stats]:
    signals, stats = Signals(), Stats()
    return HostYieldPipeline(HostYield(window, threshold), stats, signals.send), signals, stats


@pytest.mark.parametrize(("item", "kind"), [
    (page("http://a.test/"), NEW),
    (page("http://a.test/", duplicate_of="http://a.test/x"), OLD),
    (page("http://a.test/", near_duplicate_of="http://a.test/x"), OLD),
    (page("http://a.test/", 404), ERROR),
    (page("http://a.test/", 503), ERROR),
    (page("http://a.test/", 304, not_modified=True), None),  # a re-visit's 304: nothing new or old
    (page("http://a.test/", 302), None),
    (PageItem(url="http://a.test/", status=200), None),  # not judged by content-seen
])
def test_page_kind_follows_the_status_and_the_content_seen_verdict(item: PageItem, kind: PageKind | None) -> None:
    from itemadapter import ItemAdapter  # noqa: PLC0415
    assert page_kind(ItemAdapter(item)) is kind


def test_the_item_carries_its_hosts_yield_as_its_credit_share() -> None:
    yields, _, stats = pipeline()
    first = yields.process_item(page("http://a.test/1", near_duplicate_of="http://a.test/"))
    second = yields.process_item(page("http://a.test/2", duplicate_of="http://a.test/"))
    other = yields.process_item(page("http://b.test/1"))
    assert (first["credit_share"], second["credit_share"], other["credit_share"]) == (0.9, 0.8, 1.0)
    assert verdict(second, [], True, None).credit_share == 0.8  # what LinkScheduler hands the frontier
    assert stats == {"hostyield/old": 2, "hostyield/new": 1}


def test_a_low_yield_host_is_deferred_once_per_origin_with_reason_low_yield() -> None:
    yields, signals, stats = pipeline(window=10, threshold=0.4)
    for i in range(10):
        yields.process_item(page(f"http://app.test:8080/view?id={i}", near_duplicate_of="http://app.test:8080/"))
    yields.process_item(page("http://docs.test/"))
    yields.process_item(page("https://app.test/copy", duplicate_of="http://app.test:8080/"))  # another origin
    assert signals.sent == [(origin_deferred, {"origin": "http://app.test:8080", "reason": LOW_YIELD}),
                            (origin_deferred, {"origin": "https://app.test", "reason": LOW_YIELD})]
    assert LOW_YIELD == "low-yield"
    assert stats["hostyield/stopped_hosts"] == 1


def test_the_final_urls_host_is_judged_after_a_redirect() -> None:
    yields, signals, _ = pipeline(window=2, threshold=0.6)
    for i in range(2):
        yields.process_item(page(f"http://old.test/{i}", final_url=f"http://new.test/{i}", duplicate_of="x"))
    assert signals.sent == [(origin_deferred, {"origin": "http://new.test", "reason": LOW_YIELD})]


def test_items_that_say_nothing_are_passed_through_untouched() -> None:
    yields, signals, stats = pipeline()
    item = PageItem(url="http://a.test/", status=200)  # content-seen off: no fingerprint
    assert yields.process_item(item) is item and "credit_share" not in item
    assert not signals.sent and not stats


# -- AOPIC: a low-yield host's pages pass on less cash --------------------------------------------
def test_the_tax_for_a_share_leaves_the_outlinks_that_share() -> None:
    assert tax_for_share(0.1, 1.0) == pytest.approx(0.1)
    assert tax_for_share(0.1, 0.5) == pytest.approx(0.55)  # 0.45 of 0.9 passed on
    assert tax_for_share(0.1, 0.0) == pytest.approx(1.0)


@pytest.fixture(params=STORES)
def store(request: Any, tmp_path: Any) -> Any:
    yield from opened_store(request.param, tmp_path)


def test_a_page_passing_half_its_cash_gives_its_links_half_and_lambda_the_rest(store: Any) -> None:
    """On every store (the shared ledger's script included): a seed with 1.0
    and a credit share of 0.5 gives each of its 3 links 0.9 * 0.5 / 3; the
    other 0.55 goes to Lambda; the ledger stays conserved."""
    clock = Clock()
    frontier = make_frontier(store, clock, ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8))
    seed = Request("http://app.test/", meta={"is_start_request": True})
    frontier.enqueue_request(seed)
    fetched = frontier.next_request()
    frontier.fetch_finished(fetched, duration=0.0)
    links = [f"http://app.test/view?id={i}" for i in range(3)]
    done = frontier.page_done(PageVerdict(seed.url, links, credit_share=0.5))
    assert [done.credit[link][0] for link in links] == pytest.approx([0.15] * 3)
    assert [frontier.ledger.cash_of(url_fingerprint(link)[0]) for link in links] == pytest.approx([0.15] * 3)
    totals = ledger_totals(frontier.ledger)
    assert totals.lambda_cash == pytest.approx(0.55)
    assert math.isclose(totals.conserved, totals.put_in, rel_tol=1e-9)
    for link in links:
        frontier.enqueue_request(Request(link))
    assert sorted(url for _, url in drain(frontier, clock)) == links
