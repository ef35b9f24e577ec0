"""One behaviour suite over every frontier store, plus a close-and-reopen
variant for the persistent ones (as Scrapy's tests/test_scheduler.py does)."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

import pytest

from extensions.frontier.store import (
    Entry,
    FrontierStore,
    FrontierStoreError,
    HostTable,
    RequestQueues,
    Status,
    URLTable,
)
from extensions.backends.memory.store import MemoryStore
from extensions.backends.sqlite.store import SQLiteStore


class Reopening:
    """Wraps a store factory; ``cycle()`` closes and reopens when persistent."""

    def __init__(self, kind: str, directory: Path, reopen: bool) -> None:
        self.kind, self.directory, self.reopen = kind, directory, reopen
        self.store = self._new()
        self.store.open()

    def _new(self):
        if self.kind == "memory":
            return MemoryStore()
        return SQLiteStore(self.directory / "frontier.sqlite3")

    def cycle(self):
        if self.reopen:
            self.store.close()
            self.store = self._new()
            self.store.open()
        return self.store


@pytest.fixture(params=["memory", "sqlite", "sqlite-reopen"])
def env(request, tmp_path):
    kind = request.param.split("-")[0]
    wrapper = Reopening(kind, tmp_path, request.param.endswith("reopen"))
    yield wrapper
    wrapper.store.close()


def entry(fp: int, host: str = "a.test", level: int = 0) -> Entry:
    return Entry(fp, f"http://{host}/{fp}", host, level)


def test_store_implements_every_protocol(env):
    store = env.store
    assert isinstance(store, FrontierStore)
    assert isinstance(store.queues, RequestQueues)
    assert isinstance(store.urls, URLTable)
    assert isinstance(store.hosts, HostTable)


def test_queues_are_fifo_per_name(env):
    env.store.queues.push("front/0", [1, 2, 3])
    env.store.queues.push("front/1", [10])
    env.store.queues.push("front/0", [4])
    queues = env.cycle().queues
    assert queues.length("front/0") == 4
    assert queues.pop("front/0", 2) == [1, 2]
    assert queues.pop("front/1", 5) == [10]
    assert queues.pop("front/0", 5) == [3, 4]
    assert queues.pop("front/0", 5) == []
    assert queues.length("front/0") == 0


def test_push_front_puts_items_back_at_the_head_in_order(env):
    env.store.queues.push("back/0", [3, 4])
    env.store.queues.push_front("back/0", [1, 2])
    assert env.cycle().queues.pop("back/0", 10) == [1, 2, 3, 4]


def test_negative_fingerprints_round_trip(env):
    fps = [-(1 << 63), -1, 0, (1 << 63) - 1]
    env.store.queues.push("q", fps)
    env.store.urls.insert_new([entry(fp) for fp in fps], 1.0)
    store = env.cycle()
    assert store.queues.pop("q", 10) == fps
    assert sorted(store.urls.get_many(fps)) == sorted(fps)


def test_clear_empties_every_queue(env):
    env.store.queues.push("a", [1])
    env.store.queues.push("b", [2])
    env.store.queues.clear()
    store = env.cycle()
    assert store.queues.length("a") == store.queues.length("b") == 0


def test_insert_new_is_add_if_new_and_keeps_the_first_entry(env):
    urls = env.store.urls
    assert urls.insert_new([entry(1), entry(2)], 1.0) == [True, True]
    assert urls.insert_new([Entry(1, "http://other/", "other"), entry(3)], 2.0) == [False, True]
    urls = env.cycle().urls
    assert urls.get_many([1])[1].url == "http://a.test/1"
    assert urls.status_of(1) == Status.QUEUED
    assert urls.status_of(99) is None


def test_entries_round_trip_every_field(env):
    full = Entry(-5, "http://x.test/p?q=1", "x.test", 3, -2, 7, "http://r.test/", 9, '{"cb":"p"}', b"\x00blob")
    env.store.urls.insert_new([full], 1.0)
    assert env.cycle().urls.get_many([-5]) == {-5: full}


def test_requeue_overwrites_and_sets_queued(env):
    urls = env.store.urls
    urls.insert_new([entry(1)], 1.0)
    urls.set_status([1], Status.DONE, 2.0)
    urls.requeue(Entry(1, "http://a.test/new", "a.test", 5), 3.0)
    urls = env.cycle().urls
    assert urls.status_of(1) == Status.QUEUED
    assert urls.get_many([1])[1].level == 5


def test_set_status_only_from_guards_the_transition(env):
    urls = env.store.urls
    urls.insert_new([entry(1), entry(2)], 1.0)
    urls.set_status([1], Status.INFLIGHT)
    urls.set_status([1, 2], Status.DONE, 5.0, only_from=Status.INFLIGHT)
    urls = env.cycle().urls
    assert urls.status_of(1) == Status.DONE
    assert urls.status_of(2) == Status.QUEUED


def test_iter_pending_gives_queued_and_inflight_in_discovery_order(env):
    urls = env.store.urls
    urls.insert_new([entry(30, level=1), entry(10, level=2), entry(20)], 1.0)
    urls.insert_new([entry(5)], 2.0)
    urls.set_status([20], Status.INFLIGHT)
    urls.set_status([5], Status.DONE)
    urls = env.cycle().urls
    assert list(urls.iter_pending(batch=2)) == [(30, 1), (10, 2), (20, 0)]
    assert urls.requeue_inflight() == 1
    assert urls.count_by_status() == {Status.QUEUED: 3, Status.DONE: 1}
    assert sorted(urls.iter_all()) == [(5, 0), (10, 2), (20, 0), (30, 1)]


def test_host_table_counts_hosts_and_keeps_crawl_delays(env):
    hosts = env.store.hosts
    assert hosts.add_hosts(["a.test", "b.test", "a.test"]) == 2
    hosts.set_crawl_delay("b.test", 2.5)
    hosts.set_crawl_delay("c.test", 1.0)
    hosts = env.cycle().hosts
    assert hosts.host_count() == 3
    assert hosts.crawl_delays() == {"b.test": 2.5, "c.test": 1.0}


def test_meta_survives(env):
    env.store.set_meta("front_queues", "8")
    assert env.cycle().get_meta("front_queues") == "8"


# -- SQLite only -----------------------------------------------------------------
def test_sqlite_clean_flag_tracks_how_the_last_run_ended(tmp_path):
    path = tmp_path / "f.sqlite3"
    store = SQLiteStore(path)
    store.open()
    assert store.clean  # new and empty
    store.insert_new([entry(1)], 1.0)
    store.checkpoint()
    store.abandon()  # kill -9
    crashed = SQLiteStore(path)
    crashed.open()
    assert not crashed.clean
    assert crashed.status_of(1) == Status.QUEUED
    crashed.close()
    reopened = SQLiteStore(path)
    reopened.open()
    assert reopened.clean
    reopened.close()


def test_sqlite_uncommitted_changes_are_lost_on_crash(tmp_path):
    path = tmp_path / "f.sqlite3"
    store = SQLiteStore(path)
    store.open()
    store.insert_new([entry(1)], 1.0)
    store.checkpoint()
    store.insert_new([entry(2)], 2.0)
    store.abandon()
    reopened = SQLiteStore(path)
    reopened.open()
    assert reopened.status_of(1) == Status.QUEUED and reopened.status_of(2) is None
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
        store.insert_new([Entry(fp + i, f"http://a.test/{fp + i}/" + "x" * 2000, "a.test", 0)
                          for i in range(60)], 1.0)
        store.checkpoint()
        fp += 60
        if wal.stat().st_size > 1500 * page_size:
            break
    assert wal.stat().st_size > 1500 * page_size  # SQLite's default would have wrapped at 1000
    store.abandon()
    reopened = SQLiteStore(path)
    reopened.open()
    assert all(reopened.status_of(n) == Status.QUEUED for n in (0, fp // 2, fp - 1))
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
    store.insert_new([entry(i) for i in range(2000)], 1.0)
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
    store.insert_new([entry(1), entry(2)], 1.0)
    store.set_status([2], Status.DONE, 2.0)
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
