"""Several ``scrapy crawl web`` processes on one Redis share one polite
frontier (extensions/backends/redis/dispatch.py), end to end: real crawler
subprocesses, a real redis-server, the synthetic test web.

Politeness is read off the test web's access log, as in
``tests/test_frontier_e2e.py``, over the fetches of all processes together.
The depth limit (10) is above the test web's deepest regular page (5): the
order in which several processes crawl is not breadth-first, so a page may
be reached by a longer path than the shortest, and the regular set must not
depend on that order (the ground truth is computed with the same limit).
"""

from __future__ import annotations

import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from extensions.frontier.store import Status
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.connection import connect
from extensions.backends.redis.bloom import BloomLayout
from tests.redis_helpers import RedisBloom, back_lists_pattern, back_queue_counts, queued, queued_fingerprint
from extensions.backends.redis.keys import Keys
from tests.conftest import fetched_urls
from testweb.crawlrun import CrawlResult, kill_crawl, read_result, start_web_crawl
from testweb.model import canonical_url
from testweb.redisseen import RedisFingerprintSet
from testweb.redisserver import RedisServer, unique_prefix
from testweb.waiting import CrawlActivity, all_ended, ended, wait_for_exit, wait_until
from tests.test_frontier_e2e import _by_host, fetched_urls_of, repeats_other_than_retries
from tests.aopic_helpers import ledger_totals

DELAY = 0.15
DEPTH = 10
TTL = 2.0
WEB = {"hosts": 40, "pages": 8, "links": 5, "seed": 3}
#: the shared URL-seen Bloom filter, large enough that a false positive (a
#: page of the truth never fetched) is not a realistic outcome
BLOOM = BloomLayout(10_000_000, 1e-6)
BLOOM_SETTINGS = {"FRONTIER_SEEN_BACKEND": "bloom", "FRONTIER_REDIS_BLOOM_CAPACITY": BLOOM.capacity,
                  "FRONTIER_REDIS_BLOOM_ERROR_RATE": BLOOM.error_rate}


def crawl_settings(web: Any, url: str, prefix: str, **extra: Any) -> dict[str, Any]:
    return {
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": DEPTH, "CONCURRENT_REQUESTS": 64,
        "DOWNLOAD_DELAY": DELAY, "CONTENTSEEN_ENABLED": False,  # the truth follows copies' links
        "FRONTIER_BACKEND": "redis", "REDIS_URL": url, "FRONTIER_REDIS_PREFIX": prefix,
        "SCHEDULER_PERSIST": True, "FRONTIER_LEASE_TTL": TTL,
        "FRONTIER_REDIS_QUEUE_WINDOW": 2,  # a host's other queued URLs wait in its tail
        **extra,
    }


@contextmanager
def crawlers(workdir: Path, seeds: str, settings: dict[str, Any], count: int,
             robots_overrides: bool = True) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` crawl processes started together; any still running at the end is killed."""
    procs = [start_web_crawl(workdir / f"crawl{i}", seeds, settings, robots_overrides=robots_overrides)
             for i in range(count)]
    try:
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                kill_crawl(proc)


def wait_all(procs: list[subprocess.Popen[bytes]], workdir: Path, first: int = 0) -> list[CrawlResult]:
    """The results of ``procs``, the crawls started as ``crawl<first>``,
    ``crawl<first + 1>``, ... by :func:`crawlers`, once all have exited
    (:class:`NoProgress` if none wrote anything for a long run of polls)."""
    wait_for_exit(procs, [workdir / f"crawl{i}" for i in range(first, first + len(procs))])
    return [read_result(workdir / f"crawl{i}", proc.returncode, []) for i, proc in enumerate(procs, first)]


def run_together(web: Any, workdir: Path, url: str, prefix: str, count: int = 3, **extra: Any) -> list[CrawlResult]:
    with crawlers(workdir, str(web.seeds_file), crawl_settings(web, url, prefix, **extra), count) as procs:
        return wait_all(procs, workdir)


WAITING = "Waiting for seeds at Redis key"


def wait_for_log(paths: list[Path], needle: str, procs: list[Any]) -> None:
    """Until every log holds ``needle`` (bounded by what the crawls write;
    fails if a process exits first)."""
    wait_until(lambda: ended(procs) or all(
        path.exists() and needle in path.read_text(errors="replace") for path in paths),
        f"{needle!r} in every log", CrawlActivity({path.parent for path in paths}))
    assert not ended(procs), "a crawler exited before the seeds came"


def run_seeded_when_all_wait(web: Any, workdir: Path, url: str, prefix: str, count: int = 3) -> list[CrawlResult]:
    """``count`` processes started without seeds; the seeds are pushed to Redis
    once every one of them waits for them, so each takes part whatever its
    start-up time."""
    key = f"{prefix}:start_urls"
    settings = crawl_settings(web, url, prefix, REDIS_START_URLS_KEY=key, MAX_IDLE_TIME_BEFORE_CLOSE=2)
    client = redis.Redis.from_url(url)
    try:
        with crawlers(workdir, "", settings, count) as procs:
            wait_for_log([workdir / f"crawl{i}" / "crawl.log" for i in range(count)], WAITING, procs)
            client.lpush(key, *[line for line in web.seeds_file.read_text().split() if line])
            return wait_all(procs, workdir)
    finally:
        client.close()


def assert_ground_truth(web: Any) -> None:
    truth = web.truth(depth_limit=DEPTH, robots_5xx="allow")
    fetched = set(fetched_urls(web))
    assert not set(truth.regular) - fetched, sorted(set(truth.regular) - fetched)[:5]
    assert fetched <= set(truth.fetched), sorted(fetched - set(truth.fetched))[:5]


def assert_polite(entries: list[Any], crawl_delays: dict[str, float]) -> int:
    """No host with two fetches in flight (robots.txt included), no gap
    between two of a host's pages below its delay; how many gaps were checked."""
    checked = 0
    for host, fetches in _by_host(entries).items():
        for before, after in zip(fetches, fetches[1:]):
            assert after.start >= before.end, (host, before, after)
        pages = [e for e in fetches if e.path != "/robots.txt"]
        for before, after in zip(pages, pages[1:]):
            assert after.start - before.end >= max(DELAY, crawl_delays.get(host, 0.0)), (host, before, after)
            checked += 1
    return checked


def assert_nothing_left(url: str, prefix: str, truth_size: int, bloom: BloomLayout | None = None) -> None:
    """No URL queued or in flight; at least the truth finished (counted
    from the trimmed rows, none of which is left)."""
    store = RedisStore(url, prefix)  # the crawl's recorded URL-seen layout
    store.open()
    counts = store.urls.count_by_status()
    assert counts.get(Status.QUEUED, 0) == counts.get(Status.INFLIGHT, 0) == 0, counts
    assert counts.get(Status.DONE, 0) + counts.get(Status.FAILED, 0) >= truth_size
    assert not list(store.scan(back_lists_pattern(store.keys)))  # every back-queue list empty
    assert not list(store.scan(store.keys.tails_pattern))  # and every tail
    assert not list(store.scan(store.keys.urls_pattern))
    seen_set = RedisFingerprintSet(store, store.seen) if bloom is None else RedisBloom(store, bloom)
    assert seen_set.count() >= truth_size
    store.close()


def assert_finished_with_the_truth(web: Any, results: list[CrawlResult], url: str, prefix: str,
                                   bloom: BloomLayout | None = None) -> None:
    """Every process finished and did some of the work; exactly the ground
    truth fetched, no page twice, nothing left in the frontier."""
    for result in results:
        assert result.returncode == 0, result.log[-3000:]
        assert result.report["finish_reason"] == "finished"
        assert result.stats.get("frontier/done", 0) > 0
    assert_ground_truth(web)
    assert not repeats_other_than_retries(web)
    assert_nothing_left(url, prefix, len(web.truth(depth_limit=DEPTH).regular), bloom)


def assert_cash_conserved(url: str, prefix: str, bloom: BloomLayout | None = None) -> None:
    """AOPIC's ledger read back from Redis: cash on every page (with the
    dividends not yet settled on it) plus Lambda is the cash the seeds put
    in, within 1e-9 relative, however the processes interleaved or died."""
    from extensions.backends.redis.ledger import SharedLedger

    store = RedisStore(url, prefix)
    store.open()
    try:
        totals = ledger_totals(SharedLedger(store))
    finally:
        store.close()
    assert abs(totals.conserved - totals.put_in) <= 1e-9 * totals.put_in, (totals, totals.conserved)
    assert totals.put_in > 0 and totals.history > 0 and totals.rows >= 100, totals


def crawl_totals(url: str, prefix: str) -> dict[str, float]:
    """The crawl's stats in ``P:stats`` (summed over processes, crawl-wide
    ones as last reported), and ``known``: the URLs the store counted."""
    keys, client = Keys(prefix), connect(url, 10.0, Retry(NoBackoff(), 0))
    try:
        totals = {name.decode(): float(value) for name, value in client.hgetall(keys.stats).items()}
        totals["known"] = float(client.get(keys.known) or 0)
    finally:
        client.close()
    return totals


# -- three processes, one Redis --------------------------------------------------------
@pytest.fixture(scope="module")
def three_on_one_redis(tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer) -> Any:
    from testweb import WebConfig, start_testweb

    tmp = tmp_path_factory.mktemp("three")
    prefix = unique_prefix()
    with start_testweb(WebConfig(**WEB), tmp / "web") as web:
        results = run_seeded_when_all_wait(web, tmp, redis_server.url, prefix)
        yield web, results, redis_server.url, prefix


def test_three_processes_fetch_exactly_the_ground_truth(three_on_one_redis: Any) -> None:
    web, results, url, prefix = three_on_one_redis
    for result in results:
        assert result.returncode == 0, result.log[-3000:]
        assert result.report["finish_reason"] == "finished"
    assert_ground_truth(web)
    assert not repeats_other_than_retries(web)
    assert_nothing_left(url, prefix, len(web.truth(depth_limit=DEPTH).regular))
    # hosts' queues went through their tails (a window of 2 URLs)
    assert sum(result.stats.get("frontier/tail_refilled", 0) for result in results) > 0


def test_the_processes_share_the_work(three_on_one_redis: Any) -> None:
    """At least two of the three fetch part of the web and none all of it (the
    third may find every host leased on a loaded machine: the web's 320
    pages take seconds)."""
    _, results, _, _ = three_on_one_redis
    done = [result.stats.get("frontier/done", 0) for result in results]
    assert sum(count > 0 for count in done) >= 2 and max(done) < sum(done), done
    assert sum(result.stats.get("frontier/leases_acquired", 0) > 0 for result in results) >= 2


def test_never_two_requests_in_flight_to_one_host_nor_a_gap_below_its_delay(three_on_one_redis: Any) -> None:
    web, _, _, _ = three_on_one_redis
    assert assert_polite(web.entries(), web.crawl_delays()) > 300


def test_aopic_cash_is_conserved_across_processes(three_on_one_redis: Any) -> None:
    """The seeds pushed to Redis get their cash as -a seeds' do (they had none: put in 0)."""
    _, _, url, prefix = three_on_one_redis
    assert_cash_conserved(url, prefix)


def test_stats_add_up_across_processes(three_on_one_redis: Any) -> None:
    web, results, url, prefix = three_on_one_redis
    store = RedisStore(url, prefix)
    store.open()
    totals = {name.decode(): value for name, value in store.call(("HGETALL", store.keys.stats))[0].items()}
    store.close()
    for name in ("frontier/done", "frontier/enqueued", "response_received_count"):
        assert int(totals[name]) == sum(result.stats.get(name, 0) for result in results), name
    pages = [e for e in web.entries() if e.path != "/robots.txt"]
    assert int(totals["frontier/done"]) + int(totals.get("frontier/failed", 0)) >= len({(e.host, e.path) for e in pages})
    # the last process to close saw every process's stats
    assert max(r.stats["distributed/total/frontier/done"] for r in results) == int(totals["frontier/done"])


# -- three processes, one Redis, the shared Bloom filter ---------------------------------
@pytest.fixture(scope="module")
def three_with_the_bloom_filter(tmp_path_factory: pytest.TempPathFactory, redis_server: RedisServer) -> Any:
    from testweb import WebConfig, start_testweb

    tmp = tmp_path_factory.mktemp("bloom")
    prefix = unique_prefix()
    with start_testweb(WebConfig(**WEB), tmp / "web") as web:
        results = run_together(web, tmp, redis_server.url, prefix, **BLOOM_SETTINGS)
        yield web, results, redis_server.url, prefix


def test_three_processes_sharing_the_bloom_filter_fetch_exactly_the_ground_truth(
        three_with_the_bloom_filter: Any) -> None:
    web, results, url, prefix = three_with_the_bloom_filter
    assert_finished_with_the_truth(web, results, url, prefix, BLOOM)
    assert assert_polite(web.entries(), web.crawl_delays()) > 300


def test_memory_per_url_is_the_crawls_not_a_sum_over_processes(three_with_the_bloom_filter: Any) -> None:
    web, results, url, prefix = three_with_the_bloom_filter
    totals = crawl_totals(url, prefix)
    truth = len(web.truth(depth_limit=DEPTH).regular)
    # a process's last report (processes closing together may overtake each other), not a sum of three
    assert truth <= totals["known"]
    assert totals["known"] / 2 < totals["frontier/redis_known_urls"] <= totals["known"]
    assert totals["frontier/redis_memory_bytes"] > 0
    assert totals["frontier/redis_bytes_per_url"] == pytest.approx(
        totals["frontier/redis_memory_bytes"] / totals["frontier/redis_known_urls"], rel=0.05)
    for result in results:
        assert 0 < result.stats["frontier/redis_known_urls"] <= totals["known"]
    assert totals["frontier/enqueued"] == sum(result.stats["frontier/enqueued"] for result in results)


# -- failure -------------------------------------------------------------------------
@pytest.mark.parametrize("seen", ["exact", "bloom"])
def test_sigkill_of_one_of_three_loses_nothing_fetches_no_page_more_than_twice_and_conserves_cash(
    tmp_path: Path, start_web: Any, redis_server: RedisServer, seen: str,
) -> None:
    """In Bloom mode too: the killed process's in-flight rows are not
    trimmed, so whoever takes its hosts over puts them back. AOPIC's cash
    is conserved: the killed process's last page's step either happened
    whole (one script) or not at all."""
    sigkill_one_of_three(tmp_path, start_web, redis_server.url, bloom=seen == "bloom")


def busy_hosts_of(client: Any, keys: Keys, pid: int) -> list[str]:
    """Hosts whose lease the crawl process ``pid`` holds while one of their
    URLs is in flight and another is queued (it cannot give them back soon)."""
    busy = []
    for key in client.scan_iter(match=keys.lease_pattern):
        host = keys.host_of(key, "lease")
        owner = client.hget(keys.lease(host), "owner")
        queued = sum(back_queue_counts(client.hgetall(keys.lease(host))).values())
        inflight = client.zcard(keys.inflight(host))
        if owner is not None and owner.decode().rsplit(":", 2)[1] == str(pid) and inflight and queued:
            busy.append(host)
    return busy


def sigkill_one_of_three(tmp_path: Path, start_web: Any, url: str, bloom: bool = False,
                         conserved: bool = True) -> None:
    """``conserved``: also check AOPIC's cash (not on a cluster, where a
    kill between a page's two ledger calls loses that page's cash)."""
    web = start_web(**WEB)
    prefix = unique_prefix()
    settings = crawl_settings(web, url, prefix, **(BLOOM_SETTINGS if bloom else {}))
    keys, client = Keys(prefix), connect(url, 10.0, Retry(NoBackoff(), 0))
    with crawlers(tmp_path, str(web.seeds_file), settings, 3) as procs:
        # mid-crawl, and at a moment the victim holds a host with a URL in
        # flight and more queued, so that its lease must be taken over
        try:
            wait_until(lambda: procs[0].poll() is not None or (
                len(web.entries()) >= 100 and busy_hosts_of(client, keys, procs[0].pid)),
                "moment the victim holds a busy host", lambda: len(web.entries()))
        finally:
            client.close()
        assert procs[0].poll() is None, "the crawl ended before the victim held a busy host"
        kill_crawl(procs[0], signal.SIGKILL)
        results = wait_all(procs[1:], tmp_path, first=1)
    for result in results:
        assert result.returncode == 0, result.log[-3000:]
    assert_ground_truth(web)
    taken_over = sum(result.stats.get("frontier/leases_taken_over", 0) for result in results)
    assert taken_over > 0
    counts: Counter[str] = Counter()
    for entry in web.entries():
        if entry.path != "/robots.txt" and entry.status < 500:  # 5xx: retried on purpose
            counts[next(iter(fetched_urls_of(web, [entry])))] += 1
    assert max(counts.values()) <= 2, counts.most_common(3)
    # a page fetched twice was fetched once by the killed process: the
    # survivors' items hold it at most once (the server's clock cannot tell,
    # it may log a request the victim sent before its death after the kill)
    survivors = Counter(canonical_url(item.get("final_url") or item["url"]) for result in results
                        for item in result.items)
    for page in repeats_other_than_retries(web):
        assert survivors[page] <= 1, (page, survivors[page])
    assert_nothing_left(url, prefix, len(web.truth(depth_limit=DEPTH).regular), BLOOM if bloom else None)
    if conserved:
        assert_cash_conserved(url, prefix, BLOOM if bloom else None)


def refetches_pending(client: Any, keys: Keys, fetched: set[str]) -> int:
    """URLs queued or in flight that were fetched already (put back by a
    take-over): killing their fetcher now could fetch them a third time."""
    from extensions.backends.redis.fpmap import records
    from extensions.backends.redis.fpset import member
    from tests.redis_helpers import map_buckets
    from extensions.backends.redis.rows import expand_row, tag_of, unpack_entry
    from testweb.model import canonical_url

    pending, tags = 0, {}

    def rows_of(tag: str) -> dict[bytes, bytes]:  # the tag's fpmap (fpmap.py): member -> row
        if tag not in tags:
            # the buckets and H in one transaction: a map emptied by a crawler goes
            # whole (H too) and a new one may take another host as its H
            names = [b"%s:%d:%d" % (keys.urls(tag).encode(), *place) for place in map_buckets(client, keys.urls(tag))]
            pipe = client.pipeline(transaction=True)
            for name in names:
                pipe.get(name)
            pipe.hget(keys.urls(tag), "H")
            *buckets, host = pipe.execute()
            tags[tag] = {m: expand_row(row, host) for bucket in buckets if bucket for m, row in records(bucket)}
        return tags[tag]
    for pattern in (f"{keys.prefix}:{{*}}:bq:*", f"{keys.prefix}:{{*}}:lease:*", f"{keys.prefix}:{{*}}:inflight:*"):
        for key in client.scan_iter(match=pattern):
            if b":lease:" in key:  # a level's first members sit in the lease hash (lua/include/backq.lua)
                inline = b"".join(value for field, value in client.hgetall(key).items()
                                  if field[:1] == b"l" and field[1:].isdigit())
                found = [inline[at:at + 5] for at in range(0, len(inline), 5)]
            else:
                found = client.lrange(key, 0, -1) if b":bq:" in key else client.zrange(key, 0, -1)
            for fp in {int(item) if b":inflight:" in key else queued_fingerprint(key, item) for item in found}:
                row = rows_of(tag_of(fp)).get(member(fp))
                if row is not None and canonical_url(unpack_entry(fp, row).url) in fetched:
                    pending += 1
    return pending


def test_sigkills_at_random_moments_with_restarts_fetch_every_page_at_most_twice(
    tmp_path: Path, start_web: Any, redis_server: RedisServer,
) -> None:
    """Three processes; three times, a random one is SIGKILLed at a random
    moment (once the pages put back by the last kill were fetched again, so
    that no page is in flight at two kills) and the same command started
    again. Every page of the truth is fetched, none more than twice, and
    AOPIC's cash is conserved."""
    import random

    rng = random.Random(12)
    # the crawl's length is set by politeness, not CPU (40 pages a host, one
    # every 0.8 s: at least 32 s), so that three kills, each waiting for the
    # last one's pages to be fetched again, fit in it on a loaded machine too
    web = start_web(**{**WEB, "hosts": 24, "pages": 40})
    prefix = unique_prefix()
    settings = crawl_settings(web, redis_server.url, prefix, DOWNLOAD_DELAY=0.8)
    keys, client = Keys(prefix), connect(redis_server.url, 10.0, Retry(NoBackoff(), 0))
    with crawlers(tmp_path, str(web.seeds_file), settings, 3) as procs:
        running, kills, started = list(range(3)), 0, 3
        try:
            for _ in range(3):
                target = len(web.entries()) + rng.randint(40, 160)
                # while refetches are pending the survivors fetch them: the access log grows
                wait_until(lambda: all_ended(procs[i] for i in running) or (  # noqa: B023 - called at once
                    len(web.entries()) >= target and not refetches_pending(client, keys, set(fetched_urls(web)))),
                    "moment to kill", lambda: len(web.entries()))
                alive = [i for i in running if procs[i].poll() is None]
                if len(alive) < 3:
                    break  # the crawl is ending
                victim = rng.choice(alive)
                kill_crawl(procs[victim], signal.SIGKILL)
                kills += 1
                running.remove(victim)
                procs.append(start_web_crawl(tmp_path / f"crawl{started}", str(web.seeds_file), settings))
                running.append(started)
                started += 1
        finally:
            client.close()
        wait_for_exit([procs[i] for i in running], [tmp_path / f"crawl{i}" for i in running])
        results = {i: read_result(tmp_path / f"crawl{i}", procs[i].returncode, []) for i in running}
    assert kills >= 2, kills
    for i, result in results.items():
        assert result.returncode == 0, (i, result.log[-3000:])
    assert_ground_truth(web)
    counts: Counter[str] = Counter()
    for entry in web.entries():
        if entry.path != "/robots.txt" and entry.status < 500:  # 5xx: retried on purpose
            counts[next(iter(fetched_urls_of(web, [entry])))] += 1
    assert max(counts.values()) <= 2, counts.most_common(3)
    assert_nothing_left(redis_server.url, prefix, len(web.truth(depth_limit=DEPTH).regular))
    assert_cash_conserved(redis_server.url, prefix)


# -- settings ------------------------------------------------------------------------
def test_the_redis_backend_makes_the_shared_frontier_the_scheduler(redis_server: RedisServer) -> None:
    from scrapy import Spider
    from scrapy.utils.test import get_crawler

    from extensions.frontier.scheduler import Frontier

    def scheduler(settings: dict[str, Any]) -> Any:
        return Frontier.from_crawler(get_crawler(Spider, {"REDIS_URL": redis_server.url, **settings}))

    from extensions.frontier.localdispatch import LocalDispatch
    from extensions.backends.redis.dispatch import SharedDispatch

    assert type(scheduler({"FRONTIER_BACKEND": "redis"}).dispatch) is SharedDispatch
    assert type(scheduler({}).dispatch) is LocalDispatch
    shared = scheduler({"FRONTIER_BACKEND": "redis", "FRONTIER_LEASE_TTL": 4, "FRONTIER_LEASE_POLL_INTERVAL": 0.5})
    assert (shared.dispatch.lease_ttl, shared.dispatch.poll_interval) == (4.0, 0.5)


@pytest.mark.parametrize(("settings", "named"), [
    ({"CONCURRENT_REQUESTS_PER_IP": 1}, "CONCURRENT_REQUESTS_PER_IP"),
    ({"FRONTIER_LEASE_TTL": 0}, "FRONTIER_LEASE_TTL"),
    ({"FRONTIER_LEASE_POLL_INTERVAL": -1}, "FRONTIER_LEASE_POLL_INTERVAL"),
])
def test_invalid_shared_frontier_settings_fail_at_start_naming_the_setting(
        settings: dict[str, Any], named: str) -> None:
    from scrapy import Spider
    from scrapy.utils.misc import load_object
    from scrapy.utils.test import get_crawler

    crawler = get_crawler(Spider, {"FRONTIER_BACKEND": "redis",
                                   "SCHEDULER": "extensions.frontier.scheduler.Frontier", **settings})
    with pytest.raises(ValueError, match=named):
        load_object(crawler.settings["SCHEDULER"]).from_crawler(crawler)


def test_a_take_run_twice_by_a_retried_call_is_repaired(redis_server: RedisServer) -> None:
    """A time-out after Redis ran a TAKE makes the retry take a second URL:
    the first stays in the host's in-flight set for nobody, under our own
    lease, and the crawl would never end. After a failed call the next lease
    renewal puts such URLs back. (The lost answer is the fault a real server
    cannot be made to produce on demand; the double TAKE itself is real.)"""
    from scrapy import Request

    from tests.redis_helpers import DistributedFrontier

    frontier = DistributedFrontier(RedisStore(redis_server.url, unique_prefix()))
    frontier.open(None)
    for path in ("a", "b", "c"):
        assert frontier.enqueue_request(Request(f"http://h1.test/{path}"))
    first = frontier.next_request()
    assert first is not None
    lost = frontier.dispatch.leases.take("h1.test")  # the retried call's first run: its answer never came
    assert lost.state == "taken"
    frontier.dispatch.renew()  # no failure seen: nothing to repair
    assert frontier.stats.get_value("frontier/inflight_repaired") is None
    frontier.store.connection.retry.failures += 1  # what LoggingRetry counts when a call is retried
    frontier.dispatch.renew()
    assert frontier.stats.get_value("frontier/inflight_repaired") == 1
    inflight = frontier.dispatch.leases.inflight_of(["h1.test"])["h1.test"]
    assert inflight == [frontier.inflight[first].entry.fingerprint]
    from extensions.frontier.fingerprint import url_fingerprint
    found = set(queued(frontier.dispatch.leases, "h1.test"))
    others = {url_fingerprint(f"http://h1.test/{path}")[0] for path in "abc"} - {url_fingerprint(first.url)[0]}
    assert found == others and url_fingerprint(lost.entry.url)[0] in found
    frontier.close("finished")


def test_a_renewal_meeting_this_process_s_own_release_is_not_a_lost_lease(redis_server: RedisServer) -> None:
    """With the worker thread an idle release runs in Redis before its answer
    comes back: a renewal in between finds the lease no longer ours. That is
    this process's own release, not a take-over: no "stalled longer than
    FRONTIER_LEASE_TTL" warning, no frontier/leases_lost; the release's
    answer gives the host back. (The late answer is the worker thread's
    timing, played here by answers held back; Redis runs every command.)"""
    from scrapy import Request

    from extensions.backends.redis.worker import DirectIO
    from tests.redis_helpers import DistributedFrontier

    class LateAnswers(DirectIO):
        def __init__(self, store: Any) -> None:
            super().__init__(store)
            self.held_back: list[Any] = []

        def submit(self, commands: Any, then: Any, failed: Any = None, follow: Any = None) -> None:
            super().submit(commands, lambda answers: self.held_back.append((then, answers)) if then else None,
                           failed, follow)

    frontier = DistributedFrontier(RedisStore(redis_server.url, unique_prefix()))
    frontier.open(None)
    assert frontier.enqueue_request(Request("http://h1.test/a"))
    request = frontier.next_request()
    assert request is not None
    late = LateAnswers(frontier.store)
    frontier.dispatch.leases.io = late
    frontier.fetch_finished(request, duration=0.0, ok=True)  # nothing left: an idle release, run, unanswered
    assert late.held_back and "h1.test" in frontier.dispatch.held
    frontier.dispatch.renew()
    assert frontier.stats.get_value("frontier/leases_lost") is None
    for then, answers in late.held_back:
        then(answers)
    assert "h1.test" not in frontier.dispatch.held
    assert frontier.stats.get_value("frontier/leases_released") == 1
    frontier.close("finished")


def test_hosts_of_one_level_go_in_the_order_they_became_ready(redis_server: RedisServer) -> None:
    """Not by their head URL's discovery order: then a host found later
    waited while earlier hosts had URLs of the same level (seconds, in the
    benchmark). Both hosts' URLs are at one level; h1's were found first,
    but h2's fetch ends first, so h2 goes first."""
    from scrapy import Request

    from tests.redis_helpers import DistributedFrontier

    frontier = DistributedFrontier(RedisStore(redis_server.url, unique_prefix()))
    frontier.open(None)
    try:
        for host in ("h1.test", "h2.test"):
            for path in ("a", "b"):
                assert frontier.enqueue_request(Request(f"http://{host}/{path}"))
        first, second = frontier.next_request(), frontier.next_request()
        assert {first.url, second.url} == {"http://h1.test/a", "http://h2.test/a"}
        by_host = {request.url.split("/")[2]: request for request in (first, second)}
        frontier.fetch_finished(by_host["h2.test"], duration=0.01)
        frontier.fetch_finished(by_host["h1.test"], duration=0.01)
        assert frontier.next_request().url == "http://h2.test/b"
    finally:
        frontier.close("finished")
