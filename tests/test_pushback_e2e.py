"""Sites that push back are obeyed, end to end: ``scrapy crawl web`` (one
process on SQLite, then two processes sharing a frontier on a real
redis-server) against :class:`testweb.pushback.PushbackWeb`, whose hosts
answer 429 with ``Retry-After: 3``, 503 with ``Retry-After`` as an HTTP-date
3 s ahead, and 429 with no ``Retry-After`` (three times for ``/``, once for
each of two pages), beside a slow host that never pushes back.

Judged from the server's own log (wall-clock times, every request of every
process): no request to a host that pushed back before its pause ends, the
refused URL fetched after it (its retries unspent: three pushbacks with
``RETRY_TIMES=1``), the calm host fetched meanwhile, and the host whose
three URLs pushed back slowed for the rest of the crawl: the gaps between
its later requests, as numbers, at least its widened delay.
"""

from __future__ import annotations

import email.utils
import signal
from pathlib import Path
from typing import Any

import pytest
from redis.backoff import NoBackoff
from redis.retry import Retry

from extensions.backends.redis.connection import connect
from extensions.backends.redis.keys import Keys
from testweb.crawlrun import CrawlResult, kill_crawl, run_web_crawl
from testweb.pushback import DATE, PushbackWeb, Rule, Visit
from testweb.redisserver import RedisServer, unique_prefix
from testweb.waiting import CrawlActivity, ended, wait_until
from tests.test_distributed import TTL, crawlers, wait_all

SECONDS, HTTP_DATE, NO_HEADER, CALM = "seconds.test", "date.test", "none.test", "calm.test"
RULES = {SECONDS: Rule(429, "3"), HTTP_DATE: Rule(503, DATE, seconds=3.0),
         NO_HEADER: Rule(429, None, paths=(("/", 3), ("/page/1", 1), ("/page/2", 1)))}
DELAY = 0.25  # DOWNLOAD_DELAY
BACKOFF = 1.0  # PUSHBACK_BACKOFF_DELAY: none.test pauses 1, 2, 4 s ("/" in a row), then for its pages
HOST_DELAY, FACTOR = 0.6, 2.0  # none.test's delay: 0.6 s once 2 of its URLs pushed back, 1.2 s at the 3rd
SETTINGS = {
    "DOWNLOAD_DELAY": DELAY, "RETRY_TIMES": 1, "PUSHBACK_BACKOFF_DELAY": BACKOFF,
    "PUSHBACK_HOST_DELAY": HOST_DELAY, "PUSHBACK_HOST_DELAY_FACTOR": FACTOR, "PUSHBACK_WIDEN_AFTER": 2,
    "CONTENTSEEN_ENABLED": False,  # the pages are alike; every one must be fetched
}


def start_web() -> PushbackWeb:
    return PushbackWeb(RULES, [CALM], pages=8, slow={CALM: 0.4})


def expected_pause(visits: list[Visit], index: int, one_process: bool = True) -> float:
    """The pause the pushback ``visits[index]`` asks for, from the server's
    log. The back-off doubles with the pushbacks in a row that the process
    has seen: with several processes (the host's lease may have moved) at
    least its first step."""
    visit = visits[index]
    if visit.retry_after is None and not one_process:
        return BACKOFF
    if visit.retry_after is None:  # back-off: doubled with each pushback in a row
        in_a_row = 1
        while index - in_a_row >= 0 and visits[index - in_a_row].pushed_back:
            in_a_row += 1
        return BACKOFF * 2 ** (in_a_row - 1)
    if visit.retry_after.isdigit():
        return float(visit.retry_after)
    return email.utils.parsedate_to_datetime(visit.retry_after).timestamp() - visit.end


def gaps(visits: list[Visit]) -> list[float]:
    """End of one request to the start of the next, in order."""
    return [after.start - before.end for before, after in zip(visits, visits[1:])]


def assert_pauses_kept(web: PushbackWeb, one_process: bool = True) -> int:
    """Every pushback: the host's next request only after the pause, and the
    URL fetched again (200) after it; how many pushbacks were checked."""
    checked = 0
    for host in RULES:
        visits = web.log_of(host)
        for index, visit in enumerate(visits):
            if not visit.pushed_back:
                continue
            assert index + 1 < len(visits), f"{host}: nothing fetched after the pushback {visit}"
            pause = expected_pause(visits, index, one_process)
            assert visits[index + 1].start - visit.end >= pause, (host, pause, visit, visits[index + 1])
            assert any(later.path == visit.path and later.status == 200 for later in visits[index + 1:]), (
                host, visit)
            checked += 1
        assert [v.path for v in visits if v.status == 200].count("/") == 1, visits
        assert len([v for v in visits if v.status == 200]) == web.pages, visits  # every page, once
    return checked


def pushback_stats(results: list[CrawlResult]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for result in results:
        for key, value in result.stats.items():
            if key.startswith("pushback/") and isinstance(value, int):
                totals[key] = totals.get(key, 0) + value
    return totals


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("pushback")
    with start_web() as web:
        settings = {**SETTINGS, "DNS_HOSTS": web.write_hosts_file(tmp / "hosts")}
        result = run_web_crawl(tmp / "crawl", ",".join(web.seeds()), settings)
        yield web, result


def test_the_crawl_ends_by_itself_with_nothing_failed(single: Any) -> None:
    _, result = single
    assert result.returncode == 0, result.log[-3000:]
    assert result.report["finish_reason"] == "finished"
    stats = result.stats
    assert stats.get("frontier/failed", 0) == 0
    assert stats.get("retry/count", 0) == 0 and stats.get("retry/max_reached", 0) == 0


def test_no_request_to_a_host_before_its_pause_ends_and_the_url_is_fetched_after(single: Any) -> None:
    web, _ = single
    assert assert_pauses_kept(web) == 7  # Retry-After seconds, as a date, and five back-offs


def test_three_pushbacks_of_one_url_spend_none_of_its_retries(single: Any) -> None:
    web, _ = single
    statuses = [(visit.path, visit.status) for visit in web.log_of(NO_HEADER)]
    assert statuses[:4] == [("/", 429), ("/", 429), ("/", 429), ("/", 200)]  # RETRY_TIMES=1


def test_other_hosts_are_fetched_while_one_is_paused(single: Any) -> None:
    web, _ = single
    pushback = next(visit for visit in web.log_of(SECONDS) if visit.pushed_back)
    during = [visit for visit in web.log_of(CALM) if pushback.end < visit.start < pushback.end + 3.0]
    assert during, (pushback, web.log_of(CALM))


def test_a_host_that_keeps_pushing_back_is_slowed_for_the_rest_of_the_crawl(single: Any) -> None:
    web, _ = single
    visits = web.log_of(NO_HEADER)
    last = [index for index, visit in enumerate(visits) if visit.pushed_back][-1]
    later = visits[last + 1:]  # after the pause of its 3rd URL's pushback: its widened delay
    assert len(later) >= web.pages - 3 and {visit.status for visit in later} == {200}
    widened = HOST_DELAY * FACTOR
    assert min(gaps(later)) >= widened, gaps(later)
    # one pushback each: those hosts keep the crawl's delay, far below a widened one
    for host in (SECONDS, HTTP_DATE):
        assert DELAY <= min(gaps(web.log_of(host)[1:])) < HOST_DELAY, gaps(web.log_of(host))


def test_pushbacks_are_counted_and_are_not_errors(single: Any) -> None:
    web, result = single
    stats = pushback_stats([result])
    assert stats["pushback/responses"] == sum(v.pushed_back for v in web.visits) == 7
    assert (stats["pushback/status/429"], stats["pushback/status/503"]) == (6, 1)
    assert (stats["pushback/retry_after/seconds"], stats["pushback/retry_after/date"],
            stats["pushback/retry_after/none"]) == (1, 1, 5)
    assert stats["pushback/hosts_slowed"] == 1 and stats["pushback/widened"] == 2
    assert "pushback/handed_on" not in stats
    assert result.report["errors"] == 0  # the 503 pushed back: an outcome, not a server error
    assert result.report["outcomes"]["pushback"] == 7


def redis_settings(web: PushbackWeb, workdir: Path, url: str, prefix: str) -> dict[str, Any]:
    return {**SETTINGS, "DNS_HOSTS": web.write_hosts_file(workdir / "hosts"), "FRONTIER_BACKEND": "redis",
            "REDIS_URL": url, "FRONTIER_REDIS_PREFIX": prefix, "SCHEDULER_PERSIST": True,
            "FRONTIER_LEASE_TTL": TTL}


def test_two_processes_on_redis_keep_every_pause(redis_server: RedisServer, tmp_path: Path) -> None:
    with start_web() as web:
        settings = redis_settings(web, tmp_path, redis_server.url, unique_prefix())
        with crawlers(tmp_path, ",".join(web.seeds()), settings, 2) as procs:
            results = wait_all(procs, tmp_path)
        for result in results:
            assert result.returncode == 0, result.log[-3000:]
        assert assert_pauses_kept(web, one_process=False) == 7
        stats = pushback_stats(results)
        assert stats["pushback/responses"] == sum(v.pushed_back for v in web.visits) == 7
        assert sum(result.stats.get("frontier/failed", 0) for result in results) == 0


def test_the_process_that_takes_a_paused_host_over_keeps_its_pause(redis_server: RedisServer,
                                                                  tmp_path: Path) -> None:
    """The hold is crawl-wide: the process that heard the 429 is killed
    once the hold is in Redis; the other takes the host's lease over (after
    its TTL, well before the pause ends) and still waits the pause out."""
    pause = 4 * TTL
    prefix = unique_prefix()
    keys, client = Keys(prefix), connect(redis_server.url, 10.0, Retry(NoBackoff(), 0))
    with PushbackWeb({SECONDS: Rule(429, f"{pause:.0f}")}, [CALM], pages=8, slow={CALM: 0.4}) as web:
        origin = web.url("", SECONDS)
        settings = redis_settings(web, tmp_path, redis_server.url, prefix)
        with crawlers(tmp_path, ",".join(web.seeds()), settings, 2) as procs:
            def owner() -> str | None:
                found = client.hget(keys.lease(SECONDS), "owner")
                return None if found is None else found.decode().rsplit(":", 2)[1]
            try:
                wait_until(lambda: ended(procs) or (client.hexists(keys.held_origins, origin) and owner()),
                           "the hold of the pushed-back origin in Redis",
                           CrawlActivity([tmp_path / f"crawl{i}" for i in range(2)]))
                victim = next(i for i, proc in enumerate(procs) if str(proc.pid) == owner())
            finally:
                client.close()
            assert not ended(procs), "a crawl ended before the hold reached Redis"
            kill_crawl(procs[victim], signal.SIGKILL)
            survivor = 1 - victim
            [result] = wait_all([procs[survivor]], tmp_path, first=survivor)
    assert result.returncode == 0, result.log[-3000:]
    visits = web.log_of(SECONDS)
    index = next(i for i, visit in enumerate(visits) if visit.pushed_back)
    assert visits[index + 1].start - visits[index].end >= pause, visits
    assert ("/", 200) in [(visit.path, visit.status) for visit in visits[index + 1:]]
    assert result.stats.get("frontier/leases_taken_over", 0) > 0
