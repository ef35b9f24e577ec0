"""AOPIC's shared ledger on real ``redis-server`` processes
(extensions/backends/redis/ledger.py, lua/ledger_cash.lua): the cash rows
its scripts write are settled at dividend 0 (8 bytes never fetched, 24
fetched), with exact numbers (dyadic amounts: no rounding) on one Redis,
and on a 3-master cluster, where a process settles at its own possibly
stale view of the dividend: a take with a stale ``d`` takes less than the
row holds and leaves the difference in it, nothing lost or created.
Whole crawls: tests/test_distributed*.py, tests/test_aopic_redis_async.py."""

from __future__ import annotations

import random
import struct

import pytest

from extensions.backends.redis.ledger import SharedLedger
from extensions.backends.redis.store import RedisStore
from extensions.frontier.fingerprint import url_fingerprint
from testweb.redisserver import RedisClusterServers, RedisServer, unique_prefix
from tests.aopic_helpers import ledger_totals


def fp(name: str) -> int:
    return url_fingerprint(f"http://{name}.test/")[0]


def ledger_on(url: str, prefix: str) -> SharedLedger:
    """A crawler process's ledger: its own connection, its own view."""
    store = RedisStore(url, prefix)
    store.open()
    ledger = SharedLedger(store, initial_cash=1.0, tax=0.5)
    ledger.load()
    return ledger


def raw(ledger: SharedLedger, *names: str) -> dict[str, bytes]:
    """The stored bytes of the names' cash rows."""
    found = ledger.store.cash.maps.get([fp(name) for name in names])
    return {name: found[fp(name)] for name in names}


def exact_totals(ledger: SharedLedger) -> tuple[float, float, float, float]:
    ledger.store.connection.flush()  # a cluster's JOINs are buffered
    totals = ledger_totals(ledger)
    return totals.cash + totals.unpaid, totals.lambda_cash, totals.conserved, totals.put_in


def test_the_scripts_write_4_byte_rows_never_fetched_and_24_fetched(redis_server: RedisServer) -> None:
    ledger = ledger_on(redis_server.url, unique_prefix())
    for seed in ("a", "b"):
        assert ledger.seed(fp(seed)) == (0.0, 1.0, False)
    paid, _ = ledger.distribute(fp("a"), [fp("c"), fp("e")])  # 1.0: 0.5 to Lambda, 0.25 each
    assert (paid.cash, paid.history, paid.visits, paid.changes) == (1.0, 1.0, 1, [(0.0, 0.25, False)] * 2)
    assert ledger.maybe_crawl_lambda(0.0)
    ledger.store.connection.flush()
    ledger.refresh()
    assert (ledger.dividend, ledger.lambda_cash, ledger.rows) == (0.125, 0.0, 4)  # 0.5 over 4 rows
    assert ledger.cash_of(fp("b")) == 1.125
    paid, _ = ledger.distribute(fp("b"), [fp("f")])  # 1.125: 0.5625 to Lambda and to f
    assert (paid.cash, paid.changes) == (1.125, [(0.0, 0.5625, False)])
    rows = raw(ledger, "a", "b", "c", "e", "f")
    assert rows["c"] == rows["e"] == struct.pack(">f", 0.25)  # u: the cash at dividend 0
    assert rows["f"] == struct.pack(">f", 0.5625 - 0.125)  # created at D = 0.125
    assert rows["a"] == struct.pack(">ddq", -0.0, 1.0, 1) and rows["b"] == struct.pack(">ddq", -0.125, 1.125, 1)
    assert {len(value) for value in rows.values()} == {4, 24}
    assert [ledger.cash_of(fp(name)) for name in "abcef"] == [0.125, 0.0, 0.375, 0.375, 0.5625]
    assert exact_totals(ledger) == (1.4375, 0.5625, 2.0, 2.0)
    ledger.store.delete_crawl()
    ledger.store.close()


def test_what_single_precision_rounds_off_a_credit_goes_to_lambda(redis_server: RedisServer) -> None:
    """A third of 0.5 is not a float: each credited row keeps it rounded,
    Lambda gets the difference, and the cash is conserved as exactly as
    doubles add (a row written by Python keeps its double)."""
    ledger = ledger_on(redis_server.url, unique_prefix())
    ledger.seed(fp("a"))
    paid, _ = ledger.distribute(fp("a"), [fp("c"), fp("d"), fp("e")])
    third = struct.unpack(">f", struct.pack(">f", 0.5 / 3))[0]
    assert third != 0.5 / 3 and [after for _, after, _ in paid.changes] == [0.5 / 3] * 3
    assert {ledger.cash_of(fp(name)) for name in "cde"} == {third}
    cash, lam, conserved, put_in = exact_totals(ledger)
    assert lam == pytest.approx(0.5 + 3 * (0.5 / 3 - third), abs=1e-15) and lam != 0.5
    assert conserved == pytest.approx(put_in, abs=1e-15) and cash + lam == pytest.approx(1.0, abs=1e-15)
    ledger.store.delete_crawl()
    ledger.store.close()


def test_lambda_is_asked_of_redis_only_when_this_process_s_view_says_it_wins(redis_server: RedisServer) -> None:
    """Called at every hand-out: a script call a page for what the view can
    answer; when the view says Lambda wins, Redis crawls it."""
    ledger = ledger_on(redis_server.url, unique_prefix())
    for seed in ("a", "b"):
        ledger.seed(fp(seed))
    ledger.distribute(fp("a"), [fp("c")])  # Lambda 0.5
    ledger.store.connection.flush()
    assert not ledger.maybe_crawl_lambda(1.0)  # b holds 1.0
    assert ledger.store.connection.pending() == 0
    assert ledger.maybe_crawl_lambda(0.25) and ledger.store.connection.pending() == 1
    ledger.store.connection.flush()
    ledger.refresh()
    assert (ledger.lambda_cash, ledger.lambda_crawls) == (0.0, 1)
    ledger.store.delete_crawl()
    ledger.store.close()


def test_a_stale_dividend_on_a_cluster_takes_less_and_leaves_the_rest_in_the_row(
        redis_cluster: RedisClusterServers) -> None:
    """Three processes on a cluster: c's view of the dividend is from its
    start, a's from its last page; both settle below the ledger's D."""
    prefix = unique_prefix()
    a, b, c = (ledger_on(redis_cluster.url, prefix) for _ in range(3))
    assert a.store.cluster
    for seed in ("s", "t"):
        a.seed(fp(seed))
    a.distribute(fp("s"), [fp("u"), fp("v")])  # a's view: D 0, Lambda 0.5, 4 rows
    a.store.connection.flush()
    b.refresh()
    assert b.maybe_crawl_lambda(0.0) and b.dividend == 0.125
    b.store.connection.flush()
    b.credit_many([(fp("g"), 0.0625)])  # created at D = 0.125: u = -0.0625
    b.store.connection.flush()
    assert (a.dividend, c.dividend) == (0.0, 0.0)

    # a settles t at d = 0: t holds 1.125, a takes 1.0 and 0.125 stays in t;
    # f, created at d = 0, owes the 0.125 of dividend it never had: JOIN charges Lambda
    paid, _ = a.distribute(fp("t"), [fp("f")])
    assert (paid.cash, paid.history, paid.visits, paid.changes) == (1.0, 1.0, 1, [(0.0, 0.5, False)])
    a.store.connection.flush()
    a.refresh()
    assert (a.dividend, a.lambda_cash, a.rows, a.put_in) == (0.125, 0.375, 6, 2.0625)
    assert (a.cash_of(fp("t")), a.cash_of(fp("f"))) == (0.125, 0.625)

    # c settles g at d = 0, below the dividend g was created at: u + d < 0, nothing taken
    assert c.take(fp("g")) == (0.0, 0.0, 1)
    c.store.connection.flush()
    assert c.cash_of(fp("g")) == 0.0625  # all of it still in the row
    assert raw(c, "g")["g"] == struct.pack(">ddq", -0.0625, 0.0, 1)
    assert raw(c, "t")["t"] == struct.pack(">ddq", -0.0, 1.0, 1)  # settled at a's d = 0
    assert {len(value) for value in raw(c, "u", "v", "f").values()} == {4}
    # rows: s, t 0.125 each, u, v 0.375, f 0.625, g 0.0625; Lambda 0.375; put in 2.0625
    assert exact_totals(c) == (1.6875, 0.375, 2.0625, 2.0625)
    c.store.delete_crawl()
    for ledger in (a, b, c):
        ledger.store.close()


def long_crawl(ledger: SharedLedger, urls: int, pages: int, seed: int = 5) -> tuple[float, float]:
    """A random crawl of ``pages`` fetches over ``urls`` URLs (1-8 links a
    page, one page in 8 without), Lambda crawled whenever it holds cash, so
    the dividend grows far past a row's cash; the conservation error
    relative to the cash put in, and the dividend over the mean cash."""
    rng = random.Random(seed)
    fps = [fp(f"u{number}") for number in range(urls)]
    for seed_fp in fps[:10]:
        ledger.seed(seed_fp)
    known = fps[:10]
    for _ in range(pages):
        links = [] if rng.random() < 0.125 else rng.sample(fps, rng.randint(1, 8))
        paid, _ = ledger.distribute(rng.choice(known), links)
        known += [link for link, (_, _, existed) in zip(links, paid.changes) if not existed]
        ledger.maybe_crawl_lambda(0.0)
    totals = ledger_totals(ledger)
    return abs(totals.conserved - totals.put_in) / totals.put_in, ledger.dividend / ledger.mean_cash()


def test_cash_stays_conserved_when_the_dividend_dwarfs_a_rows_cash(redis_server: RedisServer) -> None:
    """Rows hold u = cash - D, so a row's cash u + D cancels once D is far
    above it: over a crawl of 20 fetches per URL, D over 10 times the mean cash,
    the sum still holds within the crawl tests' tolerance (1e-9 of the cash
    put in)."""
    ledger = ledger_on(redis_server.url, unique_prefix())
    error, dividend_over_cash = long_crawl(ledger, 200, 4000)
    assert dividend_over_cash > 10, dividend_over_cash
    assert error <= 1e-9, error
    ledger.store.delete_crawl()
    ledger.store.close()
