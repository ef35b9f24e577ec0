"""The shared frontier with its worker thread (FRONTIER_REDIS_IO_THREAD)
on a real redis-server and a real 3-master Redis Cluster: it tells the
engine when it is done, and on a Cluster too it acquires hosts and hands
out every URL once.

Scrapy's engine asks ``next_request`` and, finding nothing, asks at once
``has_pending_requests`` to decide whether to close the spider. The
worker's answers reach the reactor thread through ``deliver``; here
``deliver`` only collects them and the test runs them between engine
cycles, as a reactor does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from scrapy import Request
from twisted.internet.task import Clock

from tests.redis_helpers import DistributedFrontier, back_lists_pattern
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.politeness import Politeness
from extensions.frontier.store import Status
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.worker import RedisWorker
from testweb.redisserver import shared_cluster, shared_server, unique_prefix
from testweb.waiting import wait_until
from tests.test_redis_worker_faults import Reactor


@pytest.fixture
def clock() -> Clock:
    return Clock()


def with_worker(frontier: DistributedFrontier, reactor: Reactor) -> RedisWorker:
    """Route the frontier's lease commands through a worker thread, as in a crawl."""
    store = frontier.store
    connection = RedisConnection(store.url, retries=0, timeout=5.0)
    connection.attach("test worker")
    worker = RedisWorker(connection, reactor.deliver, reactor.errors.append)
    worker.start()
    dispatch: Any = frontier.dispatch
    dispatch.worker = worker
    dispatch.leases.io = worker
    return worker


def open_frontier(url: str, prefix: str, clock: Clock, reactor: Reactor, **values: Any) -> DistributedFrontier:
    """One process's frontier on the crawl ``prefix`` at ``url``, its worker
    on; Redis reads the leases' time off ``clock`` too."""
    frontier = DistributedFrontier(RedisStore(url, prefix), clock=clock.seconds, lease_clock=clock.seconds,
                                   politeness=Politeness(), back_queues=4, queue_buffer=8,
                                   call_later=clock.callLater, wake=lambda: None, **values)
    frontier.open(None)
    with_worker(frontier, reactor)
    return frontier


@pytest.fixture
def idle_frontier(clock: Clock) -> Iterator[tuple[DistributedFrontier, Reactor]]:
    """One process's frontier on a crawl with nothing left, its worker on."""
    reactor = Reactor()
    frontier = open_frontier(shared_server().url, unique_prefix(), clock, reactor)
    yield frontier, reactor
    reactor.turn()
    frontier.close("finished")


def test_an_idle_process_with_the_worker_ends_although_each_engine_cycle_polls_the_heap(
        idle_frontier: tuple[DistributedFrontier, Reactor], clock: Clock) -> None:
    """Was: each engine cycle's ``next_request`` sent a poll of the shared
    heap through the worker and ``has_pending_requests``, asked right
    after, saw the poll on its way and answered True: the engine never
    closed the spider (a survivor of test_distributed's random-SIGKILL test
    ran on, idle, about one run in five)."""
    frontier, reactor = idle_frontier
    worker: Any = frontier.dispatch.worker
    answers = []
    for _ in range(5):  # engine cycles, a heartbeat apart
        assert frontier.next_request() is None
        answers.append(frontier.has_pending_requests())
        wait_until(lambda: reactor.calls or worker.idle(), "the poll answered", patience=200, interval=0.01)
        reactor.turn()
        clock.advance(5.0)
    assert answers[-1] is False, answers


def test_a_host_listed_by_an_enqueue_on_its_way_keeps_the_process_running(
        idle_frontier: tuple[DistributedFrontier, Reactor]) -> None:
    """An enqueue handed to the worker may list a host yet: until it is
    answered the process has work pending, even with an empty heap seen."""
    frontier, reactor = idle_frontier
    assert frontier.next_request() is None
    assert frontier.enqueue_request(Request("http://pending.test/a"))
    assert frontier.has_pending_requests()
    reactor.turn()
    assert frontier.has_pending_requests()  # the host is on the heap, or held here


def test_a_poll_sent_before_an_enqueues_listing_does_not_hide_the_listed_hosts(
        idle_frontier: tuple[DistributedFrontier, Reactor]) -> None:
    """Was: ``next_request``'s poll of the heap, sent while enqueues were on
    their way, ran in Redis before their hosts' listings and was answered
    after them: its count (0 hosts) was taken as fresh and
    ``has_pending_requests`` answered False with three hosts queued (the
    engine may close the spider)."""
    frontier, reactor = idle_frontier
    for host in range(3):
        assert frontier.enqueue_request(Request(f"http://h{host}.test/"))
    assert frontier.next_request() is None  # sends a poll
    worker = frontier.dispatch.worker  # type: ignore[attr-defined]
    wait_until(lambda: reactor.calls or worker.idle(), "the answers", patience=200, interval=0.01)
    reactor.turn()
    assert frontier.has_pending_requests()


def test_the_host_budget_reads_a_new_hosts_count_through_the_worker_and_holds(
        clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host new to a process: its count in the store is read through the
    worker (was a round trip of the reactor thread per new host) and added
    when it comes; the budget holds with it."""
    url, prefix, reactor = shared_server().url, unique_prefix(), Reactor()
    first = open_frontier(url, prefix, clock, reactor, host_budget=5)
    second = open_frontier(url, prefix, clock, reactor, host_budget=5)
    frontiers = (first, second)

    def answered() -> None:
        workers = [frontier.dispatch.worker for frontier in frontiers]  # type: ignore[attr-defined]
        for _ in range(20):  # an answer's callback may send more
            wait_until(lambda: reactor.calls or all(w.idle() for w in workers),  # noqa: B023 - called at once
                       "the answers", patience=200, interval=0.01)
            if not reactor.calls:
                return
            reactor.turn()
    try:
        for page in range(3):
            assert first.enqueue_request(Request(f"http://budget.test/{page}"))
        answered()

        def on_the_reactor(*_: Any) -> int:
            raise AssertionError("the reactor thread read a host's count")
        monkeypatch.setattr(second.store.urls, "count_host", on_the_reactor)
        assert second.enqueue_request(Request("http://budget.test/3"))  # counted from 0 until the 3 come
        answered()
        assert second.enqueue_request(Request("http://budget.test/4"))  # the host's 5th
        assert not second.enqueue_request(Request("http://budget.test/5"))
        assert second.stats.get_value("frontier/host_budget_refused") == 1
        assert not reactor.errors
    finally:
        answered()
        for frontier in frontiers:
            frontier.close("finished")


@pytest.mark.parametrize("kind", ["single", "cluster"])
def test_two_processes_with_the_worker_hand_out_every_url_once(kind: str, clock: Clock) -> None:
    """On a Cluster the worker's pipelines carry commands of many slots (a
    host's scripts in its own, the heap shards in theirs): every URL is
    handed out once, the processes acquire hosts and nothing is left."""
    url = (shared_cluster() if kind == "cluster" else shared_server()).url
    prefix, reactor = unique_prefix(), Reactor()
    frontiers = [open_frontier(url, prefix, clock, reactor) for _ in range(2)]
    urls = {f"http://h{host:02d}.test/{page}" for host in range(12) for page in range(3)}
    try:
        for seed in sorted(urls):
            assert frontiers[0].enqueue_request(Request(seed))
        fetched: list[str] = []
        for _ in range(400):  # engine cycles
            handed = [(frontier, frontier.next_request()) for frontier in frontiers]
            for frontier, request in handed:
                if request is not None:
                    fetched.append(request.url)
                    frontier.fetch_finished(request, duration=0.0, ok=True)
            workers = [frontier.dispatch.worker for frontier in frontiers]  # type: ignore[attr-defined]
            wait_until(lambda: reactor.calls or all(w.idle() for w in workers),  # noqa: B023 - called at once
                       "the answers", patience=200, interval=0.01)
            reactor.turn()
            if all(request is None for _, request in handed):
                if not any(frontier.has_pending_requests() for frontier in frontiers):
                    break
                clock.advance(1.0)
        else:
            raise AssertionError(f"the frontiers never ran out of work ({len(fetched)} handed out)")
        assert not reactor.errors, reactor.errors
        assert sorted(fetched) == sorted(urls)
        assert sum(frontier.stats.get_value("frontier/leases_acquired", 0) for frontier in frontiers) >= 12
        assert not reactor.errors
    finally:
        reactor.turn()
        for frontier in frontiers:
            frontier.close("finished")
    store = RedisStore(url, prefix)
    store.open()
    try:
        assert not list(store.scan(back_lists_pattern(store.keys)))  # every back-queue list empty
        assert store.urls.count_by_status().get(Status.DONE, 0) == len(urls)
    finally:
        store.close()


def test_a_url_robots_txt_excluded_in_flight_is_never_left_in_flight_by_a_kill(
        idle_frontier: tuple[DistributedFrontier, Reactor], clock: Clock) -> None:
    """Was: its FINISH went out at once through the worker, its EXCLUDED
    status waited in the store's buffer; a SIGKILL in between left the row
    "in flight" out of every in-flight set, for ever (test_distributed's
    random-SIGKILL test, about 1 run in 10 once the hang was fixed). The
    FINISH now carries the status."""
    frontier, reactor = idle_frontier
    url = "http://excluded.test/private"
    assert frontier.enqueue_request(Request(url))
    request = None
    for _ in range(50):  # engine cycles until the take is answered
        request = frontier.next_request()
        if request is not None:
            break
        worker: Any = frontier.dispatch.worker  # type: ignore[attr-defined]
        wait_until(lambda: reactor.calls or worker.idle(), "the answers", patience=200, interval=0.01)
        reactor.turn()
        clock.advance(1.0)
    assert request is not None and request.url == url
    frontier.request_excluded(request, "robots.txt")
    frontier.fetch_finished(request, duration=0.0, ok=False)
    status, in_flight = state_after_kill(frontier, worker, url)
    assert status == Status.EXCLUDED or in_flight is not None, status


def state_after_kill(frontier: DistributedFrontier, worker: Any, url: str) -> tuple[Any, Any]:
    """``url``'s status and in-flight score in Redis once what the worker
    carried is sent and the store's buffered writes are lost (a SIGKILL)."""
    worker.drain()
    frontier.store.connection.take_buffered()  # SIGKILL: the store's buffered writes are lost
    store = RedisStore(frontier.store.url, frontier.store.keys.prefix)
    store.open()
    fingerprint = url_fingerprint(url)[0]
    try:
        status = store.urls.status_of(fingerprint)
        in_flight = store.call(("ZSCORE", store.keys.inflight("excluded.test"), fingerprint))[0]
    finally:
        store.close()
    return status, in_flight


def test_a_url_excluded_while_queued_is_never_left_in_flight_by_a_kill(
        idle_frontier: tuple[DistributedFrontier, Reactor], clock: Clock) -> None:
    """Its take (through the worker) may run before its EXCLUDED status
    (in the store's buffer) reaches Redis; the FINISH that skips it must not
    go out before that status either, or a SIGKILL leaves the row in flight."""
    frontier, reactor = idle_frontier
    url = "http://excluded.test/queued"
    assert frontier.enqueue_request(Request(url))
    worker: Any = frontier.dispatch.worker  # type: ignore[attr-defined]
    worker.drain()
    reactor.turn()
    frontier.admission.mark_excluded(url)
    for _ in range(20):  # engine cycles: the URL is taken and skipped
        assert frontier.next_request() is None
        wait_until(lambda: reactor.calls or worker.idle(), "the answers", patience=200, interval=0.01)
        reactor.turn()
        clock.advance(1.0)
    status, in_flight = state_after_kill(frontier, worker, url)
    assert status != Status.INFLIGHT or in_flight is not None, status


def test_every_dont_filter_copy_of_a_start_request_is_handed_out_with_the_worker(
        idle_frontier: tuple[DistributedFrontier, Reactor], clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """Was: a ``dont_filter`` copy asked the store whether its URL was queued
    while the previous copy's enqueue still waited in the worker thread, got
    the same fingerprint, and the enqueue script dropped it as a duplicate
    (Scrapy's test_start_dupes on Redis fetched 5 of 6 under load). Here the
    worker thread lags on purpose until the frontier either waits for it or
    has read the URL's status."""
    frontier, reactor = idle_frontier
    worker: Any = frontier.dispatch.worker
    dispatch: Any = frontier.dispatch
    gate = threading.Event()
    worker.submit([("PING",)], None, follow=lambda _answers: gate.wait(30) and None)  # the worker lags
    settle, status_of = dispatch.settle, frontier.store.urls.status_of

    def settling(*args: Any) -> bool:
        gate.set()
        return settle(*args)

    def reading(fp: int) -> Any:
        status = status_of(fp)
        gate.set()
        return status

    monkeypatch.setattr(dispatch, "settle", settling)
    monkeypatch.setattr(frontier.store.urls, "status_of", reading)
    for _ in range(3):
        assert frontier.enqueue_request(Request("http://copies.test/", dont_filter=True,
                                                meta={"is_start_request": True}))
    fetched: list[str] = []
    for _ in range(200):  # engine cycles
        request = frontier.next_request()
        if request is not None:
            fetched.append(request.url)
            frontier.fetch_finished(request, duration=0.0, ok=True)
        wait_until(lambda: reactor.calls or worker.idle(), "the answers", patience=200, interval=0.01)
        reactor.turn()
        if request is None:
            if not frontier.has_pending_requests():
                break
            clock.advance(1.0)
    assert not reactor.errors, reactor.errors
    assert fetched == ["http://copies.test/"] * 3
