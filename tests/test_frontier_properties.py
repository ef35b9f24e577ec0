"""Property-based frontier invariants (hypothesis): every new URL is
dequeued exactly once; back queues never mix hosts; per-host FIFO order
within a priority level; politeness is never violated."""

from __future__ import annotations

import tempfile
from collections import defaultdict
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scrapy import Request
from twisted.internet.task import Clock

from extensions.frontier.politeness import Politeness
from tests.test_frontier_support import make_frontier, make_store

# (host index, path index, depth) triples; duplicates are part of the test.
requests_strategy = st.lists(
    st.tuples(st.integers(0, 6), st.integers(0, 25), st.integers(0, 3)), min_size=1, max_size=120
)
# Interleavings: after each enqueue, how many next_request calls to make.
steps_strategy = st.lists(st.integers(0, 3), min_size=0, max_size=120)


def _check_back_queues(frontier) -> None:
    owners = {index: host for host, index in frontier.dispatch.back.queue_of.items()}
    assert len(owners) == len(frontier.dispatch.back.queue_of)  # one host a queue
    for index, queue in enumerate(frontier.dispatch.back.queues):
        hosts = {entry.host for entry in list(queue.head) + queue.tail}
        owner = owners.get(index)
        assert hosts <= {owner}, f"back queue {index} of {owner} holds {hosts}"


def _run(store_kind, triples, steps, buffer, back_queues, delay, concurrency=1):
    """Enqueue with interleaved scheduling; up to 3 fetches stay in flight
    at once and end oldest first, so per-host limits are really exercised."""
    clock = Clock()
    with tempfile.TemporaryDirectory() as directory:
        store = make_store(store_kind, Path(directory))
        frontier = make_frontier(
            store, clock, queue_buffer=buffer, back_queues=back_queues,
            politeness=Politeness(delay=delay, concurrency=concurrency),
        )
        enqueued, fetched, in_flight = [], [], []
        last_end: dict[str, float] = {}

        def host_of(request):
            return request.url.split("/")[2]

        def finish_oldest():
            request = in_flight.pop(0)
            clock.advance(0.1)
            frontier.fetch_finished(request, duration=0.1)
            last_end[host_of(request)] = clock.seconds()

        def step():
            request = frontier.next_request() if len(in_flight) < 3 else None
            _check_back_queues(frontier)
            if request is None:
                if in_flight:
                    finish_oldest()
                else:
                    clock.advance(0.25)
                return
            host = host_of(request)
            assert sum(host_of(r) == host for r in in_flight) < concurrency, "host over its limit"
            if host in last_end and concurrency == 1:
                assert clock.seconds() >= last_end[host] + delay - 1e-9, "politeness gap"
            fetched.append(request)
            in_flight.append(request)

        for i, (host, path, depth) in enumerate(triples):
            request = Request(f"http://h{host}.test/{path}", meta={"depth": depth})
            if frontier.enqueue_request(request):
                enqueued.append(request)
            for _ in range(steps[i] if i < len(steps) else 0):
                step()
        for _ in range(10_000):
            if not frontier.has_pending_requests() and not in_flight:
                break
            step()
        frontier.close("finished")
        return enqueued, fetched


def _assert_invariants(enqueued, fetched):
    assert sorted(r.url for r in fetched) == sorted(r.url for r in enqueued)
    assert len({r.url for r in fetched}) == len(fetched)  # exactly once
    # per host and depth (one priority level) the order of enqueueing holds
    order = defaultdict(list)
    for r in enqueued:
        order[(r.url.split("/")[2], r.meta["depth"])].append(r.url)
    seen = defaultdict(list)
    for r in fetched:
        seen[(r.url.split("/")[2], r.meta["depth"])].append(r.url)
    assert seen == order


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests_strategy, steps_strategy, st.integers(1, 4), st.integers(1, 4), st.sampled_from([0.0, 0.3]))
def test_memory_store_invariants(triples, steps, buffer, back_queues, delay):
    _assert_invariants(*_run("memory", triples, steps, buffer, back_queues, delay))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests_strategy, steps_strategy, st.integers(1, 3), st.integers(1, 4))
def test_per_host_concurrency_above_one_is_respected(triples, steps, buffer, concurrency):
    _assert_invariants(*_run("memory", triples, steps, buffer, 3, 0.0, concurrency))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(requests_strategy, steps_strategy, st.integers(1, 4), st.integers(1, 4))
def test_sqlite_store_invariants(triples, steps, buffer, back_queues):
    _assert_invariants(*_run("sqlite", triples, steps, buffer, back_queues, 0.0))
