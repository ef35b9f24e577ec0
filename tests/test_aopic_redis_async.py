"""AOPIC's cash script through the shared frontier's worker thread
(:meth:`SharedLedger.distribute_then <extensions.backends.redis.ledger.SharedLedger.distribute_then>`,
``AOPICCredit.page_done`` returning a Deferred, ``LinkScheduler``
scheduling the links when it fires).

On real ``redis-server`` processes with a real Twisted reactor
(``tests/aopic_redis_probe.py``, a subprocess: a reactor runs once per
process): the reactor keeps ticking while Redis is paused during
``page_done`` (the control, the payment on the reactor thread, stops); a
seeded link graph's pages, handed over all at once, get the credits and
histories of the synchronous path page for page, with the ledger conserved
and no round trip on the reactor thread; a 304 gets its stored outlinks
back; and a ``scrapy crawl web`` in Redis mode fetches the ground truth
with its cash conserved and its reactor thread waiting for well under one
round trip per page. Counts decide, not timings.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from testweb import WebConfig, start_testweb
from testweb.redisserver import RedisServer, unique_prefix
from tests.reactor_probe import PAUSE_MS, run_probe
from tests.test_distributed import (
    assert_cash_conserved, assert_ground_truth, crawl_settings, crawlers, repeats_other_than_retries, wait_all,
)



def probe(*args: str) -> dict[str, Any]:
    result = run_probe("aopic_redis_probe", *args)
    assert result["error"] is None, result["error"]
    return result



def test_the_reactor_keeps_ticking_while_redis_is_paused_during_page_done(paused_server: RedisServer) -> None:
    result = probe("pause", paused_server.url, unique_prefix(), "io_thread", str(PAUSE_MS))
    assert result["worker"] is True and result["deferred"] == 5
    # the LoopingCall went on ticking before the payments were answered
    assert result["ticks_before_answers"] >= 20, result
    assert result["answered"] == 5 and result["credited"] == 15, result


def test_control_paying_on_the_reactor_thread_stops_it(paused_server: RedisServer) -> None:
    """The same probe without the worker: page_done returns its answer at
    once, after Redis answered, and no tick ran meanwhile."""
    result = probe("pause", paused_server.url, unique_prefix(), "inline", str(PAUSE_MS))
    assert result["worker"] is False and result["deferred"] == 0
    assert result["ticks_before_answers"] == 0, result
    assert result["answered"] == 5 and result["credited"] == 15, result


def test_credits_are_those_of_the_synchronous_path(redis_server: RedisServer) -> None:
    """Every page handed over at once: each page's history and its links'
    credits are the synchronous path's, exactly; the ledger is conserved;
    the reactor thread made no round trip for the payments."""
    answered = probe("credits", redis_server.url, unique_prefix(), "io_thread")
    waited = probe("credits", redis_server.url, unique_prefix(), "inline")
    assert answered["worker"] is True and waited["worker"] is False
    assert answered["deferred"] == len(answered["pages"]) and waited["deferred"] == 0
    assert answered["done"] == waited["done"]
    credited = [credit for _, credits in answered["done"] for credit in credits if credit[1] > 0]
    assert len(credited) > 500 and sum(history > 0 for history, _ in answered["done"]) > 100
    # queued links moved up on both paths (how many depends on when each page's
    # links were filed: at once on the synchronous path, as answers come here)
    assert answered["promoted"] > 0 and waited["promoted"] > 0
    for result in (answered, waited):
        conserved, put_in, rows, history = result["totals"]
        assert abs(conserved - put_in) <= 1e-9 * put_in and rows > 300, result["totals"]
    assert answered["totals"][1:3] == waited["totals"][1:3]
    # the payments made none; filing the links registers each new host once (37 hosts)
    assert answered["reactor_round_trips"] <= 37
    assert waited["reactor_round_trips"] >= len(waited["pages"])


def test_on_a_cluster_both_round_trips_of_a_payment_leave_the_reactor_thread(redis_cluster: Any) -> None:
    """On a cluster a page's take and its links' credits are two scripts in
    different slots: the worker thread sends the second from the first's
    answer, so the reactor thread waits for neither. Every page is paid and
    credits the same links as on the synchronous path, the ledger is
    conserved; amounts may differ, as the pipelined takes of later pages
    can run before earlier pages' credits (another valid order, as with
    several processes)."""
    answered = probe("credits", redis_cluster.url, unique_prefix(), "io_thread")
    waited = probe("credits", redis_cluster.url, unique_prefix(), "inline")
    assert answered["worker"] is True and waited["worker"] is False
    assert answered["deferred"] == len(answered["pages"]) == len(answered["done"]) and waited["deferred"] == 0
    assert [sorted(link for link, *_ in credits) for _, credits in answered["done"]] == \
        [sorted(link for link, *_ in credits) for _, credits in waited["done"]]
    assert sum(credit[1] > 0 for _, credits in answered["done"] for credit in credits) > 300
    for result in (answered, waited):
        conserved, put_in, rows, history = result["totals"]
        assert abs(conserved - put_in) <= 1e-9 * put_in and rows > 300, result["totals"]
    assert answered["totals"][1] == waited["totals"][1]  # the same cash put in
    # the payments made none; filing the links registers each new host once (37 hosts)
    assert answered["reactor_round_trips"] <= 37
    assert waited["reactor_round_trips"] > len(waited["pages"])  # a take, and credits when it had cash


@pytest.mark.parametrize("mode", ["io_thread", "inline"])
def test_a_304_gets_its_stored_outlinks(redis_server: RedisServer, mode: str) -> None:
    result = probe("stored", redis_server.url, unique_prefix(), mode)
    assert result["links"] == result["expected"]


@pytest.mark.parametrize("kind", ["single", "cluster"])
def test_a_crawl_pays_off_the_reactor_thread_and_conserves_cash(kind: str, redis_server: RedisServer,
                                                                redis_cluster: Any, tmp_path: Path) -> None:
    """One ``scrapy crawl web`` on the shared frontier with AOPIC: the
    ground truth, no page twice, cash conserved, and the reactor thread
    waited for Redis well under once per page (the payment alone
    was one round trip per page before, two on a cluster)."""
    prefix = unique_prefix()
    url = redis_cluster.url if kind == "cluster" else redis_server.url
    with start_testweb(WebConfig(hosts=20, pages=8, links=5, seed=3), tmp_path / "web") as web:
        settings = crawl_settings(web, url, prefix)
        with crawlers(tmp_path, str(web.seeds_file), settings, 1) as procs:
            [result] = wait_all(procs, tmp_path)
        assert result.returncode == 0, result.log[-3000:]
        assert result.report["finish_reason"] == "finished"
        assert_ground_truth(web)
        assert not repeats_other_than_retries(web)
    assert_cash_conserved(url, prefix)
    pages = result.stats["response_received_count"]
    assert pages >= 100
    # the payment on the reactor thread alone made one per page (two on a
    # cluster). Lease upkeep waits a few per renewal (FRONTIER_LEASE_TTL / 3:
    # a cost of the crawl's duration, not of its pages, apart); a new host's
    # registration and budget count and the idle end's settling make the rest
    per_page = result.stats["redis/reactor_round_trips"] - result.stats["redis/upkeep_reactor_round_trips"]
    assert 0 < result.stats["redis/upkeep_reactor_round_trips"]
    assert per_page < 0.5 * pages, result.stats
