"""AOPIC: the cash ledger (conservation, Lambda), the cash prioritiser and
the frontier's promotion of URLs whose cash grows while they wait."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from scrapy import Request

from extensions.frontier.page import PageVerdict
from twisted.internet.task import Clock

from extensions.aopic.ledger import AOPICLedger
from extensions.backends.redis.ledger import SharedLedger
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.prioritizer import CashPrioritizer
from tests.test_frontier_support import LEDGER_STORES, STORES, drain, make_frontier, make_store, opened_store, shared
from tests.aopic_helpers import ledger_totals


@pytest.fixture(params=STORES)
def store(request: Any, tmp_path: Any) -> Any:
    yield from opened_store(request.param, tmp_path)


@pytest.fixture(params=LEDGER_STORES)
def ledger_store(request: Any, tmp_path: Any) -> Any:
    yield from opened_store(request.param, tmp_path)


def assert_conserved(ledger: AOPICLedger) -> None:
    totals = ledger_totals(ledger)
    assert math.isclose(totals.conserved, totals.put_in, rel_tol=1e-9, abs_tol=1e-9), totals


def history_of(ledger: AOPICLedger, fingerprint: int) -> float:
    """A URL's history: the cash its fetches have paid in (0.0 for a URL never given any)."""
    row = ledger.store.cash.get_cash([fingerprint]).get(fingerprint)
    return 0.0 if row is None else row[1]


def test_the_seeds_example_splits_cash_after_tax(store: Any) -> None:
    """The seeds' worked example: 100 credits, 10 links, 10% tax -> 9 each
    (with the ledger the store's backend gives: on Redis the shared one)."""
    ledger = (SharedLedger if shared(store) else AOPICLedger)(store, initial_cash=100.0, tax=0.1)
    ledger.seed(1)
    paid, _ = ledger.distribute(1, list(range(2, 12)))
    assert (paid.cash, paid.history) == (100.0, 100.0)
    assert [after for _, after, _ in paid.changes] == pytest.approx([9.0] * 10)
    assert ledger.lambda_cash == pytest.approx(10.0)
    assert ledger.cash_of(5) == pytest.approx(9.0)
    assert ledger.cash_of(1) == 0.0
    assert_conserved(ledger)


def test_a_page_without_outlinks_gives_everything_to_lambda(ledger_store: Any) -> None:
    ledger = AOPICLedger(ledger_store)
    ledger.seed(1)
    cash, _, _ = ledger.take(1)
    assert ledger.split(cash, 0) == 0.0
    assert ledger.lambda_cash == pytest.approx(1.0)
    assert_conserved(ledger)


def test_lambda_is_crawled_when_richest_and_spreads_over_every_page(ledger_store: Any) -> None:
    ledger = AOPICLedger(ledger_store, initial_cash=1.0, tax=0.5)
    for fp in (1, 2, 3, 4):
        ledger.seed(fp)
    cash, _, _ = ledger.take(1)
    share = ledger.split(cash, 1)  # 0.5 to Lambda, 0.5 to page 2
    ledger.credit_many([(2, share)])
    assert not ledger.maybe_crawl_lambda(rival_cash=1.5)  # page 2 is richer
    assert ledger.maybe_crawl_lambda(rival_cash=0.25)
    assert ledger.lambda_cash == 0.0
    assert ledger.cash_of(3) == pytest.approx(1.0 + 0.5 / 4)  # spread lazily, equally
    assert ledger.cash_of(1) == pytest.approx(0.5 / 4)  # the fetched page gets its part too
    assert_conserved(ledger)


def test_cash_is_conserved_over_a_random_crawl(ledger_store: Any) -> None:
    """Random seeds, fetches, outlinks (known and new) and Lambda crawls:
    cash on pages + unpaid dividends + Lambda == cash put in, always."""
    rng = random.Random(5)
    ledger = AOPICLedger(ledger_store, initial_cash=1.0, tax=0.1)
    known: list[int] = []
    for fp in range(10):
        ledger.seed(fp)
        known.append(fp)
    next_fp = 10
    history_flow = 0.0
    for _ in range(2000):
        page = rng.choice(known)
        ledger.maybe_crawl_lambda(ledger.cash_of(page))
        cash, _, _ = ledger.take(page)
        history_flow += cash
        links = [rng.choice(known) for _ in range(rng.randint(0, 4))]
        for _ in range(rng.randint(0, 3)):
            links.append(next_fp)
            known.append(next_fp)
            next_fp += 1
        share = ledger.split(cash, len(links))
        if links:
            ledger.credit_many([(fp, share) for fp in links])
        if rng.random() < 0.05:
            ledger.seed(next_fp)
            known.append(next_fp)
            next_fp += 1
    assert_conserved(ledger)
    assert ledger_totals(ledger).history == pytest.approx(history_flow)
    assert ledger.lambda_crawls > 0


def test_ledger_survives_save_and_load(tmp_path: Any) -> None:
    first = make_store("sqlite", tmp_path)
    first.open()
    ledger = AOPICLedger(first)
    ledger.seed(1)
    ledger.split(ledger.take(1)[0], 3)
    ledger.save()
    first.close()
    second = make_store("sqlite", tmp_path)
    second.open()
    resumed = AOPICLedger(second)
    resumed.load()
    assert resumed.lambda_cash == pytest.approx(0.1)
    assert resumed.put_in == 1.0 and resumed.rows == 1
    assert history_of(resumed, 1) == 1.0
    second.close()


def test_cash_prioritiser_levels_follow_cash() -> None:
    prioritizer = CashPrioritizer(levels=8)

    def level(cash: float) -> int:
        return prioritizer.level(0, 0, {"aopic_cash": cash, "aopic_mean": 1.0})

    assert level(1.0) == 4
    assert level(2.0) == 5 and level(4.0) == 6 and level(1000.0) == 7
    assert level(0.5) == 3 and level(0.001) == 0
    assert prioritizer.level(0, 2, {}) == 5  # no AOPIC: by depth


def test_seeds_get_cash_and_richer_urls_are_fetched_first(store: Any) -> None:
    """One host, URLs queued with different cash: the frontier hands out the
    richest first; a URL whose cash grows while it waits moves up and is
    fetched once."""
    clock = Clock()
    frontier = make_frontier(store, clock, ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8),
                             back_queues=1, queue_buffer=2)
    seed = Request("http://a.test/", meta={"is_start_request": True})
    assert frontier.enqueue_request(seed)
    assert frontier.ledger.cash_of(url_fingerprint(seed.url)[0]) == 1.0
    fetched = frontier.next_request()
    assert fetched.url == "http://a.test/"
    # the fetch ends before the pipelines judge the page (the shared dispatch
    # holds a host while a fetch of it is in flight: back_queues=1 is all)
    frontier.fetch_finished(fetched, duration=0.0)
    links = [f"http://b.test/{i}" for i in range(6)]
    frontier.page_done(PageVerdict("http://a.test/", links))  # 0.15 each, before they are enqueued
    for url in links:
        frontier.enqueue_request(Request(url))
    # b.test/5 gets a lot more cash while it waits: a rich page links to it
    frontier.ledger.credit_many([(url_fingerprint("http://c.test/")[0], 40.0)])
    frontier.page_done(PageVerdict("http://c.test/", ["http://b.test/5"]))
    assert frontier.stats.get_value("aopic/promoted") == 1
    order = [url for _, url in drain(frontier, clock)]
    assert order[0] == "http://b.test/5"
    assert sorted(order) == sorted(links)  # every URL once: the stale copy is skipped
    # with trims, dropped at the refill already (its row is gone); the shared
    # dispatch moves the URL within its host's queue, leaving no copy behind
    if not getattr(store.urls, "trims", False) and not shared(store):
        assert frontier.stats.get_value("frontier/stale_copies") == 1


def test_frontier_conserves_cash_across_a_driven_crawl(store: Any) -> None:
    """Drive the frontier like the pipeline does on a small random graph."""
    rng = random.Random(3)
    clock = Clock()
    frontier = make_frontier(store, clock, ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8))
    for i in range(3):
        frontier.enqueue_request(Request(f"http://h{i}.test/", meta={"is_start_request": True}))
    fetched = 0
    while fetched < 300:
        request = frontier.next_request()
        if request is None:
            if not frontier.has_pending_requests():
                break
            clock.advance(0.05)
            continue
        fetched += 1
        links = [f"http://h{rng.randrange(6)}.test/{rng.randrange(80)}" for _ in range(rng.randint(0, 5))]
        frontier.page_done(PageVerdict(request.url, links))
        for url in links:
            frontier.enqueue_request(Request(url))
        frontier.fetch_finished(request, duration=0.0)
    assert fetched > 50
    assert_conserved(frontier.ledger)


def test_crawl_conserves_cash_and_exports_importance(start_web: Any, tmp_path: Any) -> None:
    """``scrapy crawl web`` end to end: items carry the AOPIC history, the URL
    database holds it per URL, and the ledger balances after the crawl."""
    import sqlite3  # noqa: PLC0415

    from testweb.crawlrun import run_web_crawl  # noqa: PLC0415

    web = start_web(hosts=8, pages=8)
    result = run_web_crawl(tmp_path / "crawl", str(web.seeds_file),
                           settings={"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 6,
                                     "JOBDIR": tmp_path / "job"})
    assert result.returncode == 0, result.log[-2000:]
    pages = [item for item in result.items if item["status"] == 200
             and item["content_type"].startswith("text/html")]
    assert pages and all(item["importance"] > 0 for item in pages)
    assert all("links" not in item for item in result.items)
    with sqlite3.connect(tmp_path / "job" / "frontier.sqlite3") as db:
        lambda_cash, dividend, put_in, rows, _ = (
            float(v) for v in db.execute("SELECT value FROM meta WHERE key='aopic'").fetchone()[0].split(","))
        cash, marks, count = db.execute("SELECT SUM(cash), SUM(mark), COUNT(*) FROM cash").fetchone()
        fetched_history = db.execute(
            "SELECT COUNT(*) FROM urls_readable WHERE status='done' AND history > 0").fetchone()[0]
    assert put_in == 3.0  # three seeds
    assert count == rows
    assert math.isclose(cash + (rows * dividend - marks) + lambda_cash, put_in, rel_tol=1e-9)
    assert fetched_history >= len(pages) * 0.9


def test_revisits_fetch_each_page_again_up_to_the_setting(store: Any) -> None:
    """OPIC passes: with FRONTIER_AOPIC_REVISITS=2 every page is fetched
    three times, each revisit adding the cash it gathered to its history."""
    clock = Clock()
    frontier = make_frontier(store, clock, ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8),
                             revisits=2)
    graph = {"http://a.test/": ["http://b.test/", "http://c.test/"],
             "http://b.test/": ["http://a.test/", "http://c.test/"],
             "http://c.test/": ["http://a.test/"]}
    frontier.enqueue_request(Request("http://a.test/", meta={"is_start_request": True}))
    fetches: list[str] = []
    for _ in range(1000):
        request = frontier.next_request()
        if request is None:
            if not frontier.has_pending_requests():
                break
            clock.advance(0.05)
            continue
        fetches.append(request.url)
        frontier.page_done(PageVerdict(request.url, graph[request.url]))
        for url in graph[request.url]:
            frontier.enqueue_request(Request(url))
        frontier.fetch_finished(request, duration=0.0)
    assert sorted(fetches) == sorted(list(graph) * 3)
    assert frontier.stats.get_value("aopic/revisits") == 6
    assert_conserved(frontier.ledger)
    histories = {url: history_of(frontier.ledger, url_fingerprint(url)[0]) for url in graph}
    assert histories["http://a.test/"] > histories["http://c.test/"] > 0  # a has two in-links


def test_a_pages_cash_read_in_one_go_gives_the_same_ledger_as_separate_reads(tmp_path: Any) -> None:
    """distribute() reads the page's and its links' rows once (one round
    trip on Redis); random pages, self-links and repeated links included,
    the rows and totals match those of separate reads, to the bit."""
    rng = random.Random(21)
    stores = [make_store("memory", tmp_path / "a"), make_store("memory", tmp_path / "b")]
    for each in stores:
        each.open()
    together, apart = (AOPICLedger(each, tax=0.1) for each in stores)
    for ledger in (together, apart):
        for fp in range(1, 6):
            ledger.seed(fp)
    for _ in range(300):
        page = rng.randrange(1, 40)
        links = [rng.randrange(1, 40) for _ in range(rng.randrange(0, 6))]
        together.distribute(page, links)
        cash, _, _ = apart.take(page)
        share = apart.split(cash, len(links))
        if share > 0:
            apart.credit_many([(fp, share) for fp in links])
        if rng.random() < 0.05:
            for ledger in (together, apart):
                ledger.maybe_crawl_lambda(0.0)
    assert ledger_totals(together) == ledger_totals(apart)
    every = list(range(1, 40))
    assert stores[0].cash.get_cash(every) == stores[1].cash.get_cash(every)
    assert_conserved(together)
