"""The frontier crawling continuously: due URLs come back, over every store
and both host dispatches, with a clock the test drives."""

from __future__ import annotations

import math
from typing import Any

import pytest
from scrapy import Request
from twisted.internet.task import Clock

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.gauges import DictStats
from extensions.frontier.page import PageVerdict
from extensions.frontier.politeness import Politeness
from extensions.frontier.prioritizer import CashPrioritizer
from extensions.frontier.revisits import RevisitSchedule
from extensions.frontier.scheduler import Frontier
from extensions.revisit.policy import RevisitPolicy
from tests.test_frontier_support import STORES, make_frontier, make_store, reopen_store

INITIAL, MINIMUM, MAXIMUM = 10.0, 5.0, 40.0
EPOCH = 1_700_000_000.0  # make_frontier's wall clock is this plus the test clock


@pytest.fixture(params=STORES)
def store(request: Any, tmp_path: Any) -> Any:
    if request.param.endswith("-bloom"):
        pytest.skip("a Redis Bloom-mode store drops finished URL rows: no continuous crawl on it "
                    "(refused at start, test_continuous_crawl_refuses_a_store_that_drops_rows)")
    return make_store(request.param, tmp_path, keep_rows=True)  # a continuous crawl keeps finished rows


def continuous(store: Any, clock: Clock, max_share: float = 1.0, **kwargs: Any) -> Frontier:
    stats = DictStats()
    policy = RevisitPolicy(INITIAL, MINIMUM, MAXIMUM, gone_after=2, schedule="adaptive")
    schedule = RevisitSchedule(store, policy, stats, max_share=max_share)
    return make_frontier(store, clock, stats=stats, revisit_schedule=schedule, **kwargs)


def fetch(frontier: Frontier, clock: Clock, verdict: dict[str, Any] | None = None,
          limit: int = 400) -> Request | None:
    """The next request the frontier hands out (advancing the clock in
    small steps up to ``limit`` times), fetched and judged with ``verdict``."""
    for _ in range(limit):
        request = frontier.next_request()
        if request is not None:
            frontier.fetch_finished(request, duration=0.0)
            frontier.page_done(PageVerdict(request.url, **(verdict or {})))
            return request
        clock.advance(0.25)
    return None


def record(store: Any, url: str) -> Any:
    fp, _ = url_fingerprint(url)
    return store.revisits.get([fp])[fp]


def test_a_fetched_page_comes_back_when_due_with_its_validators(store: Any) -> None:
    clock = Clock()
    frontier = continuous(store, clock)
    frontier.enqueue_request(Request("http://a.test/", meta={"is_start_request": True}))
    first = fetch(frontier, clock, {"etag": '"v1"', "last_modified": "Tue, 24 Nov 2026 07:00:00 GMT", "content": 7})
    assert first is not None and "revisit_validators" not in first.meta
    assert record(store, "http://a.test/").due == pytest.approx(EPOCH + clock.seconds() + INITIAL)
    assert frontier.has_pending_requests()  # nothing queued, but a URL is due again
    assert frontier.next_request() is None  # not before its time
    again = fetch(frontier, clock, {"status": 304, "not_modified": True})
    assert again is not None and again.url == "http://a.test/"
    assert clock.seconds() >= INITIAL
    assert again.meta["revisit_validators"] == {"etag": '"v1"', "last_modified": "Tue, 24 Nov 2026 07:00:00 GMT"}
    assert frontier.stats.get_value("revisit/due") == 1
    assert frontier.stats.get_value("revisit/unchanged") == 1
    assert frontier.stats.get_value("revisit/scheduled") == 1  # the gauges ran while it pumped
    assert 0.0 <= frontier.stats.get_value("revisit/freshness") <= 1.0
    frontier.close("finished")


def test_a_304_offers_the_links_stored_at_the_last_200(store: Any) -> None:
    clock = Clock()
    frontier = continuous(store, clock)
    links = ["http://a.test/b", "http://c.test/"]
    frontier.enqueue_request(Request("http://a.test/", meta={"is_start_request": True}))
    fetch(frontier, clock, {"links": links, "content": 1})
    for link in links:  # the link requests the pipeline makes: rows in the URL database
        frontier.enqueue_request(Request(link))
    for _ in range(10):  # the links, then a.test/ again when due
        for _ in range(400):
            request = frontier.next_request()
            if request is not None:
                break
            clock.advance(0.25)
        assert request is not None
        frontier.fetch_finished(request, duration=0.0)
        if request.url == "http://a.test/":
            break
        frontier.page_done(PageVerdict(request.url, content=1))
    assert request.url == "http://a.test/"
    done = frontier.page_done(PageVerdict("http://a.test/", status=304, not_modified=True))
    assert done.links == links
    frontier.close("finished")


def test_a_change_shortens_the_interval_and_no_change_lengthens_it(store: Any) -> None:
    clock = Clock()
    frontier = continuous(store, clock)
    frontier.enqueue_request(Request("http://a.test/", meta={"is_start_request": True}))
    fetch(frontier, clock, {"content": 1})
    fetch(frontier, clock, {"content": 2})  # changed
    changed = record(store, "http://a.test/")
    fetch(frontier, clock, {"status": 304, "not_modified": True})
    unchanged = record(store, "http://a.test/")
    assert changed.interval < INITIAL < unchanged.interval
    assert (changed.changes, unchanged.changes, unchanged.visits) == (1, 1, 3)
    assert frontier.stats.get_value("revisit/changed") == 1
    frontier.close("finished")


def test_a_page_that_answers_404_twice_after_a_200_is_given_up(store: Any) -> None:
    clock = Clock()
    frontier = continuous(store, clock)
    frontier.enqueue_request(Request("http://a.test/", meta={"is_start_request": True}))
    fetch(frontier, clock, {"content": 1})
    fetch(frontier, clock, {"status": 404})
    assert frontier.has_pending_requests()  # a first 404 is checked again
    fetch(frontier, clock, {"status": 404})
    gone = record(store, "http://a.test/")
    assert gone.gone == 2 and math.isinf(gone.due)
    assert frontier.stats.get_value("revisit/gone") == 1
    clock.advance(MAXIMUM * 2)
    assert frontier.next_request() is None and not frontier.has_pending_requests()
    frontier.close("finished")


def test_revisits_take_at_most_their_share_of_fetches_while_new_urls_wait(store: Any) -> None:
    clock = Clock()
    frontier = continuous(store, clock, max_share=0.25, back_queues=64)
    for i in range(20):
        frontier.enqueue_request(Request(f"http://h{i}.test/", meta={"is_start_request": True}))
    for _ in range(20):
        fetch(frontier, clock, {"content": 1})
    clock.advance(INITIAL * 2)  # all twenty are due again
    for i in range(60):  # found deeper: below the re-visits' level, which would go first uncapped
        frontier.enqueue_request(Request(f"http://n{i}.test/", meta={"depth": 3}))
    handed = [fetch(frontier, clock, {"content": 1}) for _ in range(40)]
    revisits = sum(1 for request in handed if request is not None and "h" in request.url.split("//")[1][:1])
    assert 0 < revisits <= 0.25 * (20 + 40) + 1  # a share of every fetch of the run
    frontier.close("finished")


def test_due_times_survive_a_restart(store: Any) -> None:
    clock = Clock()
    fresh = reopen_store(store)
    frontier = continuous(store, clock)
    frontier.enqueue_request(Request("http://a.test/", meta={"is_start_request": True}))
    fetch(frontier, clock, {"etag": '"v1"', "content": 1})
    frontier.close("shutdown")
    again = continuous(fresh, clock)
    assert again.has_pending_requests()
    request = fetch(again, clock, {"status": 304, "not_modified": True})
    assert request is not None and request.url == "http://a.test/"
    assert request.meta["revisit_validators"]["etag"] == '"v1"'
    again.close("shutdown")


def test_without_revisits_a_finished_crawl_has_nothing_pending(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock)
    frontier.enqueue_request(Request("http://a.test/", meta={"is_start_request": True}))
    fetch(frontier, clock, {"content": 1})
    assert frontier.revisits is None and store.revisits.counts().records == 0
    frontier.close("finished")


def test_continuous_crawl_refuses_a_store_that_drops_rows() -> None:
    from scrapy.utils.test import get_crawler  # noqa: PLC0415

    from extensions.frontier.config import frontier_kwargs  # noqa: PLC0415

    crawler = get_crawler(settings_dict={"REVISIT_ENABLED": True, "FRONTIER_BACKEND": "redis",
                                         "FRONTIER_SEEN_BACKEND": "bloom", "REDIS_URL": "redis://127.0.0.1:1/0"})
    with pytest.raises(ValueError, match="REVISIT_ENABLED.*FRONTIER_SEEN_BACKEND"):
        frontier_kwargs(crawler)


def test_a_redirect_is_revisited_so_a_new_location_is_followed(store: Any) -> None:
    """A 301 has no item and no verdict; it is due again all the same (was:
    never re-visited, so a Location that changed was never seen)."""
    from scrapy.http import Response  # noqa: PLC0415

    clock = Clock()
    frontier = continuous(store, clock)
    frontier.enqueue_request(Request("http://a.test/old", meta={"is_start_request": True}))
    request = frontier.next_request()
    assert request is not None
    frontier.response_received(Response(request.url, status=301, headers={"Location": "/new"}, request=request),
                               request)
    frontier.fetch_finished(request, duration=0.0)
    assert record(store, "http://a.test/old").due == pytest.approx(EPOCH + clock.seconds() + INITIAL)
    again = fetch(frontier, clock, {"content": 1})
    assert again is not None and again.url == "http://a.test/old"
    frontier.close("finished")


@pytest.mark.parametrize("aopic", [False, True], ids=["depth-levels", "aopic-levels"])
def test_a_changed_page_is_fetched_again_within_its_interval_while_its_host_has_a_backlog(
        store: Any, aopic: bool) -> None:
    """A page is due again ``INITIAL`` seconds after its fetch; meanwhile its
    host has 200 new URLs queued (one fetch a second). Re-visits are
    rationed (``REVISIT_MAX_SHARE``) and let out stalest first, and one let
    out is its host's next fetch: the page comes back within its interval,
    not after the host's backlog (was: filed behind it, 200 s late)."""
    clock = Clock()
    ranking = {"ledger": AOPICLedger(store), "prioritizer": CashPrioritizer(8)} if aopic else {}
    frontier = continuous(store, clock, max_share=0.5, politeness=Politeness(delay=1.0), **ranking)
    frontier.enqueue_request(Request("http://a.test/", meta={"is_start_request": True}))
    fetch(frontier, clock, {"content": 1})
    changed_at = clock.seconds()  # the page changes on the server right after its fetch
    for i in range(200):
        frontier.enqueue_request(Request(f"http://a.test/new/{i}", meta={"depth": 1}))
    fetched: list[tuple[float, str]] = []
    while len(fetched) < 40 and not any(url == "http://a.test/" for _, url in fetched):
        request = fetch(frontier, clock, {"content": 2})
        assert request is not None
        fetched.append((clock.seconds(), request.url))
    again = [at for at, url in fetched if url == "http://a.test/"]
    assert again and again[0] <= changed_at + INITIAL + 1.0, fetched[:15]
    assert record(store, "http://a.test/").changes == 1  # the change was seen
    frontier.close("finished")


def test_revisits_queued_by_an_earlier_run_do_not_hold_back_the_next_ones(store: Any) -> None:
    """A restart hands out the re-visits the last run had queued without
    letting them out again; the URLs due after them keep coming back (was:
    the share's count of waiting re-visits went negative and let one out,
    then none)."""
    clock = Clock()
    fresh = reopen_store(store)
    frontier = continuous(store, clock, max_share=0.5)
    pages = {f"http://{name}.test/" for name in "abc"}
    for url in sorted(pages):
        frontier.enqueue_request(Request(url, meta={"is_start_request": True}))
    for _ in pages:
        fetch(frontier, clock, {"content": 1})
    clock.advance(INITIAL * 2)
    assert frontier.next_request() is not None  # a re-visit in flight when the run stops
    frontier.close("shutdown")
    again = continuous(fresh, clock, max_share=0.5)
    for _ in range(3):  # the queued re-visits, then two more rounds
        fetched = [fetch(again, clock, {"content": 1}) for _ in pages]
        assert {request.url for request in fetched if request is not None} == pages
    again.close("shutdown")


def test_a_host_stopped_for_low_yield_is_still_revisited_but_not_explored(store: Any) -> None:
    """Host yield stops a host's exploration: its new URLs are deferred, its
    fetched pages still come back when due; another deferral stops both."""
    clock = Clock()
    frontier = continuous(store, clock)
    for host in ("a", "b"):
        frontier.enqueue_request(Request(f"http://{host}.test/", meta={"is_start_request": True}))
    assert {fetch(frontier, clock).url, fetch(frontier, clock).url} == {"http://a.test/", "http://b.test/"}
    frontier.origin_deferred("http://a.test", "low-yield")
    frontier.origin_deferred("http://b.test", "unreachable")
    for host in ("a", "b"):
        frontier.enqueue_request(Request(f"http://{host}.test/new"))
    fetched = []
    for _ in range(4):
        request = fetch(frontier, clock)
        if request is None:
            break
        fetched.append(request.url)
        clock.advance(INITIAL)
    assert "http://a.test/" in fetched  # re-visited after the stop
    assert "http://a.test/new" not in fetched and "http://b.test/new" not in fetched
    assert "http://b.test/" not in fetched  # a deferral for another reason defers its re-visits too
    frontier.close("finished")
