"""Held and deferred origins, the idle close, and the frontier as a drop-in
Scrapy scheduler (requests it cannot file, ``dont_filter`` copies, retries).

The frontier is driven directly with a fake clock; the signals the robots.txt
middleware and the circuit breaker send are called as the handlers they are.
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request

from extensions.frontier.holds import OriginHolds, origin_of
from extensions.frontier.store import Entry, Status
from twisted.internet.task import Clock

from tests.test_frontier_support import _KINDS, STORES, local_only, make_frontier, make_store, reopen_store, shared
from tests.aopic_helpers import ledger_totals


@pytest.fixture(params=STORES)
def store(request: Any, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


def entry(url: str) -> Entry:
    return Entry(hash(url), url, url.split("/")[2])


def status(frontier: Any, url: str) -> Status | None:
    from extensions.frontier.fingerprint import url_fingerprint  # noqa: PLC0415
    return frontier.store.urls.status_of(url_fingerprint(url)[0])


def fetch_all(frontier: Any, clock: Clock, refuse: set[str] = frozenset(), limit: int = 10_000) -> list[str]:
    """Hand out and finish everything (URLs in ``refuse`` fail without a
    response, as a refused request does); the URLs handed out, in order."""
    fetched = []
    for _ in range(limit):
        request = frontier.next_request()
        if request is None:
            if not frontier.has_pending_requests():
                return fetched
            clock.advance(1.0)
            continue
        fetched.append(request.url)
        frontier.fetch_finished(request, duration=0.0, ok=origin_of(request.url) not in refuse)
    raise AssertionError("the frontier never ran out of work")


# -- OriginHolds: pure ---------------------------------------------------------
def test_origin_is_scheme_host_and_port() -> None:
    assert origin_of("https://a.test:8443/x?y") == "https://a.test:8443"
    assert origin_of("http://a.test/x") != origin_of("https://a.test/x")


def test_an_ended_hold_releases_one_probe_then_the_rest() -> None:
    holds = OriginHolds()
    holds.hold("https://a.test", until=10.0, reason="robots.txt unreachable")
    for i in range(3):
        assert holds.park(entry(f"https://a.test/{i}"))
    assert not holds.park(entry("http://a.test/0"))  # another origin of the host
    assert holds.release_due(9.9) == []
    probe = holds.release_due(10.0)
    assert [e.url for e in probe] == ["https://a.test/0"]
    assert holds.next_release() is None  # waits for the probe, untimed
    assert holds.state_of("https://a.test/5") == "held"
    assert [e.url for e in holds.release("https://a.test")] == ["https://a.test/1", "https://a.test/2"]
    assert holds.state_of("https://a.test/5") is None


def test_deferring_an_origin_hands_back_its_parked_urls() -> None:
    holds = OriginHolds()
    holds.hold("https://a.test", 5.0, "refused")
    holds.park(entry("https://a.test/1"))
    assert [e.url for e in holds.defer("https://a.test", "refused 6 times")] == ["https://a.test/1"]
    assert holds.state_of("https://a.test/2") == "deferred"
    assert holds.parked() == 0


# -- the frontier: origins independent, every crawl ends -----------------------
def test_a_held_https_origin_never_delays_the_same_hosts_http_urls(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock=clock)
    for i in range(3):
        frontier.enqueue_request(Request(f"https://a.test/{i}"))
        frontier.enqueue_request(Request(f"http://a.test/{i}"))
    frontier.origin_held("https://a.test", 1000.0, "robots.txt unreachable (ConnectionRefusedError)")
    handed = []
    for _ in range(20):
        request = frontier.next_request()
        if request is not None:
            handed.append(request.url)
            frontier.fetch_finished(request, duration=0.0)
        clock.advance(0.1)
    assert sorted(handed) == [f"http://a.test/{i}" for i in range(3)]
    if not shared(store):  # the shared dispatch parks them in the host's queue in Redis
        assert frontier.holds.parked() == 3
    assert frontier.has_pending_requests()  # parked work keeps the crawl open...


def test_a_crawl_with_only_held_work_left_defers_it_and_ends(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock=clock, idle_close=30.0)
    frontier.enqueue_request(Request("https://dead.test/"))
    frontier.enqueue_request(Request("http://ok.test/"))
    frontier.origin_held("https://dead.test", 10_000.0, "robots.txt unreachable (status 503)")
    start = clock.seconds()
    fetched = fetch_all(frontier, clock)
    assert fetched == ["http://ok.test/"]
    # ...for idle_close seconds, not for the hold's 10,000 (the shared
    # dispatch looks at idleness at its lease renewals: within a TTL more)
    slack = frontier.dispatch.lease_ttl if shared(store) else 1.0
    assert clock.seconds() - start <= 30.0 + slack
    assert status(frontier, "https://dead.test/") == Status.DEFERRED
    reason, _ = store.hosts.deferrals()["https://dead.test"]
    assert "robots.txt unreachable (status 503)" in reason
    assert frontier.stats.get_value("frontier/deferred") == 1
    assert frontier.stats.get_value("frontier/deferred_reasons") == {"https://dead.test": reason}


def test_a_pause_that_ends_by_itself_is_waited_out_not_deferred(store: Any) -> None:
    """A pushback's hold (``wait_out``) when nothing else is left: the idle
    close waits for it and the URL is fetched after it (a robots.txt hold is
    deferred after ``idle_close``, above)."""
    clock = Clock()
    frontier = make_frontier(store, clock=clock, idle_close=30.0)
    frontier.enqueue_request(Request("http://busy.test/"))
    frontier.enqueue_request(Request("http://ok.test/"))
    frontier.origin_held("http://busy.test", 100.0, "pushback: 429 (Retry-After, 100.0s)", wait_out=True)
    start = clock.seconds()
    fetched = fetch_all(frontier, clock)
    assert sorted(fetched) == ["http://busy.test/", "http://ok.test/"]
    assert clock.seconds() - start >= 100.0
    assert status(frontier, "http://busy.test/") != Status.DEFERRED  # done (a Bloom store trims the row)
    assert not store.hosts.deferrals()


def test_a_hold_that_ends_sends_one_probe_and_its_success_releases_the_rest(store: Any) -> None:
    local_only(store, "a shared hold that ends puts all its parked URLs back (no probe)")
    clock = Clock()
    frontier = make_frontier(store, clock=clock, idle_close=1000.0)
    frontier.origin_held("https://a.test", 5.0, "circuit breaker")
    for i in range(3):
        frontier.enqueue_request(Request(f"https://a.test/{i}"))
    assert frontier.next_request() is None  # all three parked at dispatch
    assert frontier.holds.parked() == 3
    clock.advance(5.0)
    probe = frontier.next_request()
    assert probe is not None and frontier.next_request() is None  # one at a time
    frontier.fetch_finished(probe, duration=0.0, ok=True)
    assert sorted(fetch_all(frontier, clock)) == ["https://a.test/1", "https://a.test/2"]


def test_a_probe_refused_again_is_parked_again_and_deferral_ends_it(store: Any) -> None:
    local_only(store, "a shared hold that ends puts all its parked URLs back (no probe)")
    clock = Clock()
    frontier = make_frontier(store, clock=clock, idle_close=1000.0)
    frontier.enqueue_request(Request("https://a.test/0"))
    frontier.enqueue_request(Request("https://a.test/1"))
    frontier.origin_held("https://a.test", 5.0, "robots.txt unreachable")
    assert frontier.next_request() is None
    clock.advance(5.0)
    probe = frontier.next_request()
    frontier.origin_held("https://a.test", 10.0, "robots.txt unreachable")  # the retry failed too
    frontier.fetch_finished(probe, duration=0.0, ok=False)
    assert frontier.holds.parked() == 2 and status(frontier, probe.url) == Status.QUEUED
    frontier.origin_deferred("https://a.test", "robots.txt unreachable after 6 tries")
    assert not frontier.has_pending_requests()
    assert status(frontier, "https://a.test/0") == status(frontier, "https://a.test/1") == Status.DEFERRED


def test_a_request_refused_by_a_hold_is_fetched_later_even_if_the_hold_ended_before_the_refusal_was_seen(
        store: Any) -> None:
    """A busy reactor (a frozen Redis, a slow disk) can let a short hold run
    out before the frontier notices the refused request: it must go back to
    its queue, not end as failed (a lost page)."""
    clock = Clock()
    engine: set[Request] = set()
    frontier = make_frontier(store, clock=clock, idle_close=1000.0, in_progress=lambda: engine)
    frontier.enqueue_request(Request("https://a.test/0"))
    request = frontier.next_request()
    engine.add(request)
    frontier.origin_held("https://a.test", 0.2, "robots.txt unreachable (status 503)", request=request)
    frontier.fetch_finished(request, duration=0.0, ok=False)
    engine.discard(request)  # the robots.txt middleware refused it: the engine let it go
    clock.advance(5.0)
    assert fetch_all(frontier, clock) == ["https://a.test/0"]
    assert frontier.stats.get_value("frontier/done") == 1
    assert not frontier.stats.get_value("frontier/failed")


def test_on_redis_a_request_refused_by_a_hold_that_ended_meanwhile_goes_back_to_its_queue() -> None:
    """The same on the shared frontier (its holds are per host and end at
    their time): the CI failure of a frozen Redis, in which the root page of
    a host whose robots.txt answered 503 was never fetched."""
    from tests.redis_helpers import DistributedFrontier  # noqa: PLC0415
    from extensions.backends.redis.store import RedisStore  # noqa: PLC0415
    from testweb.redisserver import shared_server, unique_prefix  # noqa: PLC0415

    clock = Clock()
    engine: set[Request] = set()
    frontier = DistributedFrontier(RedisStore(shared_server().url, unique_prefix()), clock=clock.seconds,
                                   call_later=clock.callLater, in_progress=lambda: engine)
    frontier.open(None)
    try:
        frontier.enqueue_request(Request("http://a.test/0"))
        request = frontier.next_request()
        engine.add(request)
        frontier.origin_held("http://a.test", 0.2, "robots.txt unreachable (status 503)", request=request)
        frontier.fetch_finished(request, duration=0.0, ok=False)
        engine.discard(request)
        clock.advance(5.0)
        handed = []
        for _ in range(100):
            again = frontier.next_request()
            if again is not None:
                handed.append(again.url)
                frontier.fetch_finished(again, duration=0.0, ok=True)
            elif not frontier.has_pending_requests():
                break
            clock.advance(0.5)
        assert handed == ["http://a.test/0"]
        assert status(frontier, "http://a.test/0") == Status.DONE
    finally:
        frontier.close("finished")


def test_urls_of_a_deferred_origin_found_later_are_deferred_at_once(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock=clock)
    frontier.origin_deferred("https://a.test", "circuit breaker open after 6 tries")
    frontier.enqueue_request(Request("https://a.test/late"))
    assert fetch_all(frontier, clock) == []
    assert status(frontier, "https://a.test/late") == Status.DEFERRED


def test_a_resumed_crawl_retries_deferred_urls_first(store: Any, tmp_path: Any) -> None:
    clock = Clock()
    fresh = reopen_store(store)
    frontier = make_frontier(store, clock=clock, idle_close=5.0)
    frontier.enqueue_request(Request("https://dead.test/", priority=-5))
    frontier.origin_held("https://dead.test", 1000.0, "refused")
    fetch_all(frontier, clock)
    frontier.close("finished")
    again = make_frontier(fresh, clock=clock)
    again.enqueue_request(Request("http://b.test/", priority=100))
    assert again.stats.get_value("frontier/deferred_retried") == 1
    assert status(again, "https://dead.test/") == Status.QUEUED
    assert again.store.hosts.deferrals() == {}
    assert fetch_all(again, clock)[0] == "https://dead.test/"
    again.close("finished")


# -- a drop-in Scrapy scheduler --------------------------------------------------
def test_a_url_the_frontier_cannot_file_is_handed_out_unfiled(store: Any) -> None:
    frontier = make_frontier(store)
    data = Request("data:,hello")
    assert frontier.enqueue_request(data)
    assert frontier.has_pending_requests()
    assert frontier.next_request() is data
    assert frontier.stats.get_value("frontier/unfiled") == 1
    assert not frontier.has_pending_requests()


def test_identical_dont_filter_requests_are_each_fetched(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock=clock)
    for _ in range(6):
        assert frontier.enqueue_request(Request("http://a.test/", dont_filter=True, meta={"is_start_request": True}))
    assert fetch_all(frontier, clock) == ["http://a.test/"] * 6


def test_copies_of_a_seed_share_its_aopic_cash(store: Any) -> None:
    """A copy is a fetch of the URL, not a page of its own: the seed gets
    its initial cash once and no copy gets a cash row (none would ever be
    taken by a fetch). Was: three rows, three times the cash put in."""
    from extensions.aopic.ledger import AOPICLedger  # noqa: PLC0415

    frontier = make_frontier(store, ledger=AOPICLedger(store))
    for _ in range(3):
        assert frontier.enqueue_request(Request("http://a.test/", dont_filter=True, meta={"is_start_request": True}))
    totals = ledger_totals(frontier.ledger)
    assert (totals.rows, totals.put_in) == (1, frontier.ledger.initial_cash)


def test_a_retried_start_request_is_scheduled_again(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock=clock)
    seed = Request("http://a.test/", meta={"is_start_request": True})
    assert frontier.enqueue_request(seed)
    first = frontier.next_request()
    retry = first.replace(dont_filter=True)
    retry.meta["retry_times"] = 1  # what RetryMiddleware hands back
    frontier.fetch_finished(first, duration=0.0, ok=False)
    assert frontier.enqueue_request(retry)
    assert fetch_all(frontier, clock) == ["http://a.test/"]


def test_start_requests_of_an_earlier_run_are_not_fetched_again(store: Any) -> None:
    clock = Clock()
    fresh = reopen_store(store)
    seed = {"is_start_request": True}
    frontier = make_frontier(store, clock=clock)
    assert frontier.enqueue_request(Request("http://a.test/", dont_filter=True, meta=seed))
    assert fetch_all(frontier, clock) == ["http://a.test/"]
    frontier.close("finished")
    again = make_frontier(fresh, clock=clock)
    assert not again.enqueue_request(Request("http://a.test/", dont_filter=True, meta=seed))
    again.close("finished")


def test_a_known_url_spends_no_host_budget_even_after_leaving_the_cache(store: Any) -> None:
    frontier = make_frontier(store, host_budget=3, seen_cache_size=1)
    for path in ("a", "b"):
        assert frontier.enqueue_request(Request(f"http://h.test/{path}"))
    for _ in range(5):  # "a" left the one-entry cache; each repeat is a duplicate, not a charge
        assert not frontier.enqueue_request(Request("http://h.test/a"))
        assert not frontier.enqueue_request(Request("http://h.test/b"))
    assert frontier.enqueue_request(Request("http://h.test/c"))
    assert frontier.stats.get_value("frontier/host_budget_refused", 0) == 0


def test_hosts_first_seen_is_the_time_they_were_found(store: Any) -> None:
    if type(store).__name__ != "SQLiteStore":
        pytest.skip("first_seen is a column of the SQLite hosts table")
    frontier = make_frontier(store)
    frontier.enqueue_request(Request("http://h.test/"))
    (first_seen,) = store._require().execute("SELECT first_seen FROM hosts WHERE host='h.test'").fetchone()
    assert first_seen >= 1_700_000_000.0


# -- URLs refused for good -----------------------------------------------------
def test_refused_urls_get_a_refused_row_and_stay_unfetched(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock=clock)
    frontier.urls_refused([("http://a.test/deny", "filter/deny"), ("mailto:x@a.test", "filter/scheme")])
    trims = getattr(frontier.store.urls, "trims", False)  # Redis in Bloom mode keeps only a count
    assert status(frontier, "http://a.test/deny") == (None if trims else Status.REFUSED)
    assert not frontier.enqueue_request(Request("http://a.test/deny"))  # known: a duplicate
    frontier.enqueue_request(Request("http://a.test/ok"))
    assert fetch_all(frontier, clock) == ["http://a.test/ok"]
    assert frontier.stats.get_value("frontier/refused") == 1


def test_a_handed_out_request_refused_for_good_ends_refused_not_failed(store: Any) -> None:
    clock = Clock()
    frontier = make_frontier(store, clock=clock)
    frontier.enqueue_request(Request("http://a.test/"))
    request = frontier.next_request()
    frontier.urls_refused([(request.url, "address/loopback")], request=request)
    frontier.fetch_finished(request, duration=0.0, ok=False)
    assert fetch_all(frontier, clock) == []
    if not getattr(frontier.store.urls, "trims", False):
        assert status(frontier, "http://a.test/") == Status.REFUSED
        entry = frontier.store.urls.get_many([request_fp(request)])[request_fp(request)]
        assert entry.extra == '{"refused": "address/loopback"}'
    assert frontier.stats.get_value("frontier/refused") == 1
    assert not frontier.stats.get_value("frontier/failed")


def request_fp(request: Request) -> int:
    from extensions.frontier.fingerprint import url_fingerprint  # noqa: PLC0415
    return url_fingerprint(request.url)[0]


def test_a_widened_delay_outlives_the_process_and_reaches_the_others(store: Any) -> None:
    """A host's delay widened after pushback is kept by the store: a resumed
    crawl starts with it, and on Redis a frontier sharing the store learns it
    at its next checkpoint (an embedded store has one process)."""
    clock = Clock()
    fresh = reopen_store(store)
    first = make_frontier(store, clock)
    first.politeness_widened("http://a.test", 8.0)
    first.politeness_widened("http://a.test", 2.0)  # narrower: the wider one stays
    assert first.politeness.widened == {"a.test": 8.0}
    first.checkpoint()  # what it wrote is committed
    if _KINDS.get(store, "").startswith("redis"):
        other = make_frontier(reopen_store(store), clock)
        assert other.politeness.widened.get("a.test") == 8.0  # at open
        first.politeness_widened("http://b.test", 3.0)
        first.checkpoint()
        other.checkpoint()
        assert other.politeness.widened.get("b.test") == 3.0  # while both run
        other.close("shutdown")
    first.close("shutdown")
    resumed = make_frontier(fresh, clock)
    assert resumed.politeness.widened.get("a.test") == 8.0
    resumed.close("shutdown")
