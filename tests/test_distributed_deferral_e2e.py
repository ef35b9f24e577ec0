"""Every crawl ends on Redis too: two ``scrapy crawl web`` processes share a
frontier on one real redis-server, on a web with an unreachable robots.txt
(always 500), with the DEFAULT robots.txt retry settings (minutes of
back-off). When only the held origins' URLs are left, the processes defer
them and exit by themselves; and a host whose https port refuses connections
has its http pages crawled while its https origin is held. Judged by the
web's access log and the URL rows left in Redis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from extensions import defaults
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.store import Status
from extensions.backends.redis.store import RedisStore
from tests.conftest import fetched_urls
from testweb.redisserver import RedisServer, unique_prefix
from tests.test_deferral_e2e import closed_port
from tests.test_distributed import DEPTH, crawl_settings, crawlers, wait_all

IDLE = 3.0  # FRONTIER_IDLE_CLOSE; the bound on Redis is at least twice the lease TTL (2 s)
#: special.test's page that always answers 503 is a pushback whose pauses are
#: waited out: short ones here (pushback has tests of its own)
PUSHBACK = {"PUSHBACK_BACKOFF_DELAY": 0.2}


def run_two(workdir: Path, seeds: list[str], settings: dict[str, Any]) -> list[Any]:
    """Two crawl processes with the default robots.txt timing, each ended
    by itself (bounded: the back-offs alone would take minutes), exit 0."""
    with crawlers(workdir, ",".join(seeds), settings, 2, robots_overrides=False) as procs:
        results = wait_all(procs, workdir)
    for result in results:
        assert result.returncode == 0, result.log[-3000:]
        assert result.report["finish_reason"] == "finished"
    return results


def test_two_processes_defer_an_unreachable_origin_and_exit_by_themselves(
        start_web: Any, redis_server: RedisServer, tmp_path: Path) -> None:
    web = start_web(hosts=4, pages=6)
    seeds = [web.url("h0000.test"), web.url("h0001.test"), web.url("robots-500.test")]
    prefix = unique_prefix()
    settings = crawl_settings(web, redis_server.url, prefix, FRONTIER_IDLE_CLOSE=IDLE, **PUSHBACK)
    results = run_two(tmp_path, seeds, settings)

    # every page whose robots.txt answered was fetched
    truth = web.truth(seeds=seeds, depth_limit=DEPTH, robots_5xx="disallow")
    fetched = fetched_urls(web, include_robots=True)
    assert not set(truth.regular) - set(fetched), sorted(set(truth.regular) - set(fetched))[:10]
    # the crawl did not wait out the retries: fewer robots.txt tries than they allow
    unreachable = f"http://robots-500.test:{web.port}"
    assert 1 <= fetched[f"{unreachable}/robots.txt"] <= defaults.ROBOTSTXT_RETRY_TIMES

    store = RedisStore(redis_server.url, prefix)
    store.open()
    try:
        reasons = {origin: reason for origin, (reason, _) in store.hosts.deferrals().items()}
        assert store.urls.status_of(url_fingerprint(web.url("robots-500.test"))[0]) == Status.DEFERRED
        counts = store.count_by_status()
    finally:
        store.close()
    assert reasons[unreachable].startswith("held when nothing else was left: robots.txt unreachable")
    assert counts.get(Status.QUEUED, 0) == counts.get(Status.INFLIGHT, 0) == 0, counts
    assert sum(result.stats.get("frontier/deferred", 0) for result in results) == counts[Status.DEFERRED]
    for result in results:  # each process's report lists the deferred origins
        assert result.report["deferred"] == reasons


def test_a_dead_https_port_never_delays_the_hosts_http_pages(
        start_web: Any, redis_server: RedisServer, tmp_path: Path) -> None:
    """The dead https origin's seeds are the most important URLs of their
    host; its http pages still go at the host's pace while the hold lasts,
    and only then is the https origin deferred (the idle close)."""
    web = start_web(hosts=4, pages=6)
    dead = f"https://h0002.test:{closed_port()}"
    seeds = [f"{dead}/", f"{dead}/a.html", f"{dead}/b.html", web.url("h0002.test")]
    prefix = unique_prefix()
    settings = crawl_settings(web, redis_server.url, prefix, FRONTIER_IDLE_CLOSE=IDLE, **PUSHBACK)
    results = run_two(tmp_path, seeds, settings)

    truth = web.truth(seeds=[web.url("h0002.test")], depth_limit=DEPTH, robots_5xx="disallow")
    fetched = fetched_urls(web)
    assert any("//h0002.test:" in url for url in truth.regular)
    assert not set(truth.regular) - set(fetched), sorted(set(truth.regular) - set(fetched))[:10]

    store = RedisStore(redis_server.url, prefix)
    store.open()
    try:
        reason, deferred_at = store.hosts.deferrals()[dead]
        statuses = {url: store.urls.status_of(url_fingerprint(url)[0]) for url in seeds[:3]}
        counts = store.count_by_status()
    finally:
        store.close()
    assert "ConnectionRefusedError" in reason
    assert set(statuses.values()) == {Status.DEFERRED}, statuses
    assert counts.get(Status.QUEUED, 0) == counts.get(Status.INFLIGHT, 0) == 0, counts
    # every http page of the host was fetched while its https origin was held
    pages = [entry for entry in web.entries() if entry.host == "h0002.test" and entry.path != "/robots.txt"]
    assert pages and max(entry.start for entry in pages) < deferred_at, (
        sorted(entry.start - deferred_at for entry in pages))
