"""Real crawls with the frontier as Scrapy's scheduler.

A tiny loopback site (:class:`testweb.localserver.LocalServer`, one host,
pages ``/p/N`` linking to ``/p/2N+1`` and ``/p/2N+2``) is crawled by
``scrapy runspider`` of the follow spider (:mod:`tests._sup_spiders`) in a
subprocess with ``SCHEDULER`` set to the frontier and no project settings.
The big end-to-end politeness and resume tests run against the synthetic
test web (testweb) later.
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest

from testweb.crawlrun import CrawlResult, kill_crawl, read_result, run_spider, start_spider
from testweb.localserver import NOT_FOUND, LocalServer, Reply, Request, Responder
from testweb.waiting import CrawlActivity, ended, wait_until
from tests._sup_spiders import FOLLOW_SPIDER, follow_args

SETTINGS = {
    "SCHEDULER": "extensions.frontier.scheduler.Frontier",
    "ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    "DOWNLOAD_DELAY_JITTER": 0, "FRONTIER_CHECKPOINT_INTERVAL": 0.5,
}


def tree(pages: int) -> Responder:
    """``/p/N`` links to ``/p/2N+1`` and ``/p/2N+2`` (those below ``pages``)."""
    def respond(request: Request) -> Reply:
        if not request.path.startswith("/p/"):
            return NOT_FOUND
        n = int(request.path[3:])
        links = "".join(f'<a href="/p/{k}">{k}</a>' for k in (2 * n + 1, 2 * n + 2) if k < pages)
        return Reply(200, f"<html><body>{links}</body></html>".encode(), {"Content-Type": "text/html"})
    return respond


@pytest.fixture
def site() -> Iterator[Callable[[int], LocalServer]]:
    """Start tree sites of ``pages`` pages, each stopped at the test's end."""
    with ExitStack() as stack:
        yield lambda pages: stack.enter_context(LocalServer(tree(pages)))


def _crawl(workdir: Path, server: LocalServer, extra: dict[str, Any], timeout: float = 120) -> CrawlResult:
    run = run_spider(workdir, FOLLOW_SPIDER, follow_args(server.url("/p/0")), {**SETTINGS, **extra},
                     timeout=timeout)
    assert run.returncode == 0, run.log[-3000:]
    return run


def _start(workdir: Path, server: LocalServer, extra: dict[str, Any]) -> Any:
    return start_spider(workdir, FOLLOW_SPIDER, follow_args(server.url("/p/0")), {**SETTINGS, **extra})


def _fetch_times(server: LocalServer) -> list[float]:
    return [hit.time for hit in list(server.hits) if hit.path.startswith("/p/")]


def _wait_for_fetches(server: LocalServer, count: int, proc: Any, workdir: Path) -> None:
    """Until the server saw ``count`` page fetches (bounded by the crawl's
    progress); fails if the crawl ended first."""
    wait_until(lambda: len(_fetch_times(server)) >= count or ended([proc]), f"{count} fetches",
               CrawlActivity([workdir], also=lambda: len(server.hits)))
    assert proc.poll() is None, f"the crawl ended before {count} fetches"


def test_small_crawl_fetches_every_page_once_politely(tmp_path, site):
    server = site(40)
    run = _crawl(tmp_path, server, {"DOWNLOAD_DELAY": 0.1})
    assert run.dumped_stat("frontier/enqueued") == 40
    assert run.dumped_stat("frontier/dequeued") == 40
    assert run.dumped_stat("frontier/done") == 40
    assert run.dumped_stat("finish_reason") == "finished"
    times = _fetch_times(server)
    assert len(times) == 40
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert min(gaps) >= 0.1 - 0.01


def test_single_host_200_pages_with_0_2_s_delay_has_no_idle_gaps(tmp_path, site):
    server = site(200)
    run = _crawl(tmp_path, server, {"DOWNLOAD_DELAY": 0.2}, timeout=120)
    assert run.dumped_stat("frontier/done") == 200
    times = _fetch_times(server)
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert min(gaps) >= 0.2 - 0.01
    # woken by the frontier's timer, not the engine's 5 s heartbeat: after
    # each fetch the one host waits out its gap with nothing else to do, so
    # (nearly) every fetch after the first follows a timer that fired
    assert run.dumped_stat("frontier/wakeups_fired") >= 150


def test_ctrl_c_pauses_and_the_same_command_resumes(tmp_path, site):
    server = site(60)
    extra = {"DOWNLOAD_DELAY": 0.1, "JOBDIR": str(tmp_path / "job")}
    proc = _start(tmp_path / "first", server, extra)
    _wait_for_fetches(server, 15, proc, tmp_path / "first")
    first = read_result(tmp_path / "first", kill_crawl(proc, signal.SIGINT), [])
    assert first.dumped_stat("finish_reason") == "shutdown", first.log[-2000:]
    assert first.dumped_stat("frontier/done") < 60
    second = _crawl(tmp_path / "second", server, extra)
    assert second.dumped_stat("finish_reason") == "finished"
    fetched = [hit.path for hit in server.hits]
    assert sorted(set(fetched)) == sorted(f"/p/{n}" for n in range(60))
    assert len(fetched) == 60  # nothing fetched twice across the pause


def test_kill_9_then_the_same_command_resumes_losing_nothing(tmp_path, site):
    server = site(60)
    extra = {"DOWNLOAD_DELAY": 0.1, "JOBDIR": str(tmp_path / "job"), "FRONTIER_CHECKPOINT_INTERVAL": 0.3}
    proc = _start(tmp_path / "killed", server, extra)
    _wait_for_fetches(server, 20, proc, tmp_path / "killed")
    kill_crawl(proc)
    before = len(server.hits)
    second = _crawl(tmp_path / "second", server, extra)
    assert second.dumped_stat("finish_reason") == "finished"
    assert "rebuilt its queues" in second.log
    fetched = [hit.path for hit in server.hits]
    assert sorted(set(fetched)) == sorted(f"/p/{n}" for n in range(60))  # nothing lost
    # fetched twice: only what was fetched after the last checkpoint (0.3 s,
    # at most ~4 pages at 0.1 s each) or in flight at the kill
    assert len(fetched) - 60 <= 6, (before, len(fetched))
