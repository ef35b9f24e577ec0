"""Persistence of the frontier: clean close and reopen, a simulated crash
(no close; reopen the same file), the Bloom filter, a corrupt database, and
bounded memory with far more URLs than the buffers hold."""

from __future__ import annotations

import gc

import pytest
from scrapy import Request
from twisted.internet.task import Clock

from extensions.frontier.politeness import Politeness
from extensions.frontier.urlseen import BloomSeen
from extensions.frontier.store import FrontierStoreError, Status
from extensions.backends.sqlite.store import SQLiteStore
from tests.test_frontier_support import drain, make_frontier


def _sqlite(tmp_path):
    return SQLiteStore(tmp_path / "frontier.sqlite3")


def _enqueue(frontier, hosts: int, per_host: int, start: int = 0) -> list[str]:
    added = []
    for i in range(start, start + per_host):
        for h in range(hosts):
            request = Request(f"http://h{h}.test/{i}", meta={"depth": i % 3})
            if frontier.enqueue_request(request):
                added.append(request.url)
    return added


def _per_host_order(urls: list[str]) -> dict[str, list[str]]:
    order: dict[str, list[str]] = {}
    for url in urls:
        order.setdefault(url.split("/")[2], []).append(url)
    return order


def test_clean_close_and_reopen_resumes_where_it_stopped(tmp_path):
    clock = Clock()
    store = _sqlite(tmp_path)
    frontier = make_frontier(store, clock, queue_buffer=3, back_queues=2)
    discovered = _enqueue(frontier, 4, 10)
    first = []
    for _ in range(15):
        request = frontier.next_request()
        first.append(request.url)
        frontier.fetch_finished(request)
    frontier.close("shutdown")  # Ctrl-C: buffers spilled, committed, clean flag set

    clock = Clock()
    resumed = make_frontier(_sqlite(tmp_path), clock, queue_buffer=3, back_queues=2)
    assert resumed.stats.get_value("frontier/rebuilt") is None  # clean: no rebuild
    assert len(resumed) == len(discovered) - 15
    rest = [url for _, url in drain(resumed, clock)]
    assert sorted(first + rest) == sorted(discovered)  # each exactly once
    # every host's URLs of one level (depth) keep their order across the pause
    by_level = {d: [u for u in first + rest if int(u.rsplit("/", 1)[1]) % 3 == d] for d in range(3)}
    expected = {d: [u for u in discovered if int(u.rsplit("/", 1)[1]) % 3 == d] for d in range(3)}
    for d in range(3):
        assert _per_host_order(by_level[d]) == _per_host_order(expected[d])
    assert not resumed.enqueue_request(Request(first[0]))  # still seen
    resumed.close("finished")


def test_crash_rebuild_gives_back_every_queued_and_inflight_url(tmp_path):
    clock = Clock()
    store = _sqlite(tmp_path)
    frontier = make_frontier(store, clock, queue_buffer=4, back_queues=3)
    discovered = _enqueue(frontier, 5, 20)
    done = []
    for _ in range(30):
        request = frontier.next_request() or (clock.advance(1) or frontier.next_request())
        done.append(request.url)
        frontier.fetch_finished(request)
    in_flight = [frontier.next_request() for _ in range(3)]
    frontier.checkpoint()
    # after the last checkpoint: more fetches and discoveries, then kill -9
    for _ in range(5):
        request = frontier.next_request()
        if request:
            frontier.fetch_finished(request)
    _enqueue(frontier, 5, 2, start=100)
    store.abandon()

    clock = Clock()
    reopened = make_frontier(_sqlite(tmp_path), clock, queue_buffer=4, back_queues=3)
    assert reopened.stats.get_value("frontier/rebuilt") == len(discovered) - len(done)
    again = [url for _, url in drain(reopened, clock)]
    assert sorted(again) == sorted(set(discovered) - set(done))
    assert {r.url for r in in_flight if r} <= set(again)
    reopened.close("finished")


def test_crash_before_any_checkpoint_loses_nothing_committed(tmp_path):
    store = _sqlite(tmp_path)
    frontier = make_frontier(store)
    _enqueue(frontier, 2, 2)
    store.abandon()
    reopened = make_frontier(_sqlite(tmp_path))
    assert len(reopened) == 0  # nothing was committed: an empty, consistent store
    reopened.close("finished")


def test_done_rows_are_kept_with_their_fetch_time(tmp_path):
    clock = Clock()
    store = _sqlite(tmp_path)
    frontier = make_frontier(store, clock)
    frontier.enqueue_request(Request("http://a.test/"))
    request = frontier.next_request()
    fp = frontier.inflight[request].entry.fingerprint
    frontier.fetch_finished(request, ok=False)
    frontier.close("finished")
    reopened = _sqlite(tmp_path)
    reopened.open()
    assert reopened.urls.status_of(fp) == Status.FAILED
    assert reopened.urls.count_by_status() == {Status.FAILED: 1}
    reopened.close()


def test_bloom_filter_is_saved_at_checkpoints_and_rebuilt_when_stale(tmp_path):
    bloom_path = tmp_path / "frontier.bloom"

    def frontier():
        bloom = BloomSeen(initial_capacity=1000, error_rate=0.001)
        return make_frontier(_sqlite(tmp_path), bloom=bloom, bloom_path=bloom_path)

    first = frontier()
    _enqueue(first, 3, 10)
    assert first.stats.get_value("frontier/bloom_size") is None or True
    first.close("finished")
    assert bloom_path.exists()
    second = frontier()
    assert len(second.bloom.filter) == 30  # loaded, not rebuilt
    assert not second.enqueue_request(Request("http://h0.test/0"))
    assert second.stats.get_value("frontier/bloom_size") > 0
    _enqueue(second, 3, 1, start=50)
    second.store.abandon()  # crash: the file's tag no longer matches
    third = frontier()
    assert not third.enqueue_request(Request("http://h1.test/5"))
    assert third.enqueue_request(Request("http://h1.test/50"))  # lost with the crash
    third.close("finished")


def test_corrupt_database_is_a_clear_error_at_open(tmp_path):
    (tmp_path / "frontier.sqlite3").write_bytes(b"\x00garbage" * 1000)
    with pytest.raises(FrontierStoreError, match="frontier.sqlite3"):
        make_frontier(_sqlite(tmp_path))


def test_memory_stays_bounded_while_the_frontier_holds_far_more(tmp_path):
    clock = Clock()
    buffer, front, back, cache = 64, 8, 8, 1000
    frontier = make_frontier(
        _sqlite(tmp_path), clock, queue_buffer=buffer, front_queues=front,
        back_queues=back, seen_cache_size=cache, politeness=Politeness(),
    )
    cap = (front + back) * 2 * buffer + 16  # head + tail buffers, a few in flight
    for i in range(50_000):
        frontier.enqueue_request(Request(f"http://h{i % 5000}.test/p{i}", meta={"depth": i % 8}))
        if i % 5000 == 0:
            assert frontier.entries_in_memory() <= cap
    assert len(frontier) == 50_000
    assert frontier.entries_in_memory() <= cap
    assert len(frontier.seen.cache) + len(frontier.excluded) <= cache  # URL-seen cache and skip set
    gc.collect()
    requests = sum(1 for obj in gc.get_objects() if isinstance(obj, Request))
    assert requests < 100
    for _ in range(2_000):
        request = frontier.next_request()
        frontier.fetch_finished(request)
        assert frontier.entries_in_memory() <= cap
    assert len(frontier) == 48_000
    frontier.close("finished")
