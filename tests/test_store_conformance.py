"""The frontier store contract, one suite over every backend.

Backends: memory, a third-party one plugged in by class path (it wraps the
memory one: :mod:`tests.thirdparty_backend`), SQLite, Redis (a real single ``redis-server``) and Redis
Cluster (three real ``redis-server`` processes as a 3-master cluster), both
in a crawl's layout (the exact fingerprint set, with buckets of four so that
they split all the time) and with the URL-seen Bloom filter (``-bloom``);
both trim finished rows: there a finished URL stays seen but its status
is gone (:meth:`Backend.finished`). Each persistent backend also runs a
``-reopen`` variant: ``cycle()`` closes the store and opens a new one on the
same file or server and prefix, so every assertion after it proves
persistence (as Scrapy's ``tests/test_scheduler.py`` does for its queues).
A missing ``redis-server`` fails the Redis variants.
"""

from __future__ import annotations

import math
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.store import (
    CashTable,
    ContentGroups,
    Entry,
    FrontierStore,
    FrontierStoreError,
    HostTable,
    LinkTable,
    QueuedStore,
    RequestQueues,
    RevisitCounts,
    RevisitRecord,
    RevisitTable,
    Status,
    URLCensus,
    URLTable,
    WritableCashTable,
)
from extensions.backends import backend_class
from extensions.backends.memory.backend import MemoryStore
from extensions.backends.redis.store import RedisStore
from extensions.linkgraph.segmentlinks import SegmentLinkTable
from extensions.backends.redis.revisits import TAKE
from extensions.backends.redis.bloom import BloomLayout
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.sqlite.store import SQLiteStore
from testweb.redisserver import free_port, shared_cluster, shared_server, unique_prefix
from tests.aopic_helpers import cash_sums

PERSISTENT = ["sqlite", "redis", "redis-cluster", "redis-bloom", "redis-cluster-bloom"]
BLOOM = BloomLayout(100_000, 0.001)
#: a backend plugged in by class path from outside the product (it wraps the memory one)
THIRD_PARTY = "tests.thirdparty_backend.ThirdPartyBackend"
#: stores in this process: no round trips to save, no memory figure of their own
EMBEDDED = ("sqlite", "memory", "third-party")
KINDS = ["memory", "third-party", *PERSISTENT, *(f"{kind}-reopen" for kind in PERSISTENT)]
#: backends that leave the host dispatch and the AOPIC ledger to the frontier: their stores
#: keep its request queues and a cash table it writes (Redis' scripts write its own)
LOCAL = [kind for kind in KINDS if not kind.startswith("redis")]


class Backend:
    """A store factory for one backend; ``cycle()`` reopens when asked to."""

    def __init__(self, kind: str, directory: Path, reopen: bool) -> None:
        self.kind, self.directory, self.reopen = kind, directory, reopen
        self.prefix = unique_prefix()
        self.store = self.open()

    def new(self) -> Any:
        if self.kind == "memory":
            return MemoryStore()
        if self.kind == "third-party":
            settings = Settings({"FRONTIER_BACKEND": THIRD_PARTY})
            return backend_class(settings).for_reading(settings).frontier_store()[0]
        if self.kind == "sqlite":
            return SQLiteStore(self.directory / "frontier.sqlite3")
        server = shared_cluster() if self.kind.startswith("redis-cluster") else shared_server()
        # a crawl's default layout: the exact fingerprint set, finished rows trimmed
        return RedisStore(server.url, self.prefix,
                          seen=BLOOM if self.kind.endswith("-bloom") else FingerprintSetLayout(bucket=4),
                          links=SegmentLinkTable(self.directory / "linksegments"))

    def finished(self, status: Status) -> Status | None:
        """What ``status_of`` says of a URL finished in ``status``: nothing
        where finished rows are trimmed (the URL-seen set keeps it seen)."""
        return None if getattr(self.store.urls, "trims", False) else status

    def open(self) -> Any:
        store = self.new()
        store.open()
        return store

    def cycle(self) -> Any:
        if self.reopen:
            self.store.close()
            self.store = self.open()
        return self.store

    def crash(self) -> Any:
        """Drop the store without a clean close, then open it again."""
        self.store.checkpoint()
        self.store.abandon()
        self.store = self.open()
        return self.store


def opened_backend(param: str, tmp_path: Path) -> Iterator[Backend]:
    """A fixture's backend of kind ``param`` (``-reopen``: reopened at each cycle), closed at the end."""
    wrapper = Backend(param.removesuffix("-reopen"), tmp_path, param.endswith("-reopen"))
    yield wrapper
    wrapper.store.close()


@pytest.fixture(params=KINDS)
def backend(request: Any, tmp_path: Path) -> Any:
    yield from opened_backend(request.param, tmp_path)


@pytest.fixture(params=LOCAL)
def local(request: Any, tmp_path: Path) -> Any:
    yield from opened_backend(request.param, tmp_path)


@pytest.fixture(params=PERSISTENT)
def persistent(request: Any, tmp_path: Path) -> Any:
    wrapper = Backend(request.param, tmp_path, reopen=True)
    yield wrapper
    wrapper.store.close()


def entry(fp: int, host: str = "a.test", level: int = 0) -> Entry:
    return Entry(fp, f"http://{host}/{fp}", host, level)


def real(url: str, level: int = 0) -> Entry:
    """An entry with the fingerprint the frontier would give ``url``."""
    fp, host = url_fingerprint(url)
    return Entry(fp, url, host, level)


# -- protocols --------------------------------------------------------------------
def test_store_implements_every_protocol(backend: Backend) -> None:
    store = backend.store
    assert isinstance(store, FrontierStore)
    # Redis' host dispatch keeps its own queues (host leases); the frontier's needs the store's
    assert isinstance(store, QueuedStore) == (not backend.kind.startswith("redis"))
    assert not isinstance(store, QueuedStore) or isinstance(store.queues, RequestQueues)
    assert isinstance(store.cash, WritableCashTable) == (not backend.kind.startswith("redis"))
    assert isinstance(store.urls, URLTable)
    assert isinstance(store.hosts, HostTable)
    assert isinstance(store.cash, CashTable)
    assert isinstance(store.links, LinkTable)
    assert isinstance(store.revisits, RevisitTable)
    assert isinstance(store.census, URLCensus)
    assert isinstance(store.groups, ContentGroups)
    # what callers read without probing: every store has these
    assert isinstance(store.round_trips, int)
    assert callable(store.abandon)


def test_the_local_dispatch_names_a_store_without_request_queues() -> None:
    """A backend whose host_dispatch is None hands out a QueuedStore: the
    frontier's own dispatch refuses any other store, naming it."""
    from extensions.frontier.localdispatch import LocalDispatch  # noqa: PLC0415
    from extensions.frontier.scheduler import Frontier  # noqa: PLC0415
    from testweb.frontierargs import frontier_arguments  # noqa: PLC0415

    with pytest.raises(TypeError, match="RedisStore has no request queues"):
        Frontier(RedisStore(shared_server().url, unique_prefix()), **frontier_arguments(dispatch=LocalDispatch()))
    assert isinstance(Frontier(MemoryStore(), **frontier_arguments(dispatch=LocalDispatch())).dispatch, LocalDispatch)


def test_each_table_is_an_object_of_its_own_with_only_its_protocol(backend: Backend) -> None:
    store = backend.store
    tables = {"urls": URLTable, "hosts": HostTable, "cash": CashTable,
              "groups": ContentGroups, "links": LinkTable, "revisits": RevisitTable, "census": URLCensus}
    if isinstance(store, QueuedStore):
        tables["queues"] = RequestQueues
    assert len({id(getattr(store, name)) for name in tables}) == len(tables)
    for name, protocol in tables.items():
        if name != "census":  # whose one method is named as the store's table
            assert not isinstance(store, protocol), f"the store itself answers {protocol.__name__}"
        others = [other for other in tables if other != name and isinstance(getattr(store, other), protocol)]
        assert not others, f"{others} also answer {protocol.__name__}"


def test_memory_usage_is_measured_or_none(backend: Backend) -> None:
    store = backend.store
    store.urls.insert_new([real("http://a.test/1"), real("http://a.test/2")], 0.0)
    store.checkpoint()
    usage = store.memory_usage()
    if backend.kind.startswith(EMBEDDED):
        assert usage is None
    else:
        assert usage is not None and usage[1] == 2 and usage[0] >= 0


# -- request queues (a backend whose host dispatch is the frontier's) ----------------
def test_queues_are_fifo_per_name(local: Backend) -> None:
    local.store.queues.push("front/0", [1, 2, 3])
    local.store.queues.push("front/1", [10])
    local.store.queues.push("front/0", [4])
    queues = local.cycle().queues
    assert queues.length("front/0") == 4
    assert queues.pop("front/0", 2) == [1, 2]
    assert queues.pop("front/1", 5) == [10]
    assert queues.pop("front/0", 5) == [3, 4]
    assert queues.pop("front/0", 5) == []
    assert queues.length("front/0") == 0


def test_push_front_puts_items_back_at_the_head_in_order(local: Backend) -> None:
    local.store.queues.push("back/0", [3, 4])
    local.store.queues.push_front("back/0", [1, 2])
    local.store.queues.push_front("back/0", [0])
    assert local.cycle().queues.pop("back/0", 10) == [0, 1, 2, 3, 4]


def test_pop_takes_at_most_count_and_length_follows(local: Backend) -> None:
    queues = local.store.queues
    queues.push("back/1", list(range(100, 110)))
    assert queues.pop("back/1", 3) == [100, 101, 102]
    queues = local.cycle().queues
    assert queues.length("back/1") == 7
    assert queues.pop("back/1", 100) == list(range(103, 110))
    assert queues.length("back/1") == 0
    assert queues.pop("never/pushed", 5) == [] and queues.length("never/pushed") == 0


def test_pushing_nothing_changes_nothing(local: Backend) -> None:
    local.store.queues.push("front/0", [])
    local.store.queues.push_front("front/0", [])
    assert local.cycle().queues.length("front/0") == 0


def test_extreme_fingerprints_round_trip(local: Backend) -> None:
    fps = [-(1 << 63), -1, 0, 1, (1 << 63) - 1]
    local.store.queues.push("q", fps)
    assert local.cycle().queues.pop("q", 10) == fps


def test_clear_empties_every_queue(local: Backend) -> None:
    local.store.queues.push("a", [1])
    local.store.queues.push("b", [2])
    local.store.queues.clear()
    store = local.cycle()
    assert store.queues.length("a") == store.queues.length("b") == 0
    assert store.queues.pop("a", 5) == []


def test_clear_after_reopen_also_empties_queues_of_the_previous_run(local: Backend) -> None:
    local.store.queues.push("front/3", [1, 2])
    store = local.cycle()
    store.queues.clear()
    assert local.cycle().queues.length("front/3") == 0


# -- URL table -----------------------------------------------------------------------
def test_extreme_fingerprints_are_rows_like_any_other(backend: Backend) -> None:
    fps = [-(1 << 63), -1, 0, 1, (1 << 63) - 1]
    backend.store.urls.insert_new([entry(fp) for fp in fps], 1.0)
    assert sorted(backend.cycle().urls.get_many(fps)) == sorted(fps)


def test_insert_new_is_add_if_new_and_keeps_the_first_entry(backend: Backend) -> None:
    urls = backend.store.urls
    assert urls.insert_new([entry(1), entry(2)], 1.0) == [True, True]
    assert urls.insert_new([Entry(1, "http://other/", "other"), entry(3)], 2.0) == [False, True]
    assert urls.insert_new([], 3.0) == []
    urls = backend.cycle().urls
    assert urls.get_many([1])[1].url == "http://a.test/1"
    assert urls.status_of(1) == Status.QUEUED
    assert urls.status_of(99) is None


def test_insert_new_reports_a_repeat_inside_one_batch_as_known(backend: Backend) -> None:
    assert backend.store.urls.insert_new([entry(7), entry(8), entry(7)], 1.0) == [True, True, False]


def test_insert_new_of_a_done_url_leaves_it_done(backend: Backend) -> None:
    urls = backend.store.urls
    urls.insert_new([entry(1)], 1.0)
    urls.set_status([1], Status.DONE, 2.0)
    assert urls.insert_new([entry(1)], 3.0) == [False]
    urls = backend.cycle().urls
    assert urls.status_of(1) == backend.finished(Status.DONE)
    assert urls.insert_new([entry(1)], 4.0) == [False]


def test_entries_round_trip_every_field(backend: Backend) -> None:
    full = Entry(-5, "http://x.test/p?q=1", "x.test", 3, -2, 7, "http://r.test/", 9, '{"cb":"p"}', b"\x00blob")
    odd = Entry(6, "http://bücher.test/ä?x=ü", "bücher.test", 0, 2**40, 0, "", 0, "", b"")
    backend.store.urls.insert_new([full, odd], 1.0)
    assert backend.cycle().urls.get_many([-5, 6]) == {-5: full, 6: odd}


def test_get_many_returns_only_known_entries(backend: Backend) -> None:
    wanted = [real(f"http://h{i}.test/p") for i in range(20)]
    backend.store.urls.insert_new(wanted, 1.0)
    urls = backend.cycle().urls
    found = urls.get_many([e.fingerprint for e in wanted] + [12345])
    assert found == {e.fingerprint: e for e in wanted}
    assert urls.get_many([]) == {}


def test_requeue_overwrites_and_sets_queued(backend: Backend) -> None:
    urls = backend.store.urls
    urls.insert_new([entry(1)], 1.0)
    urls.set_status([1], Status.DONE, 2.0)
    urls.requeue(Entry(1, "http://a.test/new", "a.test", 5), 3.0)
    urls.requeue(entry(2), 3.0)  # unknown: inserted
    urls = backend.cycle().urls
    assert urls.status_of(1) == Status.QUEUED
    assert urls.get_many([1])[1] == Entry(1, "http://a.test/new", "a.test", 5)
    assert urls.status_of(2) == Status.QUEUED


def test_set_status_only_from_guards_the_transition(backend: Backend) -> None:
    urls = backend.store.urls
    urls.insert_new([entry(1), entry(2)], 1.0)
    urls.set_status([1], Status.INFLIGHT)
    urls.set_status([1, 2], Status.DONE, 5.0, only_from=Status.INFLIGHT)
    urls = backend.cycle().urls
    assert urls.status_of(1) == backend.finished(Status.DONE)
    assert urls.status_of(2) == Status.QUEUED


def test_set_status_ignores_unknown_fingerprints_and_takes_any_iterable(backend: Backend) -> None:
    urls = backend.store.urls
    urls.insert_new([entry(1)], 1.0)
    urls.set_status(iter([1, 404]), Status.EXCLUDED)
    urls = backend.cycle().urls
    assert urls.status_of(1) == backend.finished(Status.EXCLUDED)
    assert urls.status_of(404) is None
    assert urls.get_many([404]) == {}


def test_every_status_round_trips(backend: Backend) -> None:
    urls = backend.store.urls
    urls.insert_new([entry(int(status) + 1) for status in Status], 1.0)
    for status in Status:
        urls.set_status([int(status) + 1], status, 2.0)
    urls = backend.cycle().urls
    assert [urls.status_of(int(status) + 1) for status in Status] == [
        status if status in (Status.QUEUED, Status.INFLIGHT, Status.DEFERRED) else backend.finished(status)
        for status in Status]  # a deferred row waits for a resume: never trimmed
    assert urls.count_by_status() == {status: 1 for status in Status}


def test_iter_all_gives_every_known_url_with_its_level(backend: Backend) -> None:
    urls = backend.store.urls
    urls.insert_new([entry(30, level=1), entry(10, level=2), entry(20)], 1.0)
    urls.insert_new([entry(5)], 2.0)
    urls.set_status([20], Status.INFLIGHT)
    urls.set_status([5], Status.DONE)
    done = [(5, 0)] if backend.finished(Status.DONE) else []
    assert sorted(backend.cycle().urls.iter_all()) == [*done, (10, 2), (20, 0), (30, 1)]


def test_iter_pending_gives_queued_and_inflight_in_discovery_order(local: Backend) -> None:
    urls = local.store.urls
    urls.insert_new([entry(30, level=1), entry(10, level=2), entry(20)], 1.0)
    urls.insert_new([entry(5)], 2.0)
    urls.set_status([20], Status.INFLIGHT)
    urls.set_status([5], Status.DONE)
    urls = local.cycle().urls
    assert list(urls.iter_pending(batch=2)) == [(30, 1), (10, 2), (20, 0)]
    assert urls.requeue_inflight() == 1
    assert urls.count_by_status() == {Status.QUEUED: 3, Status.DONE: 1}


def test_a_requeued_url_moves_to_the_end_of_discovery_order(local: Backend) -> None:
    urls = local.store.urls
    urls.insert_new([entry(1), entry(2), entry(3)], 1.0)
    urls.requeue(entry(1, level=4), 2.0)
    assert list(local.cycle().urls.iter_pending()) == [(2, 0), (3, 0), (1, 4)]


def test_discovery_order_holds_across_many_hosts(local: Backend) -> None:
    entries = [real(f"http://h{i % 37}.test/{i}") for i in range(300)]
    urls = local.store.urls
    for start in range(0, 300, 50):
        urls.insert_new(entries[start:start + 50], 1.0)
    assert [fp for fp, _ in local.cycle().urls.iter_pending()] == [e.fingerprint for e in entries]


def test_requeue_inflight_on_an_idle_store_changes_nothing(local: Backend) -> None:
    local.store.urls.insert_new([entry(1)], 1.0)
    assert local.cycle().urls.requeue_inflight() == 0
    assert local.store.urls.count_by_status() == {Status.QUEUED: 1}


def test_count_host_counts_the_urls_of_that_host_only(backend: Backend) -> None:
    mine = [real(f"http://mine.test/{i}") for i in range(5)]
    other = [real(f"http://other.test/{i}") for i in range(3)]
    backend.store.urls.insert_new(mine + other, 1.0)
    backend.store.urls.insert_new(mine[:2], 2.0)  # known: not counted twice
    backend.store.urls.requeue(mine[0], 3.0)  # known: not counted twice
    urls = backend.cycle().urls
    assert urls.count_host(mine[0].fingerprint, "mine.test") == 5
    assert urls.count_host(other[0].fingerprint, "other.test") == 3
    unknown = real("http://unknown.test/")
    assert urls.count_host(unknown.fingerprint, "unknown.test") == 0


# -- host table --------------------------------------------------------------------
def test_host_table_counts_hosts_and_keeps_crawl_delays(backend: Backend) -> None:
    hosts = backend.store.hosts
    hosts.add_hosts(["a.test", "b.test", "a.test"])
    hosts.add_hosts([])
    assert hosts.host_count() == 2
    hosts.set_crawl_delay("b.test", 2.5)
    hosts.set_crawl_delay("c.test", 1.0)
    hosts.set_crawl_delay("d.test", 4.0)
    hosts.set_crawl_delay("d.test", None)
    hosts = backend.cycle().hosts
    assert hosts.host_count() == 4
    assert hosts.crawl_delays() == {"b.test": 2.5, "c.test": 1.0}
    hosts.add_hosts(["c.test", "e.test"])
    assert hosts.host_count() == 5


def test_host_table_keeps_widened_delays(backend: Backend) -> None:
    hosts = backend.store.hosts
    assert hosts.widened() == {}
    hosts.set_widened("a.test", 2.0)
    hosts.set_widened("b.test", 1.5)
    hosts.set_widened("a.test", 8.0)
    assert backend.cycle().hosts.widened() == {"a.test": 8.0, "b.test": 1.5}


# -- cash table (AOPIC) ----------------------------------------------------------------
def test_cash_rows_round_trip_and_add_up(local: Backend) -> None:
    cash = local.store.cash
    far = real("http://far.test/x").fingerprint
    cash.put_cash([(1, 1.5, 2.0, 0.25, 1), (far, 3.0, 0.0, 0.0, 0)])
    cash.put_cash([(1, 0.5, 2.5, 0.5, 2)])  # overwrite
    cash = local.cycle().cash
    assert cash.get_cash([1, far, 404]) == {1: (0.5, 2.5, 0.5, 2), far: (3.0, 0.0, 0.0, 0)}
    assert cash.get_cash([]) == {}
    assert cash.cash_count() == 2
    assert cash_sums(local.store) == pytest.approx((3.5, 2.5, 0.5))


def test_an_empty_cash_table_adds_up_to_zero(backend: Backend) -> None:
    assert backend.store.cash.cash_count() == 0
    assert cash_sums(backend.store) == (0.0, 0.0, 0.0)


# -- content groups, meta ---------------------------------------------------------------
def test_content_groups_are_kept_by_fingerprint(backend: Backend) -> None:
    backend.store.groups.set_content_group(-9, 77, True)
    backend.store.groups.set_content_group(10, 77, False)
    backend.store.groups.set_content_group(10, 78, False)
    store = backend.cycle()
    assert store.groups.content_group(-9) == 77
    assert store.groups.content_group(10) == 78
    assert store.groups.content_group(11) is None


def test_meta_survives(backend: Backend) -> None:
    backend.store.set_meta("front_queues", "8")
    backend.store.set_meta("bloom_tag", "3-1.5")
    store = backend.cycle()
    assert store.get_meta("front_queues") == "8"
    assert store.get_meta("bloom_tag") == "3-1.5"
    assert store.get_meta("absent") is None


# -- link table (the recorded link graph) ------------------------------------------------
def test_link_lists_keep_order_drop_repeats_and_are_replaced_by_a_refetch(backend: Backend) -> None:
    page, other = real("http://a.test/").fingerprint, real("http://b.test/x").fingerprint
    far = [real(f"http://h{i}.test/").fingerprint for i in range(5)]
    links = backend.store.links
    links.record(page, [far[3], far[0], far[3], -(1 << 63), (1 << 63) - 1, far[0]])
    links.record(other, [far[1]])
    links.record(other, [far[2], far[4]])  # a re-fetch replaces the list
    links = backend.cycle().links
    assert links.targets_of(page) == [far[3], far[0], -(1 << 63), (1 << 63) - 1]
    assert links.targets_of(other) == [far[2], far[4]]
    assert links.targets_of(far[0]) is None
    assert links.sources() == 2


def test_a_page_without_links_has_an_empty_list_not_none(backend: Backend) -> None:
    page = real("http://a.test/leaf").fingerprint
    backend.store.links.record(page, [])
    links = backend.cycle().links
    assert links.targets_of(page) == [] and links.sources() == 1


def test_link_scan_gives_every_list_once_in_batches(backend: Backend) -> None:
    recorded = {real(f"http://h{i % 7}.test/{i}").fingerprint: [i, i + 1, -i] for i in range(1, 40)}
    for source, targets in recorded.items():
        backend.store.links.record(source, targets)
    batches = list(backend.cycle().links.scan(batch=5))
    assert all(0 < len(batch) <= 5 for batch in batches)
    scanned = [pair for batch in batches for pair in batch]
    assert len(scanned) == len(recorded) and dict(scanned) == recorded
    assert list(backend.store.links.scan()) != [] and backend.store.links.sources() == 39


def test_an_empty_link_table_scans_nothing(backend: Backend) -> None:
    assert list(backend.store.links.scan()) == [] and backend.store.links.sources() == 0


# -- re-visit table (continuous crawling) -------------------------------------------------
# -- census (scrapy crawlstatus) ------------------------------------------------------
def census_crawl(store: Any) -> None:
    """Three hosts: busy.test 3 queued + 1 in flight, calm.test 1 queued + 2
    done, idle.test 1 done; failures and refusals at times 10 .. 13, an exclusion."""
    rows = [real(f"http://busy.test/{n}") for n in range(4)] + [
        real(f"http://calm.test/{n}") for n in range(3)] + [real("http://idle.test/")]
    refused = real("http://calm.test/refused")._replace(extra='{"refused": "budget"}')
    failed = [real("http://busy.test/failed"), real("http://idle.test/failed")]
    excluded = real("http://idle.test/robots-forbidden")
    store.urls.insert_new([*rows, refused, *failed, excluded], 1.0)
    store.urls.set_status([rows[3].fingerprint], Status.INFLIGHT)
    store.urls.set_status([rows[5].fingerprint], Status.DONE, 5.0)
    store.urls.set_status([rows[6].fingerprint], Status.DONE, 7.0)
    store.urls.set_status([rows[7].fingerprint], Status.DONE, 9.0)
    store.urls.set_status([failed[0].fingerprint], Status.FAILED, 10.0)
    store.urls.set_status([refused.fingerprint], Status.REFUSED)  # as admission does: never fetched
    store.urls.set_status([failed[1].fingerprint], Status.FAILED, 13.0)
    store.urls.set_status([excluded.fingerprint], Status.EXCLUDED)  # robots.txt: never fetched


def test_census_orders_hosts_by_queue_length_and_errors_newest_first(backend: Backend) -> None:
    census_crawl(backend.store)
    census = backend.cycle().census.census(hosts=2, errors=3, since=9.0)
    trimmed = backend.finished(Status.DONE) is None
    assert [(load.host, load.queued, load.inflight) for load in census.busiest] == [
        ("busy.test", 3, 1), ("calm.test", 1, 0)]
    assert [load.done for load in census.busiest] == [0, 2]
    assert census.busiest[1].last_fetch == 7.0
    if trimmed:  # finished rows are gone, their counts and fetch times kept: no errors left to show
        assert (census.fetched, census.first_fetch, census.last_fetch) == (5, 5.0, 13.0)
        assert (census.errors, census.refusals) == ([], [])
        return
    # errors are failed fetches only; refusals (outcomes) are listed apart
    assert [(event.url, event.status, event.at, event.reason) for event in census.errors] == [
        ("http://idle.test/failed", Status.FAILED, 13.0, None),
        ("http://busy.test/failed", Status.FAILED, 10.0, None)]
    discovered = 1.0 if backend.kind in EMBEDDED else None  # where the row keeps the time
    assert [(event.url, event.status, event.reason, event.at) for event in census.refusals] == [
        ("http://idle.test/robots-forbidden", Status.EXCLUDED, None, discovered),
        ("http://calm.test/refused", Status.REFUSED, "budget", discovered)]
    assert (census.fetched, census.first_fetch, census.last_fetch, census.fetched_since) == (5, 5.0, 13.0, 3)


def test_census_limits_and_an_empty_table(backend: Backend) -> None:
    store = backend.store
    empty = store.census.census(hosts=5, errors=5, since=0.0)
    assert (empty.busiest, empty.errors, empty.fetched, empty.first_fetch, empty.last_fetch) == (
        [], [], 0, None, None)
    census_crawl(store)
    census = backend.cycle().census.census(hosts=10, errors=0, since=100.0)
    assert [load.host for load in census.busiest] == ["busy.test", "calm.test", "idle.test"]
    assert census.errors == census.refusals == [] and census.fetched_since == 0
    assert backend.store.census.census(hosts=1, errors=1, since=0.0).busiest[0].host == "busy.test"


def test_census_knows_holds_only_where_the_store_keeps_them(backend: Backend) -> None:
    held = backend.store.census.census(hosts=1, errors=1, since=0.0).held
    assert held == ({} if backend.kind.startswith("redis") else None)


def test_census_of_a_redis_crawl_shows_shared_holds_and_next_due_times(shared: Backend) -> None:
    from extensions.backends.redis.leases import HostLeases

    store = shared.store
    census_crawl(store)
    HostLeases(store, "test", 10.0, 1).hold("http://calm.test", 3600.0, "robots.txt 503")
    HostLeases(store, "test", 10.0, 1).hold("http://gone.test", -1.0, "ended")
    # the field the lease scripts write at renewal and release (lua/lease_renew.lua, lease_release.lua)
    store.connection.call(("HSET", store.keys.lease("busy.test"), "next", "4102444800000"))
    census = store.census.census(hosts=2, errors=0, since=0.0)
    assert census.busiest[0].next_due == 4102444800.0 and census.busiest[1].next_due is None
    assert list(census.held) == ["http://calm.test"] and census.held["http://calm.test"][0] == "robots.txt 503"


def visit(url: str, due: float, **fields: Any) -> RevisitRecord:
    """A record of ``url`` (a real fingerprint, so records spread over host tags)."""
    return RevisitRecord(real(url).fingerprint, due, fields.pop("interval", 60.0), **fields)


def test_revisit_records_round_trip_every_field(backend: Backend) -> None:
    full = visit("http://a.test/full", 1_700_000_123.25, interval=3600.5, visits=7, changes=3,
                 first_visit=1_699_000_000.125, last_visit=1_700_000_000.5, last_change=1_699_999_999.75,
                 content=-(1 << 63), etag='W/"ü-5f3c"', last_modified="Wed, 21 Oct 2015 07:28:00 GMT", gone=0)
    bare = visit("http://b.test/bare", math.inf, interval=0.001, content=(1 << 63) - 1, gone=2)
    odd = visit("http://c.test/odd", 5.0, etag="", last_modified="yesterday, maybe", visits=2**31, changes=2**31)
    backend.store.revisits.put([full, bare, odd])
    found = backend.cycle().revisits.get([full.fingerprint, bare.fingerprint, odd.fingerprint, 404])
    assert found == {full.fingerprint: full, bare.fingerprint: bare, odd.fingerprint: odd}
    assert found[bare.fingerprint].etag is None and found[bare.fingerprint].last_modified is None
    assert math.isinf(found[bare.fingerprint].due) and backend.store.revisits.get([]) == {}


def test_take_due_gives_the_earliest_due_first_up_to_the_limit(backend: Backend) -> None:
    records = [visit(f"http://h{i % 5}.test/{i}", 100.0 + (i * 7) % 20) for i in range(20)]
    backend.store.revisits.put(records)
    backend.store.revisits.put([visit("http://late.test/", 500.0), visit("http://never.test/", math.inf)])
    revisits = backend.cycle().revisits
    assert revisits.count_due(109.0) == 10 and revisits.next_due() == 100.0
    first = revisits.take_due(109.0, 4)
    rest = revisits.take_due(109.0, 100)
    assert [r.due for r in first] == [100.0, 101.0, 102.0, 103.0]
    assert [r.due for r in first + rest] == sorted(r.due for r in records if r.due <= 109.0)
    by_fp = {r.fingerprint: r for r in records}
    assert all(by_fp[r.fingerprint] == r for r in first + rest)  # returned as they were when taken
    assert revisits.take_due(109.0, 100) == [] and revisits.count_due(109.0) == 0
    assert revisits.take_due(1000.0, 0) == []
    assert backend.cycle().revisits.next_due() == 110.0


def test_a_taken_record_is_not_scheduled_until_put_again(backend: Backend) -> None:
    record = visit("http://a.test/page", 10.0, visits=1)
    revisits = backend.store.revisits
    revisits.put([record])
    assert revisits.take_due(10.0, 5) == [record]
    revisits = backend.cycle().revisits
    assert revisits.get([record.fingerprint])[record.fingerprint] == record._replace(due=math.inf)
    assert revisits.next_due() is None and revisits.count_due(1e12) == 0
    assert revisits.counts() == RevisitCounts(1, 0, 0)
    again = record._replace(due=70.0, visits=2, last_visit=10.0)
    revisits.put([again])
    revisits = backend.cycle().revisits
    assert revisits.next_due() == 70.0 and revisits.take_due(69.9, 5) == []
    assert revisits.take_due(70.0, 5) == [again]


def test_put_reschedules_and_inf_unschedules(backend: Backend) -> None:
    early, other = visit("http://a.test/1", 10.0), visit("http://b.test/2", 20.0)
    revisits = backend.store.revisits
    revisits.put([early, other])
    revisits.put([early._replace(due=30.0), other._replace(due=math.inf, gone=3)])
    revisits = backend.cycle().revisits
    assert revisits.next_due() == 30.0 and revisits.count_due(25.0) == 0
    assert revisits.counts() == RevisitCounts(records=2, scheduled=1, gone=1)
    assert [r.fingerprint for r in revisits.take_due(100.0, 10)] == [early.fingerprint]


def test_revisit_counts_and_scan(backend: Backend) -> None:
    records = [visit(f"http://h{i % 7}.test/{i}", float(i) if i % 3 else math.inf, gone=int(i % 4 == 0))
               for i in range(1, 31)]
    backend.store.revisits.put(records)
    revisits = backend.cycle().revisits
    assert revisits.counts() == RevisitCounts(30, 20, 7)
    batches = list(revisits.scan(batch=4))
    assert all(0 < len(batch) <= 4 for batch in batches)
    scanned = [record for batch in batches for record in batch]
    assert len(scanned) == 30 and {r.fingerprint: r for r in scanned} == {r.fingerprint: r for r in records}


def test_an_empty_revisit_table(backend: Backend) -> None:
    revisits = backend.store.revisits
    assert revisits.next_due() is None and revisits.count_due(1e18) == 0
    assert revisits.take_due(1e18, 10) == [] and revisits.counts() == RevisitCounts(0, 0, 0)
    assert list(revisits.scan()) == []


# -- re-visit table on Redis: shared by processes, lifetime of the crawl's keys ---------------
@pytest.fixture(params=["redis", "redis-cluster"])
def shared(request: Any, tmp_path: Path) -> Any:
    wrapper = Backend(request.param, tmp_path, reopen=True)
    yield wrapper
    wrapper.store.close()


def test_two_processes_taking_due_records_never_take_the_same_one(shared: Backend) -> None:
    records = [visit(f"http://h{i % 41}.test/{i}", float(i % 97)) for i in range(600)]
    shared.store.revisits.put(records)
    shared.store.checkpoint()
    other = shared.open()  # a second process: its own store and connection on the same prefix
    taken: dict[str, list[int]] = {"one": [], "two": []}

    def take(name: str, store: Any) -> None:
        for _ in range(len(records)):  # bounded: each round takes >= 1 until none is due
            batch = store.revisits.take_due(1000.0, 7)
            if not batch:
                return
            taken[name] += [record.fingerprint for record in batch]

    threads = [threading.Thread(target=take, args=("two", other))]
    threads[0].start()
    take("one", shared.store)
    threads[0].join(timeout=120)
    other.close()
    assert not threads[0].is_alive()
    assert not set(taken["one"]) & set(taken["two"])
    assert sorted(taken["one"] + taken["two"]) == sorted(r.fingerprint for r in records)
    assert taken["one"] and taken["two"]  # both took some: the takes did interleave
    assert shared.cycle().revisits.counts() == RevisitCounts(600, 0, 0)


def test_a_retried_take_returns_the_same_records_and_takes_no_more(shared: Backend) -> None:
    revisits = shared.store.revisits
    revisits.put([visit(f"http://a.test/{i}", float(i)) for i in range(10)])
    shard = revisits._shard(real("http://a.test/0").fingerprint)
    call = ("EVAL", TAKE, 2, shared.store.keys.revisit_due(shard), shared.store.keys.revisit_taken(shard),
            "100", 3, "owner-x", "op-1")
    first, again = shared.store.call(call)[0], shared.store.call(call)[0]
    assert first == again and len(first) == 6  # three (fingerprint, due) pairs
    assert revisits.count_due(100.0) == 7


def test_revisit_keys_go_with_the_crawl(shared: Backend) -> None:
    shared.store.revisits.put([visit(f"http://h{i}.test/", float(i), gone=i % 2) for i in range(20)])
    assert len(shared.store.revisits.take_due(5.0, 3)) == 3
    shared.store.close()
    fresh = shared.new()
    fresh.flush_on_start = True
    fresh.open()
    shared.store = fresh
    assert fresh.revisits.counts() == RevisitCounts(0, 0, 0) and list(fresh.revisits.scan()) == []
    fresh.revisits.put([visit("http://a.test/", 1.0)])
    fresh.persist = False
    fresh.close()
    shared.store = shared.open()
    assert [key for key in shared.store.scan(f"{shared.prefix}:*") if b"revisit" in key] == []


# -- lifecycle (persistent backends) ----------------------------------------------------------
def test_a_new_store_is_clean(persistent: Backend) -> None:
    assert persistent.store.clean


def test_clean_flag_tracks_how_the_last_run_ended(persistent: Backend) -> None:
    persistent.store.urls.insert_new([entry(1)], 1.0)
    crashed = persistent.crash()
    assert not crashed.clean
    assert crashed.urls.status_of(1) == Status.QUEUED
    assert persistent.cycle().clean
    persistent.store.close(clean=False)
    persistent.store = persistent.open()
    assert not persistent.store.clean


def test_a_crash_keeps_every_checkpointed_change(persistent: Backend) -> None:
    store = persistent.store
    store.urls.insert_new([entry(1), entry(2)], 1.0)
    store.urls.set_status([1], Status.INFLIGHT)
    local = isinstance(store, QueuedStore)
    if local:
        store.queues.push("front/0", [1, 2])
        store.cash.put_cash([(2, 1.0, 0.0, 0.0, 0)])
    store.links.record(1, [2, 3])
    store.revisits.put([RevisitRecord(1, 50.0, 60.0, visits=1)])
    store.set_meta("k", "v")
    store = persistent.crash()
    assert store.urls.status_of(1) == Status.INFLIGHT
    assert not local or store.queues.pop("front/0", 5) == [1, 2]
    assert not local or store.cash.get_cash([2]) == {2: (1.0, 0.0, 0.0, 0)}
    assert store.links.targets_of(1) == [2, 3]
    assert store.revisits.take_due(50.0, 5) == [RevisitRecord(1, 50.0, 60.0, visits=1)]
    assert store.get_meta("k") == "v"


def test_a_crash_with_no_rows_needs_no_rebuild(persistent: Backend) -> None:
    persistent.store.set_meta("k", "v")
    assert persistent.crash().clean


def test_an_unopenable_store_is_a_clear_error_naming_where(persistent: Backend, tmp_path: Path) -> None:
    if persistent.kind == "sqlite":
        (tmp_path / "file").write_text("x")
        store, where = SQLiteStore(tmp_path / "file" / "frontier.sqlite3"), "file/frontier.sqlite3"
    else:
        url = f"redis://127.0.0.1:{free_port()}/0"  # nobody listens there
        store, where = RedisStore(url, "web"), url
    with pytest.raises(FrontierStoreError, match=where):
        store.open()


# -- the SQLite store's own promises (its file) ------------------------------------
def test_sqlite_clean_flag_tracks_how_the_last_run_ended(tmp_path):
    path = tmp_path / "f.sqlite3"
    store = SQLiteStore(path)
    store.open()
    assert store.clean  # new and empty
    store.urls.insert_new([entry(1)], 1.0)
    store.checkpoint()
    store.abandon()  # kill -9
    crashed = SQLiteStore(path)
    crashed.open()
    assert not crashed.clean
    assert crashed.urls.status_of(1) == Status.QUEUED
    crashed.close()
    reopened = SQLiteStore(path)
    reopened.open()
    assert reopened.clean
    reopened.close()


def test_sqlite_uncommitted_changes_are_lost_on_crash(tmp_path):
    path = tmp_path / "f.sqlite3"
    store = SQLiteStore(path)
    store.open()
    store.urls.insert_new([entry(1)], 1.0)
    store.checkpoint()
    store.urls.insert_new([entry(2)], 2.0)
    store.abandon()
    reopened = SQLiteStore(path)
    reopened.open()
    assert reopened.urls.status_of(1) == Status.QUEUED and reopened.urls.status_of(2) is None
    reopened.close()


def test_sqlite_wal_grows_past_sqlites_default_checkpoint_and_survives_a_crash(tmp_path):
    """Checkpoints every WAL_CHECKPOINT_PAGES pages, not SQLite's 1000: the
    WAL outgrows 1000 pages, and every committed row is still read after a
    kill -9 (the WAL is the durable copy until it is checkpointed)."""
    from extensions.backends.sqlite.store import WAL_CHECKPOINT_PAGES
    assert WAL_CHECKPOINT_PAGES > 2000
    path = tmp_path / "f.sqlite3"
    wal = Path(f"{path}-wal")
    store = SQLiteStore(path)
    store.open()
    page_size = sqlite3.connect(path).execute("PRAGMA page_size").fetchone()[0]
    fp = 0
    for _ in range(400):  # bounded: ~60 rows of 2 KiB URLs a commit
        store.urls.insert_new([Entry(fp + i, f"http://a.test/{fp + i}/" + "x" * 2000, "a.test", 0)
                          for i in range(60)], 1.0)
        store.checkpoint()
        fp += 60
        if wal.stat().st_size > 1500 * page_size:
            break
    assert wal.stat().st_size > 1500 * page_size  # SQLite's default would have wrapped at 1000
    store.abandon()
    reopened = SQLiteStore(path)
    reopened.open()
    assert all(reopened.urls.status_of(n) == Status.QUEUED for n in (0, fp // 2, fp - 1))
    reopened.close()


def test_sqlite_corrupt_file_is_a_clear_error_naming_the_file(tmp_path):
    path = tmp_path / "frontier.sqlite3"
    path.write_bytes(b"this is not an SQLite database, just garbage\n" * 200)
    with pytest.raises(FrontierStoreError, match="frontier.sqlite3"):
        SQLiteStore(path).open()


def test_sqlite_damaged_pages_are_a_clear_error(tmp_path):
    path = tmp_path / "frontier.sqlite3"
    store = SQLiteStore(path)
    store.open()
    store.urls.insert_new([entry(i) for i in range(2000)], 1.0)
    store.close()
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\xff" * (4096 - 100)  # the header page after the magic
    path.write_bytes(bytes(data))
    with pytest.raises(FrontierStoreError, match=str(path)):
        SQLiteStore(path).open()


def test_sqlite_unwritable_location_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(FrontierStoreError, match="file/frontier.sqlite3"):
        SQLiteStore(blocker / "frontier.sqlite3").open()


def test_sqlite_full_disk_at_start_is_a_clear_error(tmp_path):
    # A quota of one page makes the first write fail exactly as a full disk
    # does (SQLITE_FULL, "database or disk is full").
    full = SQLiteStore(tmp_path / "frontier.sqlite3", max_mb=0.001)
    with pytest.raises(FrontierStoreError, match=r"frontier.sqlite3.*full"):
        full.open()


def test_sqlite_file_is_inspectable_with_the_sqlite3_command(tmp_path):
    path = tmp_path / "frontier.sqlite3"
    store = SQLiteStore(path)
    store.open()
    store.urls.insert_new([entry(1), entry(2)], 1.0)
    store.urls.set_status([2], Status.DONE, 2.0)
    store.checkpoint()
    query = "SELECT status, COUNT(*) FROM urls_readable GROUP BY status ORDER BY status"
    try:
        out = subprocess.run(["sqlite3", str(path), query], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        with sqlite3.connect(path) as db:  # no sqlite3 binary: the same query from Python
            rows = db.execute(query).fetchall()
        assert rows == [("done", 1), ("queued", 1)]
    else:
        assert out.stdout.split() == ["done|1", "queued|1"]
    store.close()
