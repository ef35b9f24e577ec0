"""Host leases (extensions/backends/redis/leases.py) on a real redis-server and a
real 3-master Redis Cluster: two "processes" are two stores with leases of
their own on one prefix; one fake clock (milliseconds handed to the scripts)
drives lease expiry and politeness without sleeping."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from extensions.frontier.fingerprint import url_fingerprint
from extensions.backends.redis.leases import (
    HostLeases,
    is_parked,
    level_of_score,
    parked_score,
    queue_score,
)
from extensions.frontier.store import Entry, Status
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.redis.tail import Tail
from tests.redis_helpers import back_list, back_queue_counts, put_cash, queued
from testweb.redisserver import shared_cluster, shared_server, unique_prefix

TTL = 10.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture(params=["single", "cluster"])
def pair(request: pytest.FixtureRequest) -> Iterator[tuple[HostLeases, HostLeases, FakeClock]]:
    url = shared_cluster().url if request.param == "cluster" else shared_server().url
    prefix = unique_prefix()
    clock = FakeClock()
    stores = [RedisStore(url, prefix), RedisStore(url, prefix)]
    for store in stores:
        store.open()
    yield (HostLeases(stores[0], "A", TTL, 4, clock), HostLeases(stores[1], "B", TTL, 4, clock), clock)
    for store in stores:
        store.close()


def entry(url: str, level: int = 0) -> Entry:
    fp, host = url_fingerprint(url)
    return Entry(fp, url, host, level)


def enqueue(leases: HostLeases, *urls: str, level: int = 0) -> list[bool]:
    entries = [entry(url, level) for url in urls]
    return [e.new for e in leases.enqueue(entries[0].host, entries)]


def test_queue_scores_order_higher_levels_first_then_discovery() -> None:
    scores = [queue_score(3, 10), queue_score(3, 11), queue_score(0, 1)]
    assert scores == sorted(scores)
    assert [level_of_score(s) for s in scores] == [3, 3, 0]
    assert level_of_score(b"") == -1


def test_a_new_url_is_queued_once_and_its_host_goes_on_the_heap(pair: Any) -> None:
    a, b, _ = pair
    assert enqueue(a, "http://h1.test/x", "http://h1.test/y") == [True, True]
    assert enqueue(b, "http://h1.test/x") == [False]
    poll = b.poll(10)
    assert poll.hosts == 1 and [host for host, _ in poll.due] == ["h1.test"]
    assert len(queued(a, "h1.test")) == 2


def test_the_host_counts_every_new_url_of_one_enqueue(pair: Any) -> None:
    a, b, _ = pair
    enqueue(a, "http://h1.test/x", "http://h1.test/y", "http://h1.test/z")
    enqueue(b, "http://h1.test/x", "http://h1.test/w")
    assert b.store.urls.count_host(entry("http://h1.test/x").fingerprint, "h1.test") == 4


def test_a_promoted_url_goes_first_and_is_handed_out_once(pair: Any) -> None:
    """A promotion files a copy at the higher level; the copy left behind is
    skipped when reached, so the URL is fetched once."""
    a, _, _ = pair
    enqueue(a, "http://h1.test/x", "http://h1.test/y", "http://h1.test/z")
    a.requeue("h1.test", entry("http://h1.test/z").fingerprint, 5)
    a.acquire(a.poll(10).due)
    first = a.take("h1.test")
    assert first.entry.url == "http://h1.test/z" and level_of_score(first.head) == 0
    assert [a.take("h1.test").entry.url for _ in range(2)] == ["http://h1.test/x", "http://h1.test/y"]
    last = a.take("h1.test")
    assert (last.state, last.skipped) == ("empty", 1)
    assert not a.store.call(("EXISTS", back_list(a.keys, "h1.test", "0")))[0]
    lease = a.store.call(("HGETALL", a.keys.lease("h1.test")))[0]  # the directory's fields went
    assert lease and not back_queue_counts(lease)


def test_a_queued_url_costs_a_list_entry_not_a_sorted_set_member(pair: Any) -> None:
    """A host's back queue is 5-byte members per level (the lease hash's
    first, then a list): MEMORY USAGE of its keys stays near the member's
    own bytes (a sorted set of this many members takes about 90 bytes each,
    a decimal fingerprint 10), and they give the URLs' fingerprints back in order."""
    a, _, _ = pair
    urls = [f"http://h1.test/page/{n}" for n in range(2000)]
    for start in range(0, len(urls), 500):
        enqueue(a, *urls[start:start + 500])
    keys = (a.keys.lease("h1.test"), back_list(a.keys, "h1.test", "0"))
    size = sum(a.store.call(("MEMORY", "USAGE", key, "SAMPLES", "0"))[0] for key in keys)
    fingerprints = [url_fingerprint(url)[0] for url in urls]
    assert queued(a, "h1.test") == fingerprints and size / 2000 < 8.5, size / 2000


def _same_tag_hosts() -> tuple[str, str]:
    """Two host names whose fingerprints share their 24-bit tag (one map of rows)."""
    seen: dict[int, str] = {}
    for number in range(100_000):
        host = f"host-{number}.rows.test"
        tag = url_fingerprint(f"http://{host}/")[0] >> 40
        if tag in seen:
            return seen[tag], host
        seen[tag] = host
    raise AssertionError("no two hosts share a tag")


def test_a_row_leaves_out_its_tags_host_and_reads_back_whole(pair: Any) -> None:
    """The first host of a tag is the map's H: its rows are stored without it
    (MEMORY USAGE per row below the row with its host); a second host of the
    same tag keeps its name in its rows; both read back, are handed out and
    finished whole."""
    a, _, _ = pair
    first, second = _same_tag_hosts()
    urls = [f"http://{first}/page/{n}" for n in range(300)]
    enqueue(a, *urls)
    enqueue(a, f"http://{second}/other")
    key = a.keys.urls(f"{url_fingerprint(urls[0])[0] >> 40 & 0xFFFFFF:06x}")
    stored = a.store.call(("HGETALL", key))[0]
    assert stored[b"H"] == bytes((len(first) * 2,)) + first.encode()  # the host field: length * 2, no port
    buckets = b"".join(a.store.call(*[("GET", bucket) for bucket in a.store.scan(key + ":*")]))
    assert first.encode() not in buckets and second.encode() in buckets
    assert sum(len(value) for field, value in stored.items() if b":" in field) < 301 * 40
    rows = a.store.urls.get_many([entry(url).fingerprint for url in (urls[0], f"http://{second}/other")])
    assert sorted((e.url, e.host) for e in rows.values()) == sorted(
        [(urls[0], first), (f"http://{second}/other", second)])
    for host, url in ((first, urls[0]), (second, f"http://{second}/other")):
        a.acquire([(host, b"0")])
        taken = a.take(host)
        assert (taken.entry.url, taken.entry.host) == (url, host)
        a.finish(host, taken.entry.fingerprint, Status.DONE, 1.0)
    assert a.store.urls.count_by_status() == {Status.QUEUED: 299, Status.DONE: 2}
    done = a.store.urls.get_many([entry(urls[0]).fingerprint])[entry(urls[0]).fingerprint]
    assert (done.url, done.host) == (urls[0], first)


def test_only_one_process_holds_a_host(pair: Any) -> None:
    a, b, _ = pair
    enqueue(a, "http://h1.test/x")
    due = a.poll(10).due
    assert [(got.host, got.taken_over) for got in a.acquire(due)] == [("h1.test", False)]
    assert b.acquire(due) == []
    assert b.take("h1.test").state == "lost"
    assert b.poll(10).due == []  # its heap entry now waits for the lease's expiry


def test_take_hands_out_the_best_url_and_marks_it_in_flight(pair: Any) -> None:
    a, _, _ = pair
    enqueue(a, "http://h1.test/low")
    enqueue(a, "http://h1.test/high", level=5)
    a.acquire(a.poll(10).due)
    taken = a.take("h1.test")
    assert (taken.state, taken.entry.url, taken.queued, level_of_score(taken.head)) == ("taken", "http://h1.test/high", 1, 0)
    assert a.store.urls.status_of(taken.entry.fingerprint) == Status.INFLIGHT
    a.finish("h1.test", taken.entry.fingerprint, Status.DONE, 1.0)
    assert a.store.urls.status_of(taken.entry.fingerprint) == Status.DONE
    assert a.take("h1.test").entry.url == "http://h1.test/low"
    assert a.take("h1.test").state == "empty"


def test_take_brings_the_urls_aopic_cash_row_along(pair: Any) -> None:
    """The dispatch needs the URL's cash (Lambda's turn); it comes in the
    same script, not in a round trip of its own."""
    a, _, _ = pair
    enqueue(a, "http://h1.test/rich", "http://h1.test/poor")
    rich = entry("http://h1.test/rich").fingerprint
    put_cash(a.store, [(rich, 2.5, 0.75, 1)])
    a.acquire(a.poll(10).due)
    trips = a.store.round_trips
    taken = a.take("h1.test")
    assert a.store.round_trips == trips + 1
    assert (taken.entry.fingerprint, taken.cash) == (rich, (2.5, 0.75, 0.0, 1))
    assert a.take("h1.test").cash is None  # never given cash


def test_a_lapsed_lease_gives_its_in_flight_urls_to_the_next_owner(pair: Any) -> None:
    a, b, clock = pair
    enqueue(a, "http://h1.test/x", "http://h1.test/y")
    a.acquire(a.poll(10).due)
    first = a.take("h1.test").entry  # A is killed with this in flight
    clock.advance(TTL - 0.5)
    assert b.poll(10).due == []
    clock.advance(1.0)
    got = b.acquire(b.poll(10).due)
    assert [(g.host, g.recovered, g.queued, g.taken_over) for g in got] == [("h1.test", 1, 2, True)]
    assert b.store.urls.status_of(first.fingerprint) == Status.QUEUED
    assert {b.take("h1.test").entry.url for _ in range(2)} == {"http://h1.test/x", "http://h1.test/y"}
    assert a.take("h1.test").state == "lost"


def test_a_short_level_queue_sits_in_the_lease_hash_and_a_long_one_goes_on_in_its_list(pair: Any) -> None:
    """A level's first 12 members are a field of the host's lease hash (no
    key of their own; the hash stays a listpack); past them the level's list
    takes the rest. Takes keep the discovery order across the two, with the
    in-flight URLs a take-over puts back at the head."""
    a, b, clock = pair
    urls = [f"http://h1.test/p/{n}" for n in range(15)]
    enqueue(a, *urls[:12])
    lease, list_key = a.keys.lease("h1.test"), back_list(a.keys, "h1.test", "0")
    assert a.store.call(("EXISTS", list_key), ("OBJECT", "ENCODING", lease)) == [0, b"listpack"]
    enqueue(a, *urls[12:])
    assert a.store.call(("LLEN", list_key))[0] == 3
    assert back_queue_counts(a.store.call(("HGETALL", lease))[0]) == {b"0": 15}
    assert queued(a, "h1.test") == [entry(url).fingerprint for url in urls]
    a.acquire(a.poll(10).due)
    assert [a.take("h1.test").entry.url for _ in range(2)] == urls[:2]  # A is killed with both in flight
    clock.advance(TTL + 0.5)
    assert [g.recovered for g in b.acquire(b.poll(10).due)] == [2]
    found = queued(b, "h1.test")  # the in-flight URLs first (in the in-flight set's order)
    assert set(found[:2]) == {entry(url).fingerprint for url in urls[:2]}
    assert found[2:] == [entry(url).fingerprint for url in urls[2:]]
    taken = [b.take("h1.test").entry.url for _ in range(15)]
    assert set(taken[:2]) == set(urls[:2]) and taken[2:] == urls[2:]
    assert b.take("h1.test").state == "empty"
    assert a.store.call(("EXISTS", list_key))[0] == 0 and not back_queue_counts(a.store.call(("HGETALL", lease))[0])


def stall_and_take_over(pair: Any) -> tuple[Entry, Entry]:
    """A takes x and stalls past its lease; B takes the host over (x back in
    its queue). Returns x and y, the host's other URL."""
    a, b, clock = pair
    enqueue(a, "http://h1.test/x", "http://h1.test/y")
    a.acquire(a.poll(10).due)
    x = a.take("h1.test").entry
    clock.advance(TTL + 0.5)
    assert [g.recovered for g in b.acquire(b.poll(10).due)] == [1]
    return x, entry("http://h1.test/y")


def test_a_stalled_owners_fetch_ending_before_the_new_owner_takes_the_url_finishes_it(pair: Any) -> None:
    """Else the new owner fetches it a second time (a third, if the stalled
    owner had itself recovered it from a killed process)."""
    a, b, _ = pair
    x, y = stall_and_take_over(pair)
    a.finish("h1.test", x.fingerprint, Status.DONE, 1.0)
    a.store.checkpoint()  # send A's buffered writes
    assert b.store.urls.status_of(x.fingerprint) == Status.DONE
    assert b.take("h1.test").entry.url == y.url
    assert b.take("h1.test").state == "empty"


def test_a_stalled_owner_leaves_a_url_the_new_owner_has_in_flight_alone(pair: Any) -> None:
    a, b, _ = pair
    x, _ = stall_and_take_over(pair)
    assert b.take("h1.test").entry.url == x.url
    a.finish("h1.test", x.fingerprint, Status.DONE, 1.0)
    a.put_back("h1.test", x.fingerprint, level=7)  # nor does a late put-back queue it again
    a.store.checkpoint()
    assert b.store.urls.status_of(x.fingerprint) == Status.INFLIGHT
    assert b.inflight_of(["h1.test"]) == {"h1.test": [x.fingerprint]}
    assert b.take("h1.test").entry.url == "http://h1.test/y"
    assert b.take("h1.test").state == "empty"


def test_renewal_keeps_a_lease_past_its_ttl(pair: Any) -> None:
    a, b, clock = pair
    enqueue(a, "http://h1.test/x")
    a.acquire(a.poll(10).due)
    for _ in range(3):
        clock.advance(TTL * 0.6)
        assert a.renew({"h1.test": 0.0})["h1.test"] > 0
        assert b.acquire(b.poll(10).due) == []


def test_politeness_state_travels_with_the_lease(pair: Any) -> None:
    a, b, clock = pair
    enqueue(a, "http://h1.test/x", "http://h1.test/y")
    a.acquire(a.poll(10).due)
    a.take("h1.test")
    state, _, _ = a.release("h1.test", wait=2.0, idle_only=False, heap_score=None)
    a.store.checkpoint()
    assert state == 1
    assert b.poll(10).due == []  # back on the heap at its next fetch time
    clock.advance(1.0)
    assert b.poll(10).due == []
    clock.advance(1.01)
    got = b.acquire(b.poll(10).due)
    assert [(g.wait, g.queued) for g in got] == [(0.0, 2)]  # the one in flight went back


def test_acquire_reports_the_time_left_before_the_next_fetch(pair: Any) -> None:
    a, b, clock = pair
    enqueue(a, "http://h1.test/x", "http://h1.test/y")
    a.acquire(a.poll(10).due)
    a.renew({"h1.test": 3.0})
    a.store.call(("HSET", a.keys.lease("h1.test"), "expires", int(clock.now * 1000)))  # lapses now
    clock.advance(0.5)
    got = b.acquire([("h1.test", b"0")])
    assert got and abs(got[0].wait - 2.5) < 0.01


def test_an_idle_release_keeps_a_host_that_got_work(pair: Any) -> None:
    a, b, _ = pair
    enqueue(a, "http://h1.test/x")
    held = a.acquire(a.poll(10).due)[0]
    fp = a.take("h1.test").entry.fingerprint
    enqueue(b, "http://h1.test/new")  # another process links to the held host
    a.finish("h1.test", fp, Status.DONE)
    assert a.release("h1.test", 0.0, idle_only=True, heap_score=held.expires)[:2] == (0, 1)
    fp = a.take("h1.test").entry.fingerprint
    assert a.release("h1.test", 0.0, idle_only=True, heap_score=held.expires)[0] == 0  # in flight
    a.finish("h1.test", fp, Status.DONE)
    assert a.release("h1.test", 0.0, idle_only=True, heap_score=held.expires)[0] == 1
    assert a.poll(10).hosts == 0


def test_a_host_emptied_and_relisted_at_once_stays_on_the_heap(pair: Any) -> None:
    """A poller finds the host idle and takes it off the heap while another
    process lists it again: whichever write lands last, the listing wins."""
    a, b, clock = pair
    enqueue(a, "http://h1.test/x")
    a.acquire(a.poll(10).due)
    fp = a.take("h1.test").entry.fingerprint
    a.finish("h1.test", fp, Status.DONE)
    a.release("h1.test", 0.0, idle_only=False, heap_score=None)  # released; its heap entry left behind
    clock.advance(TTL + 1)
    stale = b.poll(10).due
    assert b.acquire(stale) == []  # idle: B's removal waits in its pipeline...
    enqueue(a, "http://h1.test/y")  # ...while A lists the host again
    b.store.checkpoint()
    assert [host for host, _ in b.poll(10).due] == ["h1.test"]


def test_a_poller_removes_an_idle_host_from_the_heap(pair: Any) -> None:
    a, b, clock = pair
    enqueue(a, "http://h1.test/x")
    a.acquire(a.poll(10).due)
    a.finish("h1.test", a.take("h1.test").entry.fingerprint, Status.DONE)
    a.release("h1.test", 0.0, idle_only=False, heap_score=None)
    clock.advance(TTL + 1)
    assert b.acquire(b.poll(10).due) == []
    assert b.poll(10).hosts == 0
    enqueue(b, "http://h1.test/y")
    assert b.poll(10).hosts == 1


def test_a_host_queued_but_never_listed_is_found_by_the_sweep(pair: Any) -> None:
    a, b, _ = pair
    enqueue(a, "http://h1.test/x")
    heap = a.heap("h1.test")
    a.store.call(("ZREM", heap, "h1.test"))  # as if killed between the enqueue and the listing
    a.store.call(("HSET", a.keys.lease("h1.test"), "listed", "0"))
    assert b.poll(10).hosts == 0
    assert b.sweep_orphans() == 1
    assert [host for host, _ in b.poll(10).due] == ["h1.test"]
    assert b.sweep_orphans() == 0


def test_a_sweep_looks_at_every_host_in_a_few_round_trips(pair: Any) -> None:
    """Run when a process finds nothing to do: one round trip per host would
    hold its reactor thread for as many round trips as the crawl has hosts."""
    a, b, _ = pair
    hosts = [f"h{i}.test" for i in range(12)]
    for host in hosts:
        enqueue(a, f"http://{host}/x")
    before = b.store.connection.round_trips
    assert b.sweep_orphans() == 0
    assert b.store.connection.round_trips - before <= 2  # the scan, then the twelve hosts' checks at once
    for host in hosts[::3]:  # four orphans: queued, never listed
        a.store.call(("ZREM", a.heap(host), host), ("HSET", a.keys.lease(host), "listed", "0"))
    assert b.sweep_orphans() == 4
    assert sorted(host for host, _ in b.poll(20).due) == sorted(hosts)


def test_an_unconfirmed_listing_is_repaired_by_the_next_enqueue(pair: Any) -> None:
    a, b, _ = pair
    enqueue(a, "http://h1.test/x")
    a.store.call(("ZREM", a.heap("h1.test"), "h1.test"))
    a.store.call(("HSET", a.keys.lease("h1.test"), "listed", "0"))
    assert enqueue(b, "http://h1.test/x") == [False]  # a re-fetched parent links to it again
    assert b.poll(10).hosts == 1


def test_put_back_and_requeue_keep_a_url_queued_once(pair: Any) -> None:
    a, _, _ = pair
    enqueue(a, "http://h1.test/x", "http://h1.test/y")
    a.acquire(a.poll(10).due)
    taken = a.take("h1.test").entry
    a.put_back("h1.test", taken.fingerprint, level=7)
    assert a.store.urls.status_of(taken.fingerprint) == Status.QUEUED
    assert a.take("h1.test").entry.url == taken.url
    y = a.take("h1.test").entry
    a.requeue("h1.test", y.fingerprint, 2)
    assert queued(a, "h1.test") == []  # y is in flight: not queued again


def test_stats_add_up_over_processes(pair: Any) -> None:
    a, b, _ = pair
    a.add_stats([("frontier/done", 3), ("elapsed", 1.5)])
    b.add_stats([("frontier/done", 4), ("elapsed", 0.25)])
    b.store.checkpoint()
    assert a.stats_totals() == {"frontier/done": 7, "elapsed": 1.75}


def test_processes_are_counted_until_they_leave_or_expire(pair: Any) -> None:
    a, b, clock = pair
    assert a.heartbeat(5.0) == 2  # B is a member since its store opened (before it touched a key)
    assert b.heartbeat(5.0) == 2
    assert a.leave() == 1
    clock.advance(6.0)
    assert a.heartbeat(5.0) == 1  # B's heartbeat expired


# -- held origins: parked behind the host's other origins ---------------------

def test_parked_scores_come_after_every_level_in_their_own_order() -> None:
    parked = [parked_score(queue_score(7, 5)), parked_score(queue_score(7, 6)), parked_score(queue_score(0, 1))]
    assert parked == sorted(parked) and min(parked) > queue_score(0, (1 << 40) - 1)
    assert all(is_parked(score) for score in parked) and not is_parked(queue_score(0, 1))
    assert all(level_of_score(score) == -1 for score in parked)


def test_take_parks_a_held_origins_urls_and_hands_out_the_hosts_other_origin(pair: Any) -> None:
    a, _, _ = pair
    enqueue(a, "https://h1.test/s0", "https://h1.test/s1", level=5)
    enqueue(a, "http://h1.test/p0", "HTTP://h1.test:80/p1")  # another origin each, not held
    a.acquire(a.poll(10).due)
    taken = a.take("h1.test", ["https://h1.test"])
    assert (taken.state, taken.entry.url, taken.parked) == ("taken", "http://h1.test/p0", 2)
    assert a.take("h1.test", ["https://h1.test"]).entry.url == "HTTP://h1.test:80/p1"
    only = a.take("h1.test", ["https://h1.test"])
    assert (only.state, only.queued, only.parked) == ("held", 2, 0) and is_parked(only.head)
    for fp in queued(a, "h1.test"):
        assert a.store.urls.status_of(fp) == Status.QUEUED
    # the hold ended: back in their places, the higher level first
    assert a.unpark("h1.test")[0] == 2
    enqueue(a, "http://h1.test/p2")
    assert [a.take("h1.test").entry.url for _ in range(3)] == [
        "https://h1.test/s0", "https://h1.test/s1", "http://h1.test/p2"]


def test_a_host_with_more_parked_urls_than_a_take_looks_at_is_held_not_stale(pair: Any) -> None:
    """Once only a held origin's URLs are left, however many, the take says
    "held" (look again when the hold ends), never "stale" (look again now:
    a process would spin on the host while the hold lasts)."""
    a, _, _ = pair
    urls = [f"https://h1.test/s{n}" for n in range(150)]
    enqueue(a, *urls)
    a.acquire(a.poll(10).due)
    states = [a.take("h1.test", ["https://h1.test"], max_skip=64).state for _ in range(4)]
    assert states == ["stale", "stale", "held", "held"], states
    assert sorted(queued(a, "h1.test")) == sorted(entry(url).fingerprint for url in urls)


def test_a_parked_url_stays_parked_through_a_promotion_and_a_take_over(pair: Any) -> None:
    """An AOPIC promotion moves it up, the next take parks it again; a
    process killed with it in flight loses nothing: the take-over queues it."""
    a, b, clock = pair
    enqueue(a, "https://h1.test/s0", "http://h1.test/p0", "http://h1.test/p1")
    a.acquire(a.poll(10).due)
    assert a.take("h1.test", ["https://h1.test"]).entry.url == "http://h1.test/p0"
    s0 = entry("https://h1.test/s0")
    a.requeue("h1.test", s0.fingerprint, 7)
    assert a.take("h1.test", ["https://h1.test"]).entry.url == "http://h1.test/p1"
    assert a.take("h1.test", ["https://h1.test"]).state == "held"
    assert a.take("h1.test").entry.url == s0.url  # the hold ended elsewhere: handed out from the tail
    clock.advance(TTL + 1)  # a dies with p0, p1 and s0 in flight
    got = b.acquire(b.poll(10).due)
    # queued: the three, and s0's parked copy from before its promotion (skipped when reached)
    assert [(g.host, g.recovered, g.queued) for g in got] == [("h1.test", 3, 4)]
    assert sorted(set(queued(b, "h1.test"))) == sorted(entry(url).fingerprint for url in (
        "https://h1.test/s0", "http://h1.test/p0", "http://h1.test/p1"))
    taken = b.take("h1.test", ["https://h1.test"])
    assert taken.entry.url in ("http://h1.test/p0", "http://h1.test/p1")
    assert b.take("h1.test", ["https://h1.test"]).entry.url in ("http://h1.test/p0", "http://h1.test/p1")
    assert b.take("h1.test", ["https://h1.test"]).state == "held"
    b.put_back("h1.test", taken.entry.fingerprint, 0, parked=True)
    assert b.store.urls.status_of(taken.entry.fingerprint) == Status.QUEUED


@pytest.fixture(params=["single", "cluster"])
def windowed(request: pytest.FixtureRequest) -> Iterator[HostLeases]:
    """A process whose hosts keep 2 URLs in their back queue (the rest in their tail),
    on a store with the exact URL-seen set (the tail needs one)."""
    url = shared_cluster().url if request.param == "cluster" else shared_server().url
    store = RedisStore(url, unique_prefix(), seen=FingerprintSetLayout())
    store.open()
    store.urls.tails = True
    yield HostLeases(store, "A", TTL, 4, FakeClock(), window=2)
    store.close()


def tail_bytes(leases: HostLeases, host: str) -> int:
    return leases.store.call(("MEMORY", "USAGE", leases.keys.tail(host), "SAMPLES", "0"))[0] or 0


def test_a_queue_past_its_window_waits_compressed_in_its_tail_and_comes_back_in_order(windowed: Any) -> None:
    """Past 2 queued URLs a host's new URLs get no row and no list entry: they
    go to its tail, which the enqueuer compresses into blocks (far below a
    row's bytes a URL); a duplicate of a tail URL is still not new; the
    readers of rows find tail URLs queued; takes hand out every URL once, in
    discovery order, refilling the window from the tail; nothing is left.
    A URL's record keeps its fingerprint only when the URL does not give it
    (a POST's here)."""
    a = windowed
    urls = [f"http://h1.test/section/page-{n}.html" for n in range(300)]
    entries = [entry(url) if n % 10 != 5 else
               Entry(url_fingerprint(url, "POST", b"q")[0], url, "h1.test") for n, url in enumerate(urls)]
    for start in range(0, len(urls), 50):
        assert [e.new for e in a.enqueue("h1.test", entries[start:start + 50])] == [True] * 50
    assert enqueue(a, urls[0], urls[-1]) == [False, False]
    lease = a.store.call(("HGETALL", a.keys.lease("h1.test")))[0]
    assert back_queue_counts(lease) == {b"0": 2} and int(lease[b"t"]) == 298
    assert Tail.parse(a.store.call(("GET", a.keys.tail("h1.test")))[0]).blocks
    assert tail_bytes(a, "h1.test") / 298 < 8, tail_bytes(a, "h1.test") / 298  # no 5-byte member but the POSTs' 
    fingerprints = [e.fingerprint for e in entries]
    assert queued(a, "h1.test") == fingerprints
    assert a.store.urls.status_of(fingerprints[200]) == a.store.urls.status_of(fingerprints[205]) == Status.QUEUED
    assert a.store.urls.get_many([fingerprints[250]])[fingerprints[250]].url == urls[250]
    assert a.store.urls.count_by_status()[Status.QUEUED] == 300
    a.acquire(a.poll(10).due)
    taken, refilled = [], 0
    for _ in range(300):
        got = a.take("h1.test")
        assert got.state == "taken", got
        refilled += got.refilled
        taken.append(got.entry.fingerprint)
        a.finish("h1.test", got.entry.fingerprint, Status.DONE, 1.0)
    assert taken == fingerprints and refilled + a.refilled_ahead == 298
    assert a.refilled_ahead > 0  # the window refilled at half, before it emptied
    assert a.take("h1.test").state == "empty"
    assert not list(a.store.scan(a.keys.tails_pattern))
    assert b"t" not in a.store.call(("HGETALL", a.keys.lease("h1.test")))[0]


def test_a_refill_from_a_block_another_process_changed_does_nothing(windowed: Any) -> None:
    """Two processes may read a host's oldest block at once: the refill whose
    block is no longer the oldest changes nothing (no URL moved twice)."""
    a = windowed
    urls = [f"http://h2.test/p/{n}" for n in range(100)]
    enqueue(a, *urls)
    enqueue(a, "http://h2.test/last")  # an enqueue once the records pass STRING_BYTES compacts them
    read = a.store.call(("GET", a.keys.tail("h2.test")))[0]
    assert Tail.parse(read).blocks
    stale = a._refill_command("h2.test", read[:-1] + bytes([read[-1] ^ 1]))  # what another reader saw
    before = a.store.call(("HGETALL", a.keys.lease("h2.test")), ("GET", a.keys.tail("h2.test")))
    assert a.store.call(stale)[0] == -1
    assert a.store.call(("HGETALL", a.keys.lease("h2.test")), ("GET", a.keys.tail("h2.test"))) == before
    assert a.store.call(a._refill_command("h2.test", read))[0] == 2  # a window's worth
    assert back_queue_counts(a.store.call(("HGETALL", a.keys.lease("h2.test")))[0]) == {b"0": 4}
