"""The Prometheus side of :mod:`extensions.metrics`: metric families from the
crawler's stats and their HTTP server; imported only when ``METRICS_PORT`` is set.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from extensions.frontier.gauges import CRAWL_WIDE_STATS
from extensions.progress import IGNORED

PREFIX = "webcrawler_"
IGNORED_TYPE = IGNORED.rsplit("/", 1)[1]  # a refusal: an outcome, not an error


@dataclass(frozen=True)
class Single:
    """One stat as one metric (a counter's name without ``_total``)."""

    name: str
    kind: str  # "counter" or "gauge"
    key: str
    help: str


@dataclass(frozen=True)
class Labelled:
    """Every stat under ``prefix`` (but ``gauges``) as one metric labelled by the rest of its key."""

    name: str
    kind: str
    prefix: str
    label: str
    help: str
    rename: Callable[[str], str | None] = str
    gauges: frozenset[str] = frozenset()


def status_class(code: str) -> str | None:
    """``"404"`` -> ``"4xx"``; None for what is not a status code."""
    return f"{code[0]}xx" if code.isdigit() and len(code) == 3 else None


#: Per-process figures, one stat each.
SINGLE = (
    Single("pages", "counter", "response_received_count", "Responses handed to the spider (no robots.txt)"),
    Single("response_bytes", "counter", "downloader/response_bytes", "Bytes of every response downloaded"),
    Single("requests", "counter", "downloader/request_count", "Requests sent by the downloader"),
    Single("items", "counter", "item_scraped_count", "Items scraped"),
    Single("frontier_enqueued", "counter", "frontier/enqueued", "URLs the frontier accepted"),
    Single("frontier_dequeued", "counter", "frontier/dequeued", "Requests the frontier handed out"),
    Single("frontier_duplicates", "counter", "frontier/duplicates", "URLs already known to the frontier"),
    Single("frontier_queued", "gauge", "frontier/queued", "URLs in this process's frontier queues"),
    Single("frontier_inflight", "gauge", "frontier/inflight", "Requests of this process being fetched"),
    Single("aopic_lambda_cash", "gauge", "aopic/lambda_cash", "AOPIC cash held by the virtual page Lambda"),
    Single("aopic_pages_with_cash", "gauge", "aopic/pages_with_cash", "Pages holding AOPIC cash"),
    Single("robotstxt_cache_size", "gauge", "robotstxt/cache_size", "robots.txt files cached"),
    Single("hostyield_stopped_hosts", "counter", "hostyield/stopped_hosts",
           "Hosts stopped for low yield (their origins deferred)"),
    Single("revisit_scheduled", "gauge", "revisit/scheduled", "URLs on the re-visit schedule"),
    Single("revisit_due_now", "gauge", "revisit/due_now", "URLs due for a re-visit now"),
    Single("revisit_freshness", "gauge", "revisit/freshness", "Estimated share of fresh copies"),
    Single("revisit_age_seconds", "gauge", "revisit/age_seconds", "Estimated mean age of the copies"),
    # crawl-wide (CRAWL_WIDE_STATS): labelled scope="crawl", process
    Single("frontier_hosts_known", "gauge", "frontier/hosts", "Hosts known to the frontier's store"),
    Single("frontier_urls_counted_timestamp_seconds", "gauge", "frontier/urls_counted_at",
           "When webcrawler_frontier_urls was counted (Unix time)"),
    Single("redis_memory_bytes", "gauge", "frontier/redis_memory_bytes", "Memory used by the crawl's Redis"),
    Single("redis_known_urls", "gauge", "frontier/redis_known_urls", "URLs known to the crawl's Redis"),
    # the crawl's decisions, not errors
    Single("requests_refused", "counter", IGNORED,
           "Requests a middleware refused before a fetch (robots.txt, holds, address policy): outcomes, not errors"),
    Single("pushback_pause_seconds", "counter", "pushback/pause_seconds",
           "Seconds of origin pauses ordered by 429/503 answers (their sum)"),
    Single("pushback_hosts_slowed", "counter", "pushback/hosts_slowed",
           "Hosts whose politeness delay was widened after repeated pushback"),
    Single("pushback_host_delay_max_seconds", "gauge", "pushback/host_delay_max",
           "The widest politeness delay pushback gave a host"),
    Single("pushback_handed_on", "counter", "pushback/handed_on",
           "Answers of URLs past PUSHBACK_MAX_PER_URL, handed to the spider (not retried)"),
    Single("pushback_origins_deferred", "counter", "pushback/deferred",
           "Origins deferred for the run after PUSHBACK_RETRY_TIMES pushbacks in a row"),
)

HOST_STATES = {"back_queues": "active", "held_origins": "held", "deferred_origins": "deferred"}
VERDICTS = {"checked": "checked", "duplicates": "duplicate", "near_duplicates": "near_duplicate",
            "near_too_short": "too_short", "empty_text": "empty_text"}
OUTCOMES = {"done": "done", "failed": "failed", "excluded": "excluded", "refused": "refused",
            "deferred": "deferred"}

#: Families of stats, one label each.
LABELLED = (
    Labelled("responses", "counter", "downloader/response_status_count/", "status_class",
             "Responses downloaded, by status class", rename=status_class),
    Labelled("request_errors", "counter", "downloader/exception_type_count/", "kind",
             "Requests that failed with an exception, by exception type (refusals: requests_refused)",
             rename=lambda kind: None if kind == IGNORED_TYPE else kind),
    Labelled("pushback_responses", "counter", "pushback/status/", "status",
             "Answers obeyed as pushback (their origin paused, the URL fetched again), by status"),
    Labelled("frontier_outcomes", "counter", "frontier/", "status",
             "URLs this process brought to a final status", rename=OUTCOMES.get),
    Labelled("frontier_hosts", "gauge", "frontier/", "state",
             "Hosts this process crawls (active), origins held or deferred", rename=HOST_STATES.get),
    Labelled("frontier_urls", "gauge", "frontier/urls/", "status", "URLs in the frontier's store by status"),
    Labelled("robotstxt_events", "counter", "robotstxt/", "event", "robots.txt outcomes",
             gauges=frozenset({"cache_size", "sitemaps"})),
    Labelled("dns_events", "counter", "dns/", "event", "DNS outcomes"),
    Labelled("contentseen_pages", "counter", "contentseen/", "verdict", "Content-seen verdicts",
             rename=VERDICTS.get),
    Labelled("hostyield_pages", "counter", "hostyield/", "kind", "Pages judged by host yield",
             rename={"new": "new", "old": "old", "errors": "error"}.get),
    Labelled("revisit_events", "counter", "revisit/", "event", "Re-visit outcomes",
             rename={"changed": "changed", "unchanged": "unchanged", "gone": "gone", "due": "due"}.get),
)


def is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class CrawlStatsCollector(Collector):
    """Metric families from ``snapshot()`` of the crawler's stats at each scrape."""

    def __init__(self, snapshot: Callable[[], Mapping[str, Any]], process: str) -> None:
        self.snapshot = snapshot
        self.process = process

    def collect(self) -> Iterator[Metric]:
        stats = self.snapshot()
        for single in SINGLE:
            value = stats.get(single.key)
            if is_number(value):
                family = self._family(single.name, single.kind, single.help, single.key in CRAWL_WIDE_STATS)
                family.add_metric(self._labels(single.key in CRAWL_WIDE_STATS), value)
                yield family
        for labelled in LABELLED:
            yield from self._labelled(labelled, stats)
        started = stats.get("start_time")
        if isinstance(started, datetime):
            yield GaugeMetricFamily(PREFIX + "start_time_seconds", "When the crawl process started (Unix time)",
                                    value=started.timestamp())

    def _labelled(self, spec: Labelled, stats: Mapping[str, Any]) -> Iterator[Metric]:
        values: dict[str, float] = {}
        crawl_wide = False
        for key, value in stats.items():
            if not key.startswith(spec.prefix) or not is_number(value):
                continue
            rest = key[len(spec.prefix):]
            label = spec.rename(rest) if rest not in spec.gauges else None
            if label is not None:
                values[label] = values.get(label, 0) + value
                crawl_wide = crawl_wide or key in CRAWL_WIDE_STATS
        if not values:
            return
        family = self._family(spec.name, spec.kind, spec.help, crawl_wide, spec.label)
        for label, value in sorted(values.items()):
            family.add_metric([label, *self._labels(crawl_wide)], value)
        yield family

    def _family(self, name: str, kind: str, help_text: str, crawl_wide: bool,
                *labels: str) -> CounterMetricFamily | GaugeMetricFamily:
        factory = CounterMetricFamily if kind == "counter" else GaugeMetricFamily
        names = [*labels, *(("scope", "process") if crawl_wide else ())]
        return factory(PREFIX + name, help_text, labels=names)

    def _labels(self, crawl_wide: bool) -> list[str]:
        return ["crawl", self.process] if crawl_wide else []


class MetricsServer:
    """prometheus-client's HTTP server on ``host:port`` in a daemon thread."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry, self.host, self.port = registry, host, port
        self.server: Any = None
        self.thread: Any = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}/metrics"

    def start(self) -> None:
        try:
            self.server, self.thread = start_http_server(self.port, addr=self.host, registry=self.registry)
        except OSError as err:
            why = "the port is in use" if err.errno == errno.EADDRINUSE else err.strerror or str(err)
            raise OSError(err.errno, f"METRICS_PORT={self.port}: cannot serve metrics on "
                                     f"{self.host}:{self.port}: {why}") from err

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent)."""
        if self.server is None:
            return
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
        self.server = self.thread = None

