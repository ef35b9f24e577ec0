"""Crash safety to the last page: after ``kill -9`` and the same command, the
only URLs fetched again are those in flight at the kill.

"In flight at the kill" is read from the frontier's database right after
the kill: rows with status ``inflight`` (handed to the engine, not finished).
The write-ahead commit (``FRONTIER_WRITE_AHEAD``) makes that status durable
before the request leaves the frontier, and a page's done status durable
with the outlinks it yielded. The store-level tests drive the frontier
without a crawler and cut it off with :meth:`SQLiteStore.abandon`.
"""

from __future__ import annotations

import random
import signal
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from scrapy import Request

from extensions.frontier.page import PageVerdict
from twisted.internet.task import Clock

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.store import Entry, Status, WriteAheadStore
from extensions.backends.memory.backend import MemoryStore
from extensions.backends.sqlite.store import SQLiteStore
from testweb.crawlrun import kill_crawl, run_web_crawl, start_web_crawl
from testweb.model import canonical_url
from testweb.waiting import CrawlActivity, ended, wait_until
from tests.test_frontier_support import make_frontier
from tests.aopic_helpers import ledger_totals

CONCURRENCY = 16


def _sqlite(tmp_path: Path) -> SQLiteStore:
    return SQLiteStore(tmp_path / "frontier.sqlite3")


def test_commit_makes_changes_survive_a_crash_and_skips_when_nothing_changed(tmp_path: Path) -> None:
    store = _sqlite(tmp_path)
    store.open()
    assert isinstance(store, WriteAheadStore) and isinstance(MemoryStore(), WriteAheadStore)
    assert not store.commit()  # nothing changed since open
    calls: list[int] = []
    store.urls.insert_new([Entry(7, "http://a.test/", "a.test")], 0.0)
    assert store.commit(lambda: calls.append(1) or store.set_meta("before", "ran"))
    assert calls == [1] and not store.commit(lambda: calls.append(2))  # clean again
    store.urls.set_status([7], Status.INFLIGHT)
    store.commit()
    store.urls.set_status([7], Status.DONE)  # not committed: lost with the crash
    store.abandon()
    reopened = _sqlite(tmp_path)
    reopened.open()
    assert reopened.urls.status_of(7) == Status.INFLIGHT
    assert reopened.get_meta("before") == "ran"
    reopened.close()


def test_write_ahead_request_is_in_flight_in_the_file_before_it_is_handed_out(tmp_path: Path) -> None:
    clock = Clock()
    store = _sqlite(tmp_path)
    frontier = make_frontier(store, clock, write_ahead=True)
    for i in range(4):
        frontier.enqueue_request(Request(f"http://h{i}.test/"))
    first = frontier.next_request()
    frontier.fetch_finished(first)  # done, with outlinks enqueued before the finish
    frontier.enqueue_request(Request("http://h0.test/link"))
    second = frontier.next_request()
    assert first is not None and second is not None
    store.abandon()  # kill -9 right after the hand-out

    reader = sqlite3.connect(tmp_path / "frontier.sqlite3")
    rows = dict(reader.execute("SELECT url, status FROM urls"))
    reader.close()
    assert rows[first.url] == Status.DONE
    assert rows[second.url] == Status.INFLIGHT
    assert rows["http://h0.test/link"] == Status.QUEUED  # the links came with the done status
    resumed = make_frontier(_sqlite(tmp_path), Clock(), write_ahead=True)
    again = []
    while (request := resumed.next_request()) is not None:
        again.append(request.url)
        resumed.fetch_finished(request)
    assert first.url not in again and second.url in again and "http://h0.test/link" in again
    resumed.close("finished")


def test_grouped_write_ahead_commits_once_per_turn_before_the_next_poll(tmp_path: Path) -> None:
    """With ``call_soon`` (the reactor's turn end) the requests handed out in
    one turn are committed together by one transaction, before the next poll
    for I/O: nothing is in the file until then, everything is after."""
    turn_end: list[Any] = []
    store = _sqlite(tmp_path)
    frontier = make_frontier(store, Clock(), write_ahead=True, call_soon=turn_end.append)
    for i in range(4):
        frontier.enqueue_request(Request(f"http://h{i}.test/"))
    handed = [frontier.next_request() for _ in range(3)]
    assert all(handed) and len(turn_end) == 1  # one commit for the turn's three requests
    commits = []
    store.commit = (lambda commit: lambda *a, **k: commits.append(1) or commit(*a, **k))(store.commit)  # type: ignore[method-assign]

    def status_in_file(url: str) -> int | None:
        reader = sqlite3.connect(tmp_path / "frontier.sqlite3")
        try:
            row = reader.execute("SELECT status FROM urls WHERE url = ?", (url,)).fetchone()
        finally:
            reader.close()
        return None if row is None else row[0]

    assert status_in_file(handed[0].url) != Status.INFLIGHT  # not yet: the turn is not over
    turn_end.pop()()  # the reactor's turn ends
    assert commits == [1]
    assert all(status_in_file(request.url) == Status.INFLIGHT for request in handed)
    store.abandon()
    frontier.write_ahead.cancel()


def test_without_write_ahead_a_crash_returns_to_the_last_checkpoint(tmp_path: Path) -> None:
    store = _sqlite(tmp_path)
    frontier = make_frontier(store, Clock(), write_ahead=False)
    frontier.enqueue_request(Request("http://a.test/"))
    frontier.checkpoint()
    frontier.fetch_finished(frontier.next_request())
    store.abandon()
    reopened = _sqlite(tmp_path)
    reopened.open()
    assert reopened.urls.count_by_status() == {Status.QUEUED: 1}  # fetched again after a resume
    reopened.close()


def test_write_ahead_keeps_aopic_cash_conserved_across_a_crash(tmp_path: Path) -> None:
    store = _sqlite(tmp_path)
    frontier = make_frontier(store, Clock(), write_ahead=True, ledger=AOPICLedger(store))
    for i in range(3):
        frontier.enqueue_request(Request(f"http://h{i}.test/", meta={"is_start_request": True}))
    for _ in range(3):
        request = frontier.next_request()
        frontier.page_done(PageVerdict(request.url, [f"{request.url}a", f"{request.url}b"]))
        frontier.fetch_finished(request)
    frontier.next_request()  # the commit before the next hand-out
    store.abandon()
    reopened = _sqlite(tmp_path)
    reopened.open()
    ledger = AOPICLedger(reopened)
    ledger.load()
    totals = ledger_totals(ledger)
    assert totals.put_in == 3.0
    assert abs(totals.conserved - totals.put_in) <= 1e-9 * totals.put_in
    reopened.close()


# -- end to end: three SIGKILLs, each followed by the same command ----------------

def _in_flight(job: Path) -> set[str]:
    """The test web's canonical URLs of the rows in flight in the frontier's file (read after a kill)."""
    reader = sqlite3.connect(job / "frontier.sqlite3")
    try:
        return {canonical_url(url) for (url,) in reader.execute("SELECT url FROM urls WHERE status=1")}
    finally:
        reader.close()


def _extra_fetches(web: Any) -> Counter[str]:
    """Per URL, fetches after one that was not a 5xx (retries of a 5xx are on purpose)."""
    last: dict[str, int] = {}
    extra: Counter[str] = Counter()
    for entry in sorted(web.entries(), key=lambda e: e.start):
        if entry.path == "/robots.txt":
            continue
        url = canonical_url(f"http://{entry.host}:{web.port}{entry.path}")
        if url in last and last[url] < 500:
            extra[url] += 1
        last[url] = entry.status
    return extra


def _kill_after(web: Any, proc: Any, fetches: int, workdir: Path) -> bool:
    """SIGKILL the crawl (writing into ``workdir``) once the test web has
    served ``fetches`` more responses; False if it ended first. Polls the
    access log, bounded by the crawl's progress."""
    target = len(web.entries()) + fetches
    wait_until(lambda: len(web.entries()) >= target or ended([proc]), f"{fetches} more fetches",
               CrawlActivity([workdir], also=lambda: len(web.entries())))
    if proc.poll() is not None:
        return False
    kill_crawl(proc, signal.SIGKILL)
    return True


def test_sigkill_three_times_refetches_only_what_was_in_flight(tmp_path: Path, start_web: Any) -> None:
    web = start_web(hosts=20, pages=20, links=5, seed=7)
    job = tmp_path / "job"
    # A URL keeps the depth of the path it was first found by, which crawl
    # order (and so a kill) can make longer than the shortest one: crawl two
    # levels deeper than the truth that must be covered.
    settings = {
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 8, "CONCURRENT_REQUESTS": CONCURRENCY,
        "DOWNLOAD_DELAY": 0.02, "JOBDIR": job,
        "CONTENTSEEN_ENABLED": False,  # the truth follows copies' links
    }
    truth, reachable = web.truth(depth_limit=6), web.truth(depth_limit=8)
    rng = random.Random(12)
    in_flight: Counter[str] = Counter()
    kills = 0
    for run in range(3):
        proc = start_web_crawl(tmp_path / f"run{run}", str(web.seeds_file), settings)
        if not _kill_after(web, proc, rng.randint(40, 120), tmp_path / f"run{run}"):
            break
        kills += 1
        at_kill = _in_flight(job)
        assert len(at_kill) <= 4 * CONCURRENCY  # in flight, not everything since a checkpoint
        in_flight.update(at_kill)
    assert kills == 3, "the crawl ended before it was killed three times"
    final = run_web_crawl(tmp_path / "final", str(web.seeds_file), settings, timeout=180)
    assert final.returncode == 0, final.log[-3000:]
    fetched = {canonical_url(f"http://{e.host}:{web.port}{e.path}") for e in web.entries()
               if e.path != "/robots.txt"}
    assert set(truth.regular) <= fetched <= set(reachable.fetched)
    extra = _extra_fetches(web)
    beyond = {url: count for url, count in extra.items() if count > in_flight[url]}
    assert not beyond, f"fetched again without being in flight at a kill: {sorted(beyond)[:10]}"
    assert sum(extra.values()) <= sum(in_flight.values())
