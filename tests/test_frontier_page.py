"""The frontier's entry points for other components, over both host
dispatches: the robots.txt signals (``robots_rules_parsed``,
``request_excluded``) and the page's verdict (``page_done``: AOPIC credit
on the link requests' meta, the content-seen group, no state kept between
``page_done`` and the links' ``enqueue_request``)."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.utils.test import get_crawler
from twisted.internet.task import Clock

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.codec import decode
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.page import PageVerdict, link_request
from extensions.frontier.politeness import Politeness
from extensions.frontier.prioritizer import CashPrioritizer
from extensions.frontier.scheduler import Frontier
from extensions.backends.redis.dispatch import SharedDispatch
from extensions.signals import request_excluded, robots_rules_parsed
from extensions.frontier.store import Status
from testweb.redisserver import shared_server, unique_prefix
from tests.test_frontier_support import STORES, drain, make_frontier, make_store, urls
from tests.aopic_helpers import ledger_totals


@pytest.fixture(params=STORES)
def store(request: Any, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


def fp_of(url: str) -> int:
    return url_fingerprint(url)[0]


# -- robots.txt signals ------------------------------------------------------------
def robots_fetched(frontier: Frontier, clock: Clock, host: str, took: float) -> Request:
    """The frontier hands out ``host``'s first page; the robots.txt
    middleware fetches the host's robots.txt first (``took`` seconds: not
    the frontier's request, it counts for the gap). The page, in flight."""
    page = frontier.next_request()
    assert page is not None and page.url.startswith(f"http://{host}/")
    clock.advance(took)
    robots = Request(f"http://{host}/robots.txt", meta={"download_latency": took})
    frontier.request_left_downloader(robots)
    return page


def test_robots_rules_parsed_makes_the_crawl_delay_the_hosts_and_answers_the_gap(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock, politeness=Politeness(delay=0.5))
    for request in urls("a.test", 3):
        frontier.enqueue_request(request)
    clock.advance(10.0)
    page = robots_fetched(frontier, clock, "a.test", 0.2)  # robots.txt ends at 10.2
    assert frontier.robots_rules_parsed("http://a.test", 3.0) == pytest.approx(3.0)
    assert store.hosts.crawl_delays() == {"a.test": 3.0}
    clock.advance(1.0)
    assert frontier.robots_rules_parsed("http://a.test", 3.0) == pytest.approx(2.0)  # 1 s of it gone
    clock.advance(2.0)  # the page waited the gap out, then was fetched
    frontier.fetch_finished(page, duration=0.0)
    starts = [t for t, _ in drain(frontier, clock, step=0.5)]
    assert starts == pytest.approx([16.2, 19.2])


def test_robots_rules_parsed_without_a_crawl_delay_leaves_the_usual_gap(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock, politeness=Politeness(delay=0.5))
    frontier.enqueue_request(Request("http://a.test/"))
    robots_fetched(frontier, clock, "a.test", 0.1)
    assert frontier.robots_rules_parsed("http://a.test", None) == pytest.approx(0.5)
    assert store.hosts.crawl_delays() == {}
    frontier.set_crawl_delay("a.test", 3.0)  # say an earlier robots.txt had one
    frontier.robots_rules_parsed("http://a.test", None)
    assert store.hosts.crawl_delays() == {}  # forgotten


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_the_robots_signals_reach_the_frontier_of_either_dispatch(backend: str) -> None:
    """Through the crawler's signals, as the robots.txt middleware sends
    them; with FRONTIER_BACKEND=redis the frontier composes the shared dispatch."""
    settings: dict[str, Any] = {"FRONTIER_BACKEND": backend, "DOWNLOAD_DELAY": 0.5,
                                "FRONTIER_CHECKPOINT_INTERVAL": 0}
    if backend == "redis":
        settings.update(REDIS_URL=shared_server().url, FRONTIER_REDIS_PREFIX=unique_prefix())
    crawler = get_crawler(Spider, settings)
    frontier = Frontier.from_crawler(crawler)
    assert isinstance(frontier.dispatch, SharedDispatch) == (backend == "redis")
    frontier.open(None)
    try:
        frontier.enqueue_request(Request("http://a.test/"))
        assert frontier.next_request() is not None or isinstance(frontier.dispatch, SharedDispatch)
        frontier.request_left_downloader(Request("http://a.test/robots.txt"))
        answers = crawler.signals.send_catch_log(robots_rules_parsed, origin="http://a.test", crawl_delay=2.0)
        assert [result for _, result in answers] == [pytest.approx(2.0, abs=0.1)]
        assert frontier.store.hosts.crawl_delays() == {"a.test": 2.0}
        frontier.enqueue_request(Request("http://a.test/private"))
        crawler.signals.send_catch_log(request_excluded, request=Request("http://a.test/private"),
                                       reason="robotstxt")
        # on Redis a finished URL's row goes (the URL-seen set keeps it seen): counted by status
        assert frontier.store.urls.count_by_status().get(Status.EXCLUDED) == 1
        assert frontier.store.urls.status_of(fp_of("http://a.test/private")) == \
            (None if backend == "redis" else Status.EXCLUDED)
        assert frontier.stats.get_value("frontier/excluded") == 1
    finally:
        frontier.close("finished")


def test_request_excluded_frees_the_host_at_once_and_marks_the_url(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock, politeness=Politeness(delay=5.0))
    for request in urls("a.test", 2):
        frontier.enqueue_request(request)
    forbidden = frontier.next_request()
    assert forbidden.url == "http://a.test/0"
    frontier.request_excluded(forbidden, "robotstxt")
    frontier.fetch_finished(forbidden, duration=0.0, ok=False)  # the middleware's IgnoreRequest
    following = frontier.next_request()
    assert following is not None and following.url == "http://a.test/1"  # no 5 s gap: nothing fetched
    assert clock.seconds() == 0.0
    if not getattr(store.urls, "trims", False):  # Redis in Bloom mode keeps no finished rows
        assert frontier.store.urls.status_of(fp_of("http://a.test/0")) == Status.EXCLUDED
    assert not frontier.enqueue_request(Request("http://a.test/0"))  # never filed again
    assert frontier.stats.get_value("frontier/excluded") == 1


# -- the page's verdict --------------------------------------------------------------
def aopic_frontier(store: Any, clock: Clock) -> Frontier:
    return make_frontier(store, clock, ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8))


def fetch_seed(frontier: Frontier, url: str = "http://a.test/") -> None:
    assert frontier.enqueue_request(Request(url, meta={"is_start_request": True}))
    request = frontier.next_request()
    assert request.url == url
    frontier.fetch_finished(request, duration=0.0)


def test_page_done_files_each_link_at_the_level_its_credit_earns(store: Any) -> None:
    clock = Clock()
    frontier = aopic_frontier(store, clock)
    fetch_seed(frontier)
    links = ["http://b.test/1", "http://b.test/2"]
    done = frontier.page_done(PageVerdict("http://a.test/", links))
    assert done.history == pytest.approx(1.0)
    assert set(done.credit) == set(links)
    ledger = frontier.ledger
    for link in links:
        cash, dividend = done.credit[link]
        assert cash == pytest.approx(ledger.cash_of(fp_of(link)))
        entry = frontier.store.urls.get_many([fp_of(link)])[fp_of(link)]
        assert frontier.store.urls.status_of(fp_of(link)) == Status.QUEUED
        assert entry.level == frontier.prioritizer.level(0, 1, {
            "aopic_cash": cash + ledger.dividend - dividend, "aopic_mean": ledger.mean_cash()})
        request = decode(entry, None)
        assert request.meta["depth"] == 1 and request.headers[b"Referer"] == b"http://a.test/"
        assert set(request.meta) <= {"depth", "is_start_request"}  # no credit stored with the URL
    assert frontier.stats.get_value("frontier/enqueued") == 3


def test_page_done_files_links_one_deeper_with_the_final_url_as_referer(store: Any) -> None:
    frontier = make_frontier(store, Clock())
    fetch_seed(frontier)
    frontier.page_done(PageVerdict("http://a.test/", ["http://b.test/1"], final_url="http://a.test/home",
                                   depth=3))
    request = frontier.next_request()
    assert request.url == "http://b.test/1"
    assert request.meta["depth"] == 4 and request.headers[b"Referer"] == b"http://a.test/home"


def test_page_done_announces_each_link_as_engine_crawl_does(store: Any) -> None:
    """request_scheduled for every link filed, request_dropped for one the
    URL-seen test refuses; a receiver raising IgnoreRequest keeps a link out."""
    from scrapy import signals  # noqa: PLC0415
    from scrapy.exceptions import IgnoreRequest  # noqa: PLC0415
    from twisted.python.failure import Failure  # noqa: PLC0415

    frontier = make_frontier(store, Clock())
    fetch_seed(frontier)
    sent: list[tuple[object, str]] = []

    def send(signal: object, request: Request, spider: object = None, dont_log: object = None) -> list:
        sent.append((signal, request.url))
        if signal is signals.request_scheduled and request.url.endswith("/ignored"):
            return [(None, Failure(IgnoreRequest()))]
        return []

    frontier.send = send
    frontier.page_done(PageVerdict("http://a.test/", ["http://b.test/1", "http://a.test/", "http://b.test/ignored"]))
    assert sent == [(signals.request_scheduled, "http://b.test/1"), (signals.request_scheduled, "http://a.test/"),
                    (signals.request_dropped, "http://a.test/"), (signals.request_scheduled, "http://b.test/ignored")]
    assert fp_of("http://b.test/ignored") not in frontier.store.urls.get_many([fp_of("http://b.test/ignored")])


def test_a_page_not_followed_credits_no_links_and_its_content_group_is_recorded(store: Any) -> None:
    clock = Clock()
    frontier = aopic_frontier(store, clock)
    fetch_seed(frontier)
    done = frontier.page_done(PageVerdict("http://a.test/", ["http://b.test/1"], follow=False,
                                          content_group=7, duplicate=True))
    assert done.credit == {}
    assert frontier.ledger.cash_of(fp_of("http://b.test/1")) is None
    assert done.history == pytest.approx(1.0)  # its own cash still goes to its history
    assert store.groups.content_group(fp_of("http://a.test/")) == 7
    frontier.page_done(PageVerdict("http://c.test/", content_group=None))  # no group: nothing written
    assert store.groups.content_group(fp_of("http://c.test/")) is None


def test_two_pages_give_each_link_its_own_pages_credit(store: Any) -> None:
    """A link enqueued from outside a page (a redirect target) is priced by
    its cash row; each page's links get their own page's credit."""
    clock = Clock()
    frontier = aopic_frontier(store, clock)
    fetch_seed(frontier, "http://a.test/")
    fetch_seed(frontier, "http://c.test/")
    assert frontier.enqueue_request(link_request("http://x.test/plain", 1, "http://a.test/"))
    assert frontier.ledger.cash_of(fp_of("http://x.test/plain")) is None
    first = frontier.page_done(PageVerdict("http://a.test/", ["http://b.test/1"]))
    second = frontier.page_done(PageVerdict("http://c.test/", ["http://d.test/1", "http://d.test/2"]))
    assert first.credit["http://b.test/1"][0] == pytest.approx(2 * second.credit["http://d.test/1"][0], rel=0.01)
    ledger = frontier.ledger
    for link, (cash, _) in (first.credit | second.credit).items():
        assert ledger.cash_of(fp_of(link)) == pytest.approx(cash)
    assert ledger_totals(ledger).put_in == pytest.approx(2 * ledger.initial_cash)
