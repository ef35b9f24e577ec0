"""Redis failing under running crawler processes, end to end: real
``scrapy crawl web`` subprocesses sharing a real redis-server that is
killed with SIGKILL mid-crawl and restarted from its AOF, or frozen with
SIGSTOP for longer than a command's time-out.

The store's retry (back-off, each retry logged; extensions/backends/redis/store.py)
must carry every process through: the crawl ends by itself with exactly the
ground truth. The restart test runs Redis with ``appendfsync always`` so
that no acknowledged write can be lost and the truth must be exact;
``everysec`` (the documented default) may lose the last second, tested on
the store in tests/test_redis_store.py.
"""

from __future__ import annotations

import signal
from collections import Counter
from pathlib import Path
from typing import Any

from testweb.redisserver import RedisServer, unique_prefix
from testweb.waiting import CrawlActivity, ended, wait_until
from tests.test_distributed import assert_ground_truth, crawl_settings, crawlers, wait_all
from tests.test_frontier_e2e import fetched_urls_of

WEB = {"hosts": 30, "pages": 8, "links": 5, "seed": 7}
OUTAGE = {"FRONTIER_REDIS_TIMEOUT": 1.0, "FRONTIER_REDIS_RETRIES": 10, "FRONTIER_LEASE_TTL": 4.0}


class AlwaysFsyncRedis(RedisServer):
    """A redis-server whose AOF is fsynced before every reply."""

    def command(self) -> list[str]:
        return [part if part != "everysec" else "always" for part in super().command()]


def wait_for(condition: Any, what: str, procs: list[Any], workdir: Path) -> None:
    """Poll ``condition`` while the crawls in ``workdir`` write (bounded by
    their progress); fail if a crawler exits first."""
    activity = CrawlActivity([workdir / f"crawl{i}" for i in range(len(procs))])
    wait_until(lambda: condition() or ended(procs), what, activity)
    assert not ended(procs), f"a crawler exited before {what}"


def retried(workdir: Path, count: int) -> bool:
    logs = [workdir / f"crawl{i}" / "crawl.log" for i in range(count)]
    return any(path.exists() and "failed (" in path.read_text(errors="replace") for path in logs)


def crawl_through(tmp_path: Path, web: Any, server: RedisServer, outage: Any) -> list[Any]:
    settings = crawl_settings(web, server.url, unique_prefix(), **OUTAGE)
    with crawlers(tmp_path, str(web.seeds_file), settings, 2) as procs:
        wait_for(lambda: len(web.entries()) >= 60, "60 fetches", procs, tmp_path)
        outage(procs)
        return wait_all(procs, tmp_path)


def assert_finished_with_the_truth(web: Any, results: list[Any]) -> None:
    for result in results:
        assert result.returncode == 0, result.log[-3000:]
        assert result.report["finish_reason"] == "finished"
    assert any("retry 1 of" in result.log for result in results)
    assert_ground_truth(web)
    counts: Counter[str] = Counter()
    for entry in web.entries():
        if entry.path != "/robots.txt" and entry.status < 500:  # 5xx: retried on purpose
            counts[next(iter(fetched_urls_of(web, [entry])))] += 1
    assert max(counts.values()) <= 2, counts.most_common(3)


def test_a_redis_crash_and_restart_mid_crawl_is_ridden_out(tmp_path: Path, start_web: Any) -> None:
    web = start_web(**WEB)
    with AlwaysFsyncRedis(tmp_path / "redis", appendonly=True) as server:
        def crash_and_restart(procs: list[Any]) -> None:
            server.kill()
            wait_for(lambda: retried(tmp_path, 2), "retry in a crawl log", procs, tmp_path)
            server.start()

        results = crawl_through(tmp_path, web, server, crash_and_restart)
    assert_finished_with_the_truth(web, results)


def test_a_frozen_redis_times_out_and_is_retried_until_it_answers(tmp_path: Path, start_web: Any) -> None:
    web = start_web(**WEB)
    with RedisServer(tmp_path / "redis") as server:
        def freeze(procs: list[Any]) -> None:
            server.process.send_signal(signal.SIGSTOP)
            try:
                wait_for(lambda: retried(tmp_path, 2), "retry in a crawl log", procs, tmp_path)
            finally:
                server.process.send_signal(signal.SIGCONT)

        results = crawl_through(tmp_path, web, server, freeze)
    assert_finished_with_the_truth(web, results)
