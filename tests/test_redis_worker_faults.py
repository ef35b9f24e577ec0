"""The shared frontier's worker thread (extensions/backends/redis/worker.py)
under the faults that hung or ended crawls early, on a real redis-server.

The worker's answers reach the reactor thread through ``deliver``; here
``deliver`` only collects them, so a test decides when (or whether) the
"reactor" runs them, as a busy or stopped reactor would."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from extensions.frontier.fingerprint import url_fingerprint
from extensions.backends.redis.leases import HostLeases
from extensions.frontier.store import Entry
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.worker import RedisWorker
from testweb.redisserver import shared_server, unique_prefix
from testweb.waiting import wait_until


class Reactor:
    """Collects what the worker hands to the reactor thread; runs it on demand."""

    def __init__(self) -> None:
        self.calls: list[Callable[[], None]] = []
        self.errors: list[Exception] = []

    def deliver(self, function: Callable[[], None]) -> None:
        self.calls.append(function)

    def turn(self) -> None:
        calls, self.calls = self.calls, []
        for function in calls:
            function()


@pytest.fixture
def worker_leases() -> Iterator[tuple[HostLeases, RedisWorker, Reactor]]:
    store = RedisStore(shared_server().url, unique_prefix())
    store.open()
    reactor = Reactor()
    connection = RedisConnection(store.url, retries=0, timeout=5.0)
    connection.attach("test worker")
    worker = RedisWorker(connection, reactor.deliver, reactor.errors.append)
    worker.start()
    leases = HostLeases(store, "A", 10.0, 1)
    leases.io = worker
    yield leases, worker, reactor
    reactor.turn()
    worker.stop()
    store.close()


def entry(url: str) -> Entry:
    fp, host = url_fingerprint(url)
    return Entry(fp, url, host, 0)


def on_heap(leases: HostLeases, host: str) -> bool:
    return leases.store.call(("ZSCORE", leases.heap(host), host))[0] is not None


def test_a_new_hosts_listing_follows_its_enqueue_without_waiting_for_the_reactor(
        worker_leases: tuple[HostLeases, RedisWorker, Reactor]) -> None:
    """Was: the LIST was sent from the ENQUEUE's callback on the reactor
    thread; while a busy reactor had not run it, the host had work and was
    off the heap, and another process that polled then saw an empty heap
    and ended its crawl at once (test_distributed's SIGKILL test, worker on)."""
    leases, worker, reactor = worker_leases
    new = entry("http://listing.test/a")
    answers: list[Any] = []
    leases.enqueue(new.host, [new], False, answers.append)
    # the reactor never turns: the worker lists the host on its own
    wait_until(lambda: on_heap(leases, new.host), "the host on the heap", patience=200, interval=0.01)
    wait_until(lambda: leases.store.call(("HGET", leases.keys.lease(new.host), "listed"))[0] == b"1",
               "the listing confirmed", patience=200, interval=0.01)
    assert answers == []  # the enqueue's own answer still waits for the reactor
    assert not worker.idle()
    reactor.turn()
    assert answers[0][0].new and answers[0][0].listed
    wait_until(worker.idle, "the worker idle", patience=200, interval=0.01)


def _chained_job(key: str, seen: list[Any], failures: list[Exception]) -> tuple[list[Any], Any]:
    """A job and a follow that sends a second job from its answer, with
    callbacks of its own (what a cluster's AOPIC payment does)."""
    def follow(answers: list[Any]) -> tuple[Any, ...]:
        return [("INCRBY", key, int(answers[0]) * 10)], None, seen.append, failures.append
    return [("INCR", key)], follow


def test_a_follow_carries_callbacks_for_the_job_it_sends(
        worker_leases: tuple[HostLeases, RedisWorker, Reactor]) -> None:
    """The worker sends what follows from an answer itself; the followed
    job's ``then`` gets that job's answers on the reactor thread, once."""
    leases, worker, reactor = worker_leases
    key, seen, failures = f"{unique_prefix()}:n", [], []
    first, follow = _chained_job(key, seen, failures)
    worker.submit(first, None, failures.append, follow=follow)
    wait_until(lambda: leases.store.call(("GET", key))[0] == b"11", "the followed INCRBY sent",
               patience=200, interval=0.01)
    assert seen == []  # its callback waits for the reactor
    wait_until(lambda: reactor.calls, "the answers handed to the reactor", patience=200, interval=0.01)
    reactor.turn()
    assert seen == [[11]] and failures == []
    wait_until(worker.idle, "the worker idle", patience=200, interval=0.01)


def test_the_direct_channel_runs_a_follows_callbacks_too() -> None:
    from extensions.backends.redis.worker import DirectIO
    store = RedisStore(shared_server().url, unique_prefix())
    store.open()
    try:
        key, seen, failures = f"{unique_prefix()}:n", [], []
        first, follow = _chained_job(key, seen, failures)
        answered: list[Any] = []
        DirectIO(store).submit(first, answered.append, failures.append, follow=follow)
        assert answered == [[1]] and seen == [[11]] and failures == []
    finally:
        store.close()
