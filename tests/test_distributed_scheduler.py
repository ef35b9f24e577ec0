"""The shared frontier (:class:`~tests.redis_helpers.DistributedFrontier`)
as a drop-in Scrapy scheduler, as the single-process one is
(``tests/test_frontier_holds.py``): it never raises on a request Scrapy
accepts, hands out what it cannot file, schedules every retry (seeds
included) and fetches each identical ``dont_filter`` request, while a seed
another process (or an earlier run) filed is still fetched once.

Each test drives the frontier directly with a fake clock against a real
redis-server, on both URL-seen backends (the exact set and the Bloom filter).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from scrapy import Request
from twisted.internet.task import Clock

from tests.redis_helpers import DistributedFrontier
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.politeness import Politeness
from extensions.frontier.store import Status
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.bloom import BloomLayout
from extensions.backends.redis.fpset import FingerprintSetLayout
from testweb.redisserver import shared_server, unique_prefix
from tests.aopic_helpers import ledger_totals

SEED = {"is_start_request": True}


@pytest.fixture(params=["exact", "bloom"])
def store_args(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Arguments of a fresh crawl's RedisStore (a new prefix per test)."""
    seen = BloomLayout(1_000_000, 1e-6) if request.param == "bloom" else FingerprintSetLayout()
    return {"url": shared_server().url, "prefix": unique_prefix(), "seen": seen}


def shared_frontier(store_args: dict[str, Any], clock: Clock) -> DistributedFrontier:
    """One crawler process's frontier, open, on the crawl of ``store_args``."""
    frontier = DistributedFrontier(RedisStore(**store_args), clock=clock.seconds, politeness=Politeness(),
                                   back_queues=4, queue_buffer=8, call_later=clock.callLater,
                                   wake=lambda: None)
    frontier.open(None)
    return frontier


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def frontier(store_args: dict[str, Any], clock: Clock) -> Iterator[DistributedFrontier]:
    frontier = shared_frontier(store_args, clock)
    try:
        yield frontier
    finally:
        frontier.close("finished")


def fetch_all(frontiers: list[DistributedFrontier], clock: Clock, limit: int = 1000) -> list[str]:
    """Hand out and finish (successfully) everything the processes'
    frontiers have; the URLs handed out, in order."""
    fetched: list[str] = []
    for _ in range(limit):
        requests = [(frontier, frontier.next_request()) for frontier in frontiers]
        for frontier, request in requests:
            if request is not None:
                fetched.append(request.url)
                frontier.fetch_finished(request, duration=0.0, ok=True)
        if all(request is None for _, request in requests):
            if not any(frontier.has_pending_requests() for frontier in frontiers):
                return fetched
            clock.advance(1.0)
    raise AssertionError("the frontiers never ran out of work")


def status(frontier: DistributedFrontier, url: str) -> Status | None:
    return frontier.store.urls.status_of(url_fingerprint(url)[0])


# -- requests the frontier cannot file -----------------------------------------
@pytest.mark.parametrize("url", ["data:,hello", "about:blank"])
def test_a_url_the_shared_frontier_cannot_file_is_handed_out_unfiled(frontier: DistributedFrontier,
                                                                      url: str) -> None:
    """Was: ``InvalidURL`` out of ``enqueue_request``, which ended the
    engine's start-request processing (Scrapy's test_start_unsupported_output)."""
    request = Request(url)
    assert frontier.enqueue_request(request)
    assert frontier.has_pending_requests() and len(frontier) == 1
    assert frontier.next_request() is request
    assert frontier.stats.get_value("frontier/unfiled") == 1
    assert not frontier.has_pending_requests() and len(frontier) == 0


def test_an_unfiled_request_goes_out_before_queued_ones(frontier: DistributedFrontier) -> None:
    assert frontier.enqueue_request(Request("http://a.test/"))
    data = Request("data:,x")
    assert frontier.enqueue_request(data)
    first = frontier.next_request()
    assert first is data  # at once, before any host is taken
    assert frontier.next_request().url == "http://a.test/"


# -- retries -------------------------------------------------------------------------
def retry_of(request: Request) -> Request:
    """What Scrapy's RetryMiddleware hands back: a copy that keeps the meta
    (``is_start_request`` too), with ``dont_filter`` and ``retry_times``."""
    retry = request.replace(dont_filter=True)
    retry.meta["retry_times"] = retry.meta.get("retry_times", 0) + 1
    return retry


def test_a_retried_start_request_is_fetched_again(frontier: DistributedFrontier, clock: Clock) -> None:
    """The retry arrives while the first attempt is still in flight (the
    engine schedules it before it lets the first go). Was: dropped as a
    duplicate (the retry keeps ``is_start_request``), so a seed that failed
    once was never fetched again and its errback never ran."""
    assert frontier.enqueue_request(Request("http://a.test/", dont_filter=True, meta=dict(SEED)))
    first = frontier.next_request()
    assert frontier.enqueue_request(retry_of(first))
    frontier.fetch_finished(first, duration=0.0, ok=False)
    again = fetch_all([frontier], clock)
    assert again == ["http://a.test/"]
    assert status(frontier, "http://a.test/") in (Status.DONE, None)  # None: trimmed (Bloom)


def test_every_retry_of_a_start_request_is_fetched(frontier: DistributedFrontier, clock: Clock) -> None:
    assert frontier.enqueue_request(Request("http://a.test/", meta=dict(SEED)))
    attempts = 0
    request = frontier.next_request()
    while request is not None and attempts < 3:  # RETRY_TIMES = 2: three attempts
        attempts += 1
        if attempts < 3:
            assert frontier.enqueue_request(retry_of(request))
        frontier.fetch_finished(request, duration=0.0, ok=False)
        clock.advance(1.0)
        request = frontier.next_request()
    assert attempts == 3 and request is None
    assert not frontier.has_pending_requests()


def test_a_retry_that_arrives_after_its_attempt_finished_is_fetched(frontier: DistributedFrontier,
                                                                   clock: Clock) -> None:
    assert frontier.enqueue_request(Request("http://a.test/", meta=dict(SEED)))
    first = frontier.next_request()
    frontier.fetch_finished(first, duration=0.0, ok=False)
    assert frontier.enqueue_request(retry_of(first))
    assert fetch_all([frontier], clock) == ["http://a.test/"]


# -- identical dont_filter requests, seeds of other processes and runs -------------
def test_identical_dont_filter_start_requests_are_each_fetched(frontier: DistributedFrontier, clock: Clock) -> None:
    """Scrapy's test_start_dupes: six identical seeds with ``dont_filter``
    are six fetches. Was: one (the URL-seen test for seeds; then, with that
    bypassed, one entry of the host's sorted set for the six)."""
    for _ in range(6):
        assert frontier.enqueue_request(Request("http://a.test/", dont_filter=True, meta=dict(SEED)))
    assert fetch_all([frontier], clock) == ["http://a.test/"] * 6
    assert frontier.stats.get_value("frontier/dont_filter_copies") == 5


def test_identical_dont_filter_requests_queued_at_once_are_each_fetched(frontier: DistributedFrontier,
                                                                       clock: Clock) -> None:
    """Scrapy's test_async_def_asyncio_parse_reqs_list: a callback returns
    the same ``dont_filter`` request several times."""
    for _ in range(3):
        assert frontier.enqueue_request(Request("http://a.test/page", dont_filter=True))
    assert fetch_all([frontier], clock) == ["http://a.test/page"] * 3


def test_a_seed_filed_by_another_process_is_fetched_once(store_args: dict[str, Any]) -> None:
    """Every process of a crawl reads the same seeds (``dont_filter`` start
    requests): only the first to file one fetches it."""
    clock = Clock()
    processes = [shared_frontier(store_args, clock) for _ in range(3)]
    try:
        for frontier in processes:
            for path in ("a", "b"):
                frontier.enqueue_request(Request(f"http://h.test/{path}", dont_filter=True, meta=dict(SEED)))
        assert sorted(fetch_all(processes, clock)) == ["http://h.test/a", "http://h.test/b"]
    finally:
        for frontier in processes:
            frontier.close("finished")


def test_start_requests_of_an_earlier_run_are_not_fetched_again(store_args: dict[str, Any]) -> None:
    clock = Clock()
    first = shared_frontier(store_args, clock)
    assert first.enqueue_request(Request("http://a.test/", dont_filter=True, meta=dict(SEED)))
    assert fetch_all([first], clock) == ["http://a.test/"]
    first.close("finished")  # the store persists by default (SCHEDULER_PERSIST)
    again = shared_frontier(store_args, clock)
    try:
        assert not again.enqueue_request(Request("http://a.test/", dont_filter=True, meta=dict(SEED)))
        assert fetch_all([again], clock) == []
    finally:
        again.close("finished")


def test_a_dont_filter_request_for_a_url_in_flight_requeues_its_own_row(frontier: DistributedFrontier,
                                                                       clock: Clock) -> None:
    """Only a URL still queued gets a copy: a redirect back to, or a retry
    of, a URL in flight is the URL's own row, queued again (no phantom
    fingerprint in the shared URL-seen set)."""
    assert frontier.enqueue_request(Request("http://a.test/"))
    first = frontier.next_request()
    assert frontier.enqueue_request(Request("http://a.test/", dont_filter=True))
    frontier.fetch_finished(first, duration=0.0, ok=True)
    assert fetch_all([frontier], clock) == ["http://a.test/"]
    assert frontier.stats.get_value("frontier/dont_filter_copies") is None


def test_copies_of_a_seed_share_its_aopic_cash(store_args: dict[str, Any], clock: Clock) -> None:
    """A copy is a fetch of the URL, not a page of its own: the seed is
    given its initial cash once, and no copy gets a cash row (cash put into
    the crawl by copies would never be taken by a fetch)."""
    from extensions.aopic.ledger import AOPICLedger  # noqa: PLC0415

    store = RedisStore(**store_args)
    frontier = DistributedFrontier(store, clock=clock.seconds, politeness=Politeness(), ledger=AOPICLedger(store))
    frontier.open(None)
    try:
        for _ in range(3):
            assert frontier.enqueue_request(Request("http://a.test/", dont_filter=True, meta=dict(SEED)))
        totals = ledger_totals(frontier.ledger)
        assert (totals.rows, totals.put_in) == (1, frontier.ledger.initial_cash)
    finally:
        frontier.close("finished")
