"""The SQLite store answers recent status and cash reads from memory, and
never from a memory that disagrees with its file (extensions/backends/sqlite/rowcache.py).

Queries are counted with the connection's trace callback on a second,
read-only look at the same store: the store under test is driven only
through its public methods.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from extensions.frontier.store import Entry, Status
from extensions.backends.sqlite.rowcache import RowCache
from extensions.backends.sqlite.store import SQLiteStore


def entry(fp: int, padding: int = 0) -> Entry:
    return Entry(fp, f"http://a.test/{'x' * padding}{fp}", "a.test", 0, 0, 0, None, 0, None, None)


class Selects:
    """Counts the SELECTs a store sends (its connection's trace callback)."""

    def __init__(self, store: SQLiteStore) -> None:
        self.statements: list[str] = []
        store._require().set_trace_callback(self.statements.append)  # noqa: SLF001 - observing only

    def count(self) -> int:
        return sum(statement.lstrip().upper().startswith("SELECT") for statement in self.statements)


@pytest.fixture
def store(tmp_path: Path) -> SQLiteStore:
    opened = SQLiteStore(tmp_path / "frontier.sqlite3")
    opened.open()
    yield opened
    opened.close()


def test_status_of_rows_written_in_this_transaction_needs_no_query(store: SQLiteStore) -> None:
    store.insert_new([entry(1), entry(2), entry(3)], 1.0)
    store.set_status([2], Status.INFLIGHT)
    store.set_status([3], Status.DONE, 2.0, only_from=Status.INFLIGHT)  # not in flight: unchanged
    store.requeue(entry(4), 1.0)
    selects = Selects(store)
    assert [store.status_of(fp) for fp in (1, 2, 3, 4)] == [
        Status.QUEUED, Status.INFLIGHT, Status.QUEUED, Status.QUEUED]
    assert selects.count() == 0
    assert store.status_of(99) is None and selects.count() == 1  # unknown rows are read


def test_a_status_read_from_the_file_is_remembered(tmp_path: Path) -> None:
    first = SQLiteStore(tmp_path / "frontier.sqlite3")
    first.open()
    first.insert_new([entry(1)], 1.0)
    first.set_status([1], Status.DONE, 2.0)
    first.close()
    reopened = SQLiteStore(tmp_path / "frontier.sqlite3")
    reopened.open()
    selects = Selects(reopened)
    assert reopened.status_of(1) == Status.DONE and reopened.status_of(1) == Status.DONE
    assert selects.count() == 1
    reopened.close()


def test_bulk_status_updates_are_seen(store: SQLiteStore) -> None:
    store.insert_new([entry(1), entry(2)], 1.0)
    store.set_status([1], Status.INFLIGHT)
    store.set_status([2], Status.DEFERRED)
    assert store.status_of(1) == Status.INFLIGHT and store.status_of(2) == Status.DEFERRED
    assert store.requeue_inflight() == 1
    assert store.take_deferred() == [2]
    assert store.status_of(1) == Status.QUEUED and store.status_of(2) == Status.QUEUED


def test_cash_rows_written_or_read_lately_need_no_query(store: SQLiteStore) -> None:
    store.put_cash([(1, 1.5, 2.0, 0.25, 1), (2, 3, 0, 0, 0)])  # ints stored as REAL come back as floats
    assert store.get_cash([7]) == {}  # read once: known to have no row
    selects = Selects(store)
    rows = store.get_cash([1, 2, 7])
    assert rows == {1: (1.5, 2.0, 0.25, 1), 2: (3.0, 0.0, 0.0, 0)}
    assert all(isinstance(value, float) for value in rows[2][:3])
    assert selects.count() == 0
    store.put_cash([(7, 0.5, 0.0, 0.0, 0)])
    assert store.get_cash([7, 8]) == {7: (0.5, 0.0, 0.0, 0)}
    assert selects.count() == 1 and "8" in selects.statements[-1]  # only the unknown one is asked


def test_after_a_full_disk_rolls_the_transaction_back_reads_agree_with_the_file(tmp_path: Path) -> None:
    # The quota makes a write fail as a full disk does; SQLite then rolls
    # back the whole open transaction, rows written since the last commit
    # included: a memory of them must not answer any more.
    store = SQLiteStore(tmp_path / "frontier.sqlite3", max_mb=0.2)
    store.open()
    written: list[int] = []
    with pytest.raises(sqlite3.OperationalError, match="full"):
        for fp in range(1, 5000):
            store.insert_new([entry(fp, padding=300)], 1.0)
            written.append(fp)
            store.set_status([fp], Status.INFLIGHT)
            store.put_cash([(fp, 1.0, 0.0, 0.0, 0)])
            if fp % 50 == 0:
                store.commit()
    committed = store.count_by_status()[Status.INFLIGHT]
    assert 0 < committed < len(written)  # the rows since the last commit are gone
    statuses = [store.status_of(fp) for fp in written]
    assert statuses.count(Status.INFLIGHT) == committed
    assert statuses.count(None) == len(written) - committed
    assert len(store.get_cash(written)) == committed
    store.abandon()


def test_a_read_only_reader_sees_the_writers_later_commits(tmp_path: Path) -> None:
    writer = SQLiteStore(tmp_path / "frontier.sqlite3")
    writer.open()
    writer.insert_new([entry(1)], 1.0)
    writer.put_cash([(1, 1.0, 0.0, 0.0, 0)])
    writer.checkpoint()
    reader = SQLiteStore(tmp_path / "frontier.sqlite3")
    reader.open_read_only()
    assert reader.status_of(1) == Status.QUEUED and reader.get_cash([1])[1][0] == 1.0
    writer.set_status([1], Status.DONE, 2.0)
    writer.put_cash([(1, 0.0, 1.0, 0.0, 1)])
    writer.checkpoint()
    assert reader.status_of(1) == Status.DONE and reader.get_cash([1])[1] == (0.0, 1.0, 0.0, 1)
    reader.close()
    writer.close()


def test_row_cache_follows_updates_only_of_rows_it_knows_and_stays_bounded() -> None:
    cache = RowCache(bound=3)
    cache.wrote_status([5], Status.DONE, None)  # an UPDATE of a row it never saw
    assert cache.status(5) is None
    cache.remember_status(1, Status.INFLIGHT)
    cache.wrote_status([1], Status.DONE, Status.QUEUED)  # guarded: not queued, unchanged
    assert cache.status(1) == Status.INFLIGHT
    cache.wrote_status([1], Status.DONE, Status.INFLIGHT)
    assert cache.status(1) == Status.DONE
    for fp in (2, 3, 4):
        cache.remember_status(fp, Status.QUEUED)
    assert len(cache.statuses) <= 3 and cache.status(4) == Status.QUEUED
    cache.wrote_cash([(fp, 1.0, 0.0, 0.0, 0) for fp in range(10)])
    assert len(cache.cash) <= 10 and cache.cash_rows([9]) == ({9: (1.0, 0.0, 0.0, 0)}, [])
