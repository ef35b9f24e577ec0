"""Held origins and the idle close on the shared frontier (Redis, several
processes): holds are seen crawl-wide, a crawl with nothing but held work
left is deferred and ends, and a resumed run retries the deferred URLs first.

Processes are :class:`DistributedFrontier` objects on one real
``redis-server``, driven with one fake clock (their lease renewals run on it);
the robots.txt middleware's ``origin_held`` signal is called as the handler it is.
"""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request
from twisted.internet.task import Clock, LoopingCall

from tests.redis_helpers import DistributedFrontier
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.holds import origin_of
from extensions.frontier.politeness import Politeness
from extensions.frontier.store import Status
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.bloom import BloomLayout
from extensions.backends.redis.leases import Taken
from testweb.redisserver import shared_server, unique_prefix

DEAD = "https://dead.test"
REASON = "robots.txt unreachable (status 503)"
TTL = 2.0
IDLE = 5.0


def process(prefix: str, clock: Clock, bloom: BloomLayout | None = None, **kwargs: Any) -> DistributedFrontier:
    """One crawler process's frontier, open, its renewals on ``clock``."""
    def looping_call(function: Any) -> LoopingCall:
        loop = LoopingCall(function)
        loop.clock = clock
        return loop

    options = {"lease_ttl": TTL, "poll_interval": 0.1, "idle_close": IDLE, **kwargs}
    frontier = DistributedFrontier(RedisStore(shared_server().url, prefix, seen=bloom), clock=clock.seconds,
                                   lease_clock=clock.seconds, looping_call=looping_call, **options)
    frontier.open(None)
    return frontier


def status(frontier: DistributedFrontier, url: str) -> Status | None:
    return frontier.store.urls.status_of(url_fingerprint(url)[0])


def crawl(processes: list[DistributedFrontier], clock: Clock, rounds: int = 1000) -> list[str]:
    """Drive ``processes`` until none has work; a request of DEAD is refused
    for its unreachable robots.txt (a hold far longer than the crawl), the
    others are fetched. The URLs handed out, in order."""
    handed = []
    for _ in range(rounds):
        for frontier in processes:
            request = frontier.next_request()
            if request is None:
                continue
            handed.append(request.url)
            dead = origin_of(request.url) == DEAD
            if dead:
                frontier.origin_held(DEAD, 10_000.0, REASON, request=request)
            frontier.fetch_finished(request, duration=0.0, ok=not dead)
        if not any(frontier.has_pending_requests() for frontier in processes):
            return handed
        clock.advance(0.25)
    raise AssertionError(f"the crawl never ended; handed out {handed[:20]}")


@pytest.mark.parametrize("bloom", [None, BloomLayout(100_000, 1e-6)], ids=["exact", "bloom"])
def test_two_processes_with_only_held_work_left_defer_it_and_end(bloom: BloomLayout | None) -> None:
    """(With the URL-seen Bloom filter, whose finished rows go, a deferred
    row stays, deferred: a resume retries it.)"""
    clock = Clock()
    clock.advance(1000.0)
    prefix = unique_prefix()
    first, second = process(prefix, clock, bloom), process(prefix, clock, bloom)
    try:
        for i in range(3):
            first.enqueue_request(Request(f"http://ok.test/{i}"))
            second.enqueue_request(Request(f"{DEAD}/{i}"))
        start = clock.seconds()
        handed = crawl([first, second], clock)
        assert sorted(url for url in handed if "ok.test" in url) == [f"http://ok.test/{i}" for i in range(3)]
        assert len([url for url in handed if url.startswith(DEAD)]) == 1  # the hold held crawl-wide
        assert clock.seconds() - start < 10_000.0 / 10  # not the hold's 10,000 s
        for i in range(3):
            assert status(first, f"{DEAD}/{i}") == Status.DEFERRED
        reason, _ = first.store.hosts.deferrals()[DEAD]
        assert reason == f"held when nothing else was left: {REASON}"
        for frontier in (first, second):  # each process's report lists it
            assert frontier.stats.get_value("frontier/deferred_reasons") == {DEAD: reason}
    finally:
        first.close("finished")
        second.close("finished")


def test_a_hold_outlives_the_process_that_saw_it() -> None:
    """Another process that takes the host over does not probe the origin
    before the hold ends (it learns the hold from Redis, not from its own
    robots.txt fetch)."""
    clock = Clock()
    clock.advance(1000.0)
    prefix = unique_prefix()
    first = process(prefix, clock)
    first.enqueue_request(Request(f"{DEAD}/0"))
    first.enqueue_request(Request(f"{DEAD}/1"))
    request = first.next_request()
    first.origin_held(DEAD, 10_000.0, REASON, request=request)
    first.fetch_finished(request, duration=0.0, ok=False)
    first.close("shutdown")
    second = process(prefix, clock)
    try:
        assert crawl([second], clock) == []
        assert status(second, f"{DEAD}/0") == status(second, f"{DEAD}/1") == Status.DEFERRED
    finally:
        second.close("finished")


def test_a_resumed_run_retries_the_deferred_urls_first_and_a_joining_process_does_not() -> None:
    clock = Clock()
    clock.advance(1000.0)
    prefix = unique_prefix()
    first = process(prefix, clock)
    first.enqueue_request(Request(f"{DEAD}/0", priority=-5))
    crawl([first], clock)
    assert status(first, f"{DEAD}/0") == Status.DEFERRED
    first.close("finished")

    again = process(prefix, clock)
    joining = process(prefix, clock)
    try:
        assert again.stats.get_value("frontier/deferred_retried") == 1
        assert joining.stats.get_value("frontier/deferred_retried") is None
        assert status(again, f"{DEAD}/0") == Status.QUEUED
        assert again.store.hosts.deferrals() == {}
        again.enqueue_request(Request("http://b.test/", meta={"depth": 2}))  # above the URL's old level
        assert again.next_request().url == f"{DEAD}/0"
    finally:
        joining.close("finished")
        again.close("finished")


# -- origins are independent: a held https://H never delays http://H -----------

HELD = "https://a.test"
LIVE = "http://a.test"
DELAY = 1.0  # DOWNLOAD_DELAY: the host's politeness pace
HOLD = 1000.0  # far longer than the host's live pages take


def mixed_host(frontier: DistributedFrontier, held: int = 6, live: int = 4) -> tuple[list[str], list[str]]:
    """Queue URLs of both origins of a.test, the held origin's first and
    more important (so that only parking them lets the others through)."""
    held_urls = [f"{HELD}/s{i}" for i in range(held)]
    live_urls = [f"{LIVE}/p{i}" for i in range(live)]
    for url in held_urls:
        frontier.enqueue_request(Request(url))
    for url in live_urls:
        frontier.enqueue_request(Request(url, meta={"depth": 3}))
    return held_urls, live_urls


def drive(processes: list[DistributedFrontier], clock: Clock, until: float,
          stop: Any = lambda handed: False) -> list[tuple[float, str]]:
    """Hand out and finish (fetched, taking no time) what ``processes`` have,
    in steps of a tenth of a second, until the clock reaches ``until`` or
    ``stop(handed)``; ``(time, url)`` of each URL handed out."""
    handed: list[tuple[float, str]] = []
    for _ in range(int((until - clock.seconds()) * 10) + 1):
        for frontier in processes:
            while (request := frontier.next_request()) is not None:
                handed.append((clock.seconds(), request.url))
                frontier.fetch_finished(request, duration=0.0, ok=True)
        if stop(handed) or clock.seconds() >= until:
            break
        clock.advance(0.1)
    return handed


def open_with_delay(prefix: str, clock: Clock, **kwargs: Any) -> DistributedFrontier:
    return process(prefix, clock, politeness=Politeness(delay=DELAY), **kwargs)


def assert_polite_pace(times: list[float], start: float | None = None) -> None:
    """One fetch per DOWNLOAD_DELAY, give or take a step of the drive (the
    first at once from ``start``, if given)."""
    gaps = [later - earlier for earlier, later in zip(times, times[1:])]
    assert all(DELAY - 1e-6 <= gap <= DELAY + 0.15 for gap in gaps), gaps
    assert start is None or times[0] - start <= 0.15, times[0] - start


@pytest.mark.parametrize("bloom", [None, BloomLayout(100_000, 1e-6)], ids=["exact", "bloom"])
def test_a_held_origin_never_delays_its_hosts_other_origin(bloom: BloomLayout | None) -> None:
    clock = Clock()
    clock.advance(1000.0)
    frontier = open_with_delay(unique_prefix(), clock, bloom=bloom, idle_close=100 * HOLD)
    try:
        frontier.origin_held(HELD, HOLD, REASON)
        held_urls, live_urls = mixed_host(frontier)
        start = clock.seconds()
        during = drive([frontier], clock, start + HOLD / 2)
        assert [url for _, url in during] == live_urls  # none of the held origin's
        assert_polite_pace([when for when, _ in during], start)
        assert frontier.stats.get_value("frontier/parked") == len(held_urls)
        assert frontier.has_pending_requests()  # the held URLs are still to come

        clock.advance(start + HOLD - clock.seconds())  # the hold ends
        after = drive([frontier], clock, clock.seconds() + 3 * len(held_urls),
                      stop=lambda handed: len(handed) == len(held_urls))
        assert sorted(url for _, url in after) == held_urls
        assert_polite_pace([when for when, _ in after])
        for url in held_urls + live_urls:  # (the Bloom filter's finished rows go)
            assert status(frontier, url) == (Status.DONE if bloom is None else None)
    finally:
        frontier.close("finished")


def test_a_held_origins_urls_are_deferred_after_its_hosts_other_origin_is_crawled() -> None:
    clock = Clock()
    clock.advance(1000.0)
    frontier = open_with_delay(unique_prefix(), clock)
    try:
        frontier.origin_held(HELD, HOLD, REASON)
        held_urls, live_urls = mixed_host(frontier)
        start = clock.seconds()
        handed = drive([frontier], clock, start + HOLD / 2,
                       stop=lambda handed: not frontier.has_pending_requests())
        assert [url for _, url in handed] == live_urls
        assert_polite_pace([when for when, _ in handed], start)
        assert not frontier.has_pending_requests()  # the idle close deferred the rest
        assert clock.seconds() - start < HOLD / 10
        for url in held_urls:
            assert status(frontier, url) == Status.DEFERRED
        for url in live_urls:
            assert status(frontier, url) == Status.DONE
        assert frontier.store.hosts.deferrals()[HELD][0] == f"held when nothing else was left: {REASON}"
    finally:
        frontier.close("finished")


def test_a_process_taking_the_host_over_keeps_the_origins_apart() -> None:
    """The first process parks the held origin's URLs and is killed with a
    live URL in flight; the process that takes the host over gets that URL
    back and serves the live origin at the host's pace, the held one after
    its hold."""
    clock = Clock()
    clock.advance(1000.0)
    prefix = unique_prefix()
    first = open_with_delay(prefix, clock, idle_close=100 * HOLD)
    first.origin_held(HELD, HOLD, REASON)
    held_urls, live_urls = mixed_host(first)
    lost = first.next_request()  # fetched, never finished: the process is killed
    assert lost is not None and lost.url == live_urls[0]
    first.dispatch._lease_loop.stop()  # noqa: SLF001 - a SIGKILL: no more renewals, no close

    second = open_with_delay(prefix, clock, idle_close=100 * HOLD)
    try:
        start = clock.seconds()
        during = drive([second], clock, start + HOLD / 2,
                       stop=lambda handed: len(handed) == len(live_urls))
        assert [url for _, url in during] == live_urls  # the lost one recovered, then the rest
        assert during[0][0] - start <= TTL + 0.2  # after the dead lease's TTL
        assert_polite_pace([when for when, _ in during])
        assert second.stats.get_value("frontier/leases_taken_over") == 1

        clock.advance(start + HOLD - clock.seconds())
        after = drive([second], clock, clock.seconds() + 3 * len(held_urls),
                      stop=lambda handed: len(handed) == len(held_urls))
        assert sorted(url for _, url in after) == held_urls
    finally:
        second.close("finished")
        first.store.abandon()


def test_an_origin_deferred_by_its_robots_txt_retries_is_finished_at_once() -> None:
    """The robots.txt middleware gives up on the origin (``origin_deferred``)
    while its host waits with nothing but its parked URLs: they are finished
    as deferred at the host's pace, not after the hold or a lease TTL."""
    clock = Clock()
    clock.advance(1000.0)
    frontier = open_with_delay(unique_prefix(), clock, idle_close=100 * HOLD)
    try:
        frontier.origin_held(HELD, HOLD, REASON)
        held_urls, live_urls = mixed_host(frontier)
        handed = drive([frontier], clock, clock.seconds() + HOLD / 2,
                       stop=lambda handed: len(handed) == len(live_urls))
        assert [url for _, url in handed] == live_urls
        assert drive([frontier], clock, clock.seconds() + 2 * DELAY) == []  # the host waits
        frontier.origin_deferred(HELD, "robots.txt unreachable 5 times")
        assert drive([frontier], clock, clock.seconds() + TTL / 2,
                     stop=lambda handed: not frontier.has_pending_requests()) == []
        assert not frontier.has_pending_requests()
        for url in held_urls:
            assert status(frontier, url) == Status.DEFERRED
    finally:
        frontier.close("finished")


def test_a_take_answered_after_its_hold_ended_does_not_park_the_host_for_a_lease() -> None:
    """With the worker thread a take's answer can come after the hold it
    met has ended and its URLs were unparked: "only held origins' URLs" must
    then not park the host for a lease TTL (a pushback of 0.2 s kept a
    bench.distributed crawl waiting 10 s for its last URL): it is looked at
    again within a poll interval and its URLs go out."""
    clock = Clock()
    clock.advance(1000.0)
    frontier = process(unique_prefix(), clock, lease_ttl=10.0)
    dispatch = frontier.dispatch
    try:
        frontier.origin_held(HELD, 0.5, REASON)
        held_urls = [f"{HELD}/s{i}" for i in range(3)]
        for url in held_urls:
            frontier.enqueue_request(Request(url))
        assert frontier.next_request() is None  # the host taken, its URLs parked
        host = "a.test"
        assert host in dispatch.held and dispatch.held[host].parked
        clock.advance(0.6)
        dispatch.end_holds(clock.seconds())  # the hold ends: its URLs are unparked
        assert not dispatch.held[host].parked
        late = Taken("held", queued=len(held_urls), head=dispatch.held[host].head)  # sent while it held
        assert dispatch.use_taken(host, late, clock.seconds()) is None
        assert dispatch.held[host].parked_until <= clock.seconds() + 0.1 + 1e-9
        handed = drive([frontier], clock, clock.seconds() + 1.0,
                       stop=lambda handed: len(handed) == len(held_urls))
        assert sorted(url for _, url in handed) == held_urls
    finally:
        frontier.close("finished")
