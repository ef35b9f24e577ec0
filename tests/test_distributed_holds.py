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

from extensions.frontier.distributed import DistributedFrontier
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.holds import origin_of
from extensions.store.base import Status
from extensions.store.redis import RedisStore
from extensions.store.redis_bloom import BloomLayout
from tests.redisserver import shared_server, unique_prefix

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

    frontier = DistributedFrontier(RedisStore(shared_server().url, prefix, bloom=bloom), clock=clock.seconds,
                                   lease_clock=clock.seconds, looping_call=looping_call,
                                   lease_ttl=TTL, poll_interval=0.1, idle_close=IDLE, **kwargs)
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
