"""Prometheus metrics (extensions.metrics, extensions.prometheus): the
collector's families from a stats dict, the frontier's status counts, and
``/metrics`` scraped from real ``scrapy crawl web`` subprocesses, alone and
two on one Redis."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from extensions.frontier.gauges import DictStats, status_gauges
from extensions.prometheus import CrawlStatsCollector, MetricsServer
from extensions.frontier.store import Entry, Status
from extensions.backends.memory.backend import MemoryStore
from testweb.crawlrun import kill_crawl, run_web_crawl, start_web_crawl
from testweb.redisserver import free_port, unique_prefix
from testweb.waiting import CrawlActivity, ended, wait_until

#: a web the crawl takes several seconds over (DELAY per page and host)
WEB = {"hosts": 4, "pages": 20, "links": 4, "seed": 5}
DELAY = 0.4

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    """Every sample of a scrape by (name, sorted labels); raises on bad format."""
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    """One sample's value (0 when absent); ``process`` matches any."""
    for (found, found_labels), number in samples.items():
        if found == name and {k: v for k, v in found_labels if k != "process"} == labels:
            return number
    return 0.0


def scrape(port: int) -> Samples | None:
    """The metrics of the crawl serving ``port``, None while it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
            return parse(response.read().decode())
    except (urllib.error.URLError, ConnectionError):
        return None


# -- the collector, from a stats dict --------------------------------------------------

STATS = {
    "response_received_count": 7, "downloader/response_bytes": 1234,
    "downloader/response_status_count/200": 5, "downloader/response_status_count/203": 1,
    "downloader/response_status_count/404": 2,
    "downloader/exception_type_count/twisted.internet.error.ConnectionRefusedError": 3,
    "frontier/done": 5, "frontier/failed": 1, "frontier/enqueued": 20, "frontier/back_queues": 2,
    "frontier/held_origins": 1, "frontier/deferred_origins": 1,
    "frontier/urls/queued": 14, "frontier/urls/done": 5, "frontier/hosts": 3,
    "robotstxt/forbidden": 2, "robotstxt/cache_size": 4, "dns/lookups": 9,
    "contentseen/duplicates": 1, "aopic/lambda_cash": 0.25, "revisit/changed": 2,
    "frontier/deferred_reasons": {"http://a.test": "robots.txt"},  # not a number: left out
    "start_time": datetime(2026, 1, 1, tzinfo=timezone.utc),
}


def collected(stats: dict[str, Any]) -> Samples:
    registry = CollectorRegistry()
    registry.register(CrawlStatsCollector(lambda: stats, "host:1"))
    return parse(generate_latest(registry).decode())


def test_collector_turns_stats_into_named_families() -> None:
    samples = collected(STATS)
    assert value(samples, "webcrawler_pages_total") == 7
    assert value(samples, "webcrawler_response_bytes_total") == 1234
    assert value(samples, "webcrawler_responses_total", status_class="2xx") == 6  # 200 and 203 added
    assert value(samples, "webcrawler_responses_total", status_class="4xx") == 2
    assert value(samples, "webcrawler_request_errors_total",
                 kind="twisted.internet.error.ConnectionRefusedError") == 3
    assert value(samples, "webcrawler_frontier_outcomes_total", status="done") == 5
    assert value(samples, "webcrawler_frontier_hosts", state="active") == 2
    assert value(samples, "webcrawler_frontier_hosts", state="held") == 1
    assert value(samples, "webcrawler_frontier_hosts", state="deferred") == 1
    assert value(samples, "webcrawler_robotstxt_events_total", event="forbidden") == 2
    assert value(samples, "webcrawler_robotstxt_cache_size") == 4
    assert ("webcrawler_robotstxt_events_total", (("event", "cache_size"),)) not in samples
    assert value(samples, "webcrawler_dns_events_total", event="lookups") == 9
    assert value(samples, "webcrawler_contentseen_pages_total", verdict="duplicate") == 1
    assert value(samples, "webcrawler_aopic_lambda_cash") == 0.25
    assert value(samples, "webcrawler_revisit_events_total", event="changed") == 2
    assert value(samples, "webcrawler_start_time_seconds") == STATS["start_time"].timestamp()


def test_refusals_and_pushbacks_are_outcomes_not_request_errors() -> None:
    """Was: robots.txt refusals and holds (IgnoreRequest) counted in request_errors."""
    samples = collected({**STATS, "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest": 644,
                         "pushback/status/429": 3, "pushback/status/503": 1, "pushback/pause_seconds": 42.5,
                         "pushback/hosts_slowed": 1, "pushback/host_delay_max": 4.0})
    kinds = {dict(labels)["kind"] for name, labels in samples if name == "webcrawler_request_errors_total"}
    assert kinds == {"twisted.internet.error.ConnectionRefusedError"}
    assert value(samples, "webcrawler_requests_refused_total") == 644
    assert value(samples, "webcrawler_pushback_responses_total", status="429") == 3
    assert value(samples, "webcrawler_pushback_responses_total", status="503") == 1
    assert value(samples, "webcrawler_pushback_pause_seconds_total") == 42.5
    assert value(samples, "webcrawler_pushback_hosts_slowed_total") == 1
    assert value(samples, "webcrawler_pushback_host_delay_max_seconds") == 4.0


def test_crawl_wide_gauges_carry_scope_and_process_per_process_figures_do_not() -> None:
    samples = collected(STATS)
    labels = {name: dict(found) for name, found in samples}
    assert samples[("webcrawler_frontier_urls", (("process", "host:1"), ("scope", "crawl"),
                                                 ("status", "queued")))] == 14
    assert labels["webcrawler_frontier_hosts_known"] == {"process": "host:1", "scope": "crawl"}
    assert labels["webcrawler_pages_total"] == {}
    assert "scope" not in labels["webcrawler_frontier_outcomes_total"]


# -- the frontier's URLs by status --------------------------------------------------

def test_status_gauges_count_the_store_and_wait_in_proportion_to_the_cost() -> None:
    store = MemoryStore()
    store.open()
    store.urls.insert_new([Entry(fp, f"http://a.test/{fp}", "a.test") for fp in range(5)], 0.0)
    store.urls.set_status([3, 4], Status.DONE)
    stats, now = DictStats(), [1000.0]
    status_gauges(stats, store, clock=lambda: now[0])
    assert stats.values["frontier/urls/queued"] == 3 and stats.values["frontier/urls/done"] == 2
    assert stats.values["frontier/urls/refused"] == 0
    stats.values["frontier/urls_count_seconds"] = 0.5  # as if counting took half a second
    store.urls.set_status([0], Status.DONE)
    now[0] += 10  # 10 s < 100 x 0.5 s: not counted again yet
    status_gauges(stats, store, clock=lambda: now[0])
    assert stats.values["frontier/urls/done"] == 2
    now[0] += 50
    status_gauges(stats, store, clock=lambda: now[0])
    assert stats.values["frontier/urls/done"] == 3


# -- the server ------------------------------------------------------------------------------

def test_server_serves_its_own_registry_and_frees_the_port_when_stopped() -> None:
    registry = CollectorRegistry()
    registry.register(CrawlStatsCollector(lambda: {"response_received_count": 3}, "host:1"))
    port = free_port()
    server = MetricsServer(registry, "127.0.0.1", port)
    server.start()
    try:
        samples = scrape(port)
        assert samples is not None and value(samples, "webcrawler_pages_total") == 3
        assert not any(name.startswith("python_") for name, _ in samples)  # not the global registry
    finally:
        server.stop()
    assert scrape(port) is None  # nothing listens any more
    again = MetricsServer(registry, "127.0.0.1", port)  # the port is free to take again
    again.start()
    again.stop()


def test_a_taken_port_fails_the_crawl_at_start_naming_the_setting_and_address(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_web_crawl(tmp_path, "http://127.0.0.1:9/", {"METRICS_PORT": port}, timeout=120)
    assert result.returncode != 0
    assert f"METRICS_PORT={port}: cannot serve metrics on 127.0.0.1:{port}: the port is in use" in result.log
    assert not result.items


# -- real crawls -----------------------------------------------------------------------------

@contextmanager
def crawls(tmp_path: Path, seeds: str, settings: dict[str, Any],
           count: int) -> Iterator[tuple[list[Any], list[int], CrawlActivity]]:
    """``count`` crawls, each serving metrics on a port of its own; killed at the end."""
    ports = [free_port() for _ in range(count)]
    procs = [start_web_crawl(tmp_path / f"crawl{i}", seeds, {**settings, "METRICS_PORT": port})
             for i, port in enumerate(ports)]
    try:
        yield procs, ports, CrawlActivity([tmp_path / f"crawl{i}" for i in range(count)])
    finally:
        for proc in procs:
            if proc.poll() is None:
                kill_crawl(proc)


def scrapes_until(ports: list[int], procs: list[Any], activity: CrawlActivity, what: str,
                  condition: Callable[[list[Samples]], bool]) -> list[Samples]:
    """Scrape every port until ``condition`` holds of all the scrapes; a
    crawl ending first fails (it should still be running)."""
    found: list[list[Samples]] = []

    def ready() -> bool:
        assert not ended(procs), f"a crawl ended before {what}"
        samples = [scrape(port) for port in ports]
        if any(sample is None for sample in samples) or not condition(samples):  # type: ignore[arg-type]
            return False
        found.append(samples)  # type: ignore[arg-type]
        return True

    wait_until(ready, what, activity)
    return found[-1]


def test_metrics_grow_during_a_crawl(start_web: Callable[..., Any], tmp_path: Path) -> None:
    web = start_web(**WEB)
    settings = {"DNS_HOSTS": web.hosts_file, "DOWNLOAD_DELAY": DELAY, "FRONTIER_CHECKPOINT_INTERVAL": 0.5}
    with crawls(tmp_path, str(web.seeds_file), settings, 1) as (procs, ports, activity):
        [first] = scrapes_until(ports, procs, activity, "a first page counted",
                                lambda s: value(s[0], "webcrawler_pages_total") > 0)
        pages, fetched = value(first, "webcrawler_pages_total"), value(first, "webcrawler_response_bytes_total")
        [second] = scrapes_until(ports, procs, activity, "more pages and bytes counted", lambda s: (
            value(s[0], "webcrawler_pages_total") > pages
            and value(s[0], "webcrawler_response_bytes_total") > fetched
            and value(s[0], "webcrawler_frontier_urls", scope="crawl", status="done") > 0))
    assert value(second, "webcrawler_responses_total", status_class="2xx") > 0
    assert value(second, "webcrawler_frontier_enqueued_total") > 0
    assert value(second, "webcrawler_robotstxt_events_total", event="request_count") > 0


def test_two_processes_on_redis_each_serve_their_own_and_agree_on_the_crawl(
        start_web: Callable[..., Any], redis_server: Any, tmp_path: Path) -> None:
    web = start_web(**{**WEB, "hosts": 6})
    settings = {"DNS_HOSTS": web.hosts_file, "DOWNLOAD_DELAY": DELAY, "FRONTIER_CHECKPOINT_INTERVAL": 0.5,
                "FRONTIER_BACKEND": "redis", "REDIS_URL": redis_server.url,
                "FRONTIER_REDIS_PREFIX": unique_prefix(), "SCHEDULER_PERSIST": True}
    with crawls(tmp_path, str(web.seeds_file), settings, 2) as (procs, ports, activity):
        first = scrapes_until(ports, procs, activity, "a page counted by each process",
                              lambda s: all(value(one, "webcrawler_pages_total") > 0 for one in s))
        # the crawl-wide count of done URLs, read from the shared store, is
        # above what either process did itself: it holds the other's pages too
        second = scrapes_until(ports, procs, activity, "both growing, crawl-wide counts over both", lambda s: all(
            value(now, "webcrawler_pages_total") > value(before, "webcrawler_pages_total")
            and value(now, "webcrawler_frontier_urls", scope="crawl", status="done")
            > value(now, "webcrawler_frontier_outcomes_total", status="done")
            for before, now in zip(first, s)))
    processes = {dict(labels)["process"] for one in second for name, labels in one
                 if name == "webcrawler_frontier_urls"}
    assert len(processes) == 2  # one per process: a dashboard takes max(), not sum()
