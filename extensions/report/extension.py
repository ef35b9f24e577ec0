"""The crawl report extension: ``REPORT_DIR/index.html`` with PNG plots, sampled
every ``REPORT_INTERVAL`` seconds and at close, drawn in a worker thread."""

from __future__ import annotations

import copy
import logging
import re
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred, DeferredLock
from twisted.internet.threads import deferToThread

from extensions import defaults
from extensions.defaults import checked
from extensions.progress import IGNORED, error_count, is_robots_fetch, scheduler_length
from extensions.report.render import Snapshot, write_report
from extensions.report.series import BoundedTally, StatsSeries

if TYPE_CHECKING:
    from typing_extensions import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: what the plots over time need: our counters and the frontier's size
SERIES_KEYS = ("pages", "bytes", "frontier/queued", "frontier/inflight", "frontier/done")
#: the frontier by status: (label, stat)
FRONTIER_STATUS = (
    ("queued", "frontier/queued"), ("in flight", "frontier/inflight"), ("done", "frontier/done"),
    ("failed", "frontier/failed"), ("excluded", "frontier/excluded"), ("deferred", "frontier/deferred"),
    ("parked (held hosts)", "frontier/parked"), ("duplicates", "frontier/duplicates"),
    ("refused", "frontier/refused"), ("held origins", "frontier/held_origins"),
)
#: URLs in the store by status, where the frontier counts them (frontier/urls/<status>)
URL_STATUS_STAT = re.compile(r"^frontier/urls/([a-z_]+)$")
#: by-level counts, should the frontier report them (frontier/level/<n>)
LEVEL_STAT = re.compile(r"^frontier/(?:front_queue|level)s?/(\d+)$")
STATUS_STAT = "downloader/response_status_count/"
ROBOTS_STATUS_STAT = "robotstxt/response_status_count/"


class CrawlReport:
    """Samples the crawl and rewrites ``directory``'s report."""

    def __init__(self, stats: StatsCollector, directory: Path, interval: float, *, spider: str = "",
                 max_samples: int = 1000, max_hosts: int = 10_000,
                 queue_size: Callable[[], int | None] = lambda: None,
                 in_flight: Callable[[], int | None] = lambda: None,
                 clock: Callable[[], float] = time.monotonic,
                 render: Callable[[Path, Snapshot], Any] = write_report,
                 in_thread: Callable[..., Deferred] = deferToThread) -> None:
        self.stats = stats
        self.directory = directory
        self.interval = interval
        self.spider = spider
        self.queue_size = queue_size
        self.in_flight = in_flight
        self.clock = clock
        self.render = render
        self.in_thread = in_thread
        self.series = StatsSeries(SERIES_KEYS, max_samples)
        self.host_pages = BoundedTally(max_hosts)
        self.host_bytes = BoundedTally(max_hosts)
        self.mime_types = BoundedTally(1000)
        self.depths = BoundedTally(1000)
        self.pages = 0
        self.bytes = 0
        self.novel_bytes = self.duplicate_bytes = self.near_duplicate_bytes = 0
        self.started = clock()
        self.lock = DeferredLock()
        self.task: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = crawler.settings
        directory = settings.get("REPORT_DIR", defaults.REPORT_DIR)
        if not directory:
            raise NotConfigured
        interval = checked(settings, "REPORT_INTERVAL", lambda value: value > 0, "> 0 seconds")
        max_samples = checked(settings, "REPORT_MAX_SAMPLES", lambda value: value >= 4, "an integer >= 4", int)
        max_hosts = checked(settings, "REPORT_MAX_HOSTS", lambda value: value >= 2, "an integer >= 2", int)
        report = cls(crawler.stats, Path(directory), interval,
                     spider=crawler.spidercls.name or "", max_samples=max_samples, max_hosts=max_hosts,
                     queue_size=lambda: scheduler_length(crawler),
                     in_flight=lambda: downloads_in_flight(crawler))
        crawler.signals.connect(report.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(report.response_downloaded, signal=signals.response_downloaded)
        crawler.signals.connect(report.item_scraped, signal=signals.item_scraped)
        crawler.signals.connect(report.spider_closed, signal=signals.spider_closed)
        return report

    # -- signals -------------------------------------------------------------------
    def spider_opened(self) -> None:
        self.started = self.clock()
        self.sample()
        self.task = create_looping_call(self.tick)
        self.task.start(self.interval, now=False)

    def response_downloaded(self, response: Response, request: Request) -> None:
        if is_robots_fetch(request):
            return
        size = len(response.body)
        self.pages += 1
        self.bytes += size
        host = urlparse_cached(response).hostname or "(none)"
        self.host_pages.add(host)
        self.host_bytes.add(host, size)

    def item_scraped(self, item: Any) -> None:
        mime = str(item.get("content_type") or "(none)").split(";")[0].strip().lower() or "(none)"
        self.mime_types.add(mime)
        depth = item.get("depth")
        self.depths.add(str(depth if isinstance(depth, int) else "?"))
        length = item.get("length")
        status = item.get("status")
        if not isinstance(length, int) or not isinstance(status, int) or not 200 <= status < 300:
            return
        if item.get("duplicate_of"):
            self.duplicate_bytes += length
        elif item.get("near_duplicate_of"):
            self.near_duplicate_bytes += length
        else:
            self.novel_bytes += length

    def tick(self) -> None:
        """A periodic refresh; skipped while the previous one still draws."""
        self.sample()
        if self.lock.locked:
            self.stats.inc_value("report/skipped")
            return
        self.refresh("running")

    def spider_closed(self, reason: str) -> Deferred:
        """The last refresh; the crawl's close waits for it."""
        if self.task is not None and self.task.running:
            self.task.stop()
        self.sample()
        return self.refresh(f"finished ({reason})")

    # -- sampling and rendering ----------------------------------------------------
    def sample(self) -> None:
        values = dict(self.stats.get_stats())
        values.update(pages=self.pages, bytes=self.bytes)
        values.update(self.live_sizes())
        self.series.add(self.clock() - self.started, values)

    def refresh(self, state: str) -> Deferred:
        """Snapshot now, draw in a worker thread (one at a time)."""
        began = time.perf_counter()
        snapshot = self.snapshot(state)
        # the only part on the reactor thread
        self.stats.max_value("report/snapshot_seconds_max", round(time.perf_counter() - began, 4))
        done = self.lock.run(self.in_thread, self._render, snapshot)
        return done.addCallbacks(self._rendered, self._failed)

    def _render(self, snapshot: Snapshot) -> float:
        """In the worker thread: draw and write; the seconds it took."""
        began = time.perf_counter()
        self.render(self.directory, snapshot)
        return time.perf_counter() - began

    def _rendered(self, took: float) -> None:
        # back on the reactor thread: stats are written there only
        self.stats.inc_value("report/refreshes")
        self.stats.set_value("report/render_seconds", round(took, 4))
        self.stats.max_value("report/render_seconds_max", round(took, 4))
        self.stats.inc_value("report/render_seconds_total", took, start=0.0)

    def _failed(self, failure: Any) -> None:
        self.stats.inc_value("report/errors")
        if self.stats.get_value("report/errors") == 1:
            logger.error("REPORT_DIR=%s: cannot write the report (further failures only counted "
                         "in report/errors): %s", self.directory, failure.getErrorMessage())

    def snapshot(self, state: str) -> Snapshot:
        """Plain copies of everything the report shows, as of now."""
        stats = dict(self.stats.get_stats())
        elapsed = self.clock() - self.started
        hosts = [(host, pages, self.host_bytes.counts.get(host, 0))
                 for host, pages in self.host_pages.most_common(100)]
        return Snapshot(
            spider=self.spider, state=state,
            generated=datetime.now(timezone.utc).isoformat(timespec="seconds"),
            elapsed=elapsed, summary=self.summary(stats, elapsed), hosts=hosts,
            hosts_other=self.host_pages.other, mime_types=self.mime_types.most_common(),
            status_codes=status_codes(stats), frontier_status=self.frontier_status(stats),
            frontier_levels=frontier_levels(stats), frontier_urls=frontier_urls(stats),
            depths=sorted((int(d), n) for d, n in self.depths.counts.items() if d.isdigit()),
            series=copy.deepcopy(self.series), samples_taken=self.series.taken,
            stats={key: str(value) for key, value in stats.items()},
        )

    def summary(self, stats: dict[str, Any], elapsed: float) -> dict[str, Any]:
        """The crawl summary, label -> value."""
        seconds = max(elapsed, 1e-9)
        _, recent = self.series.rates("pages")
        failed = stats.get("downloader/exception_count", 0) - stats.get(IGNORED, 0)
        errors = error_count(stats, page_server_errors(stats))
        return {
            "seeds": stats.get("seeds/accepted", 0),
            "hosts known to the frontier": stats.get("frontier/hosts", 0),
            "hosts fetched from": len(self.host_pages.counts),
            "URLs fetched": self.pages,
            # errors as the crawl's final report counts them (extensions.progress)
            "errors": errors,
            "errors: fetches failed (download errors)": failed,
            "errors: server errors (5xx, pushbacks aside)": errors - failed,
            # the crawl's decisions: outcomes, not errors
            "outcomes: URLs excluded by robots.txt": stats.get("frontier/excluded", 0),
            "outcomes: URLs refused (URL filter, traps, host budget, address policy)": stats.get("frontier/refused", 0),
            "outcomes: URLs deferred": stats.get("frontier/deferred", 0),
            "outcomes: requests refused before a fetch (robots.txt, holds)": stats.get(IGNORED, 0),
            "outcomes: pushbacks obeyed (429, 503: host paused)": stats.get("pushback/responses", 0),
            "bytes fetched": self.bytes,
            "novel bytes (2xx, new content)": self.novel_bytes,
            "duplicate bytes (exact copies)": self.duplicate_bytes,
            "near-duplicate bytes": self.near_duplicate_bytes,
            "pages/s (overall)": round(self.pages / seconds, 2),
            "pages/s (last interval)": round(recent[-1], 2) if recent else 0.0,
            "bytes/s (overall)": round(self.bytes / seconds, 1),
        }

    def live_sizes(self) -> dict[str, int]:
        """The frontier's size now: its gauges are set at checkpoints only."""
        sizes = {"frontier/queued": self.queue_size(), "frontier/inflight": self.in_flight()}
        return {key: value for key, value in sizes.items() if value is not None}

    def frontier_status(self, stats: dict[str, Any]) -> list[tuple[str, int]]:
        stats = {**stats, **self.live_sizes()}
        return [(label, int(stats[key])) for label, key in FRONTIER_STATUS
                if isinstance(stats.get(key), (int, float))]


def page_server_errors(stats: dict[str, Any]) -> int:
    """5xx answers to pages: the downloader's, less the robots.txt fetches' (a hold, not an error)."""
    answers = sum(n for code, n in status_codes(stats) if code.startswith("5"))
    robots = sum(n for code, n in status_codes(stats, ROBOTS_STATUS_STAT) if code.startswith("5"))
    return answers - robots


def status_codes(stats: dict[str, Any], prefix: str = STATUS_STAT) -> list[tuple[str, int]]:
    """(code, responses) from Scrapy's downloader stats (or another ``prefix``), by code."""
    return sorted((key[len(prefix):], value) for key, value in stats.items()
                  if key.startswith(prefix) and isinstance(value, int))


def frontier_urls(stats: dict[str, Any]) -> list[tuple[str, int]]:
    """(status, URLs in the store) where the frontier counts them; empty otherwise."""
    return sorted((match.group(1), value) for key, value in stats.items()
                  if (match := URL_STATUS_STAT.match(key)) and isinstance(value, int))


def frontier_levels(stats: dict[str, Any]) -> list[tuple[str, int]]:
    """(level, URLs) where the frontier reports them, top level first; empty otherwise."""
    levels = sorted(((int(match.group(1)), value) for key, value in stats.items()
                     if (match := LEVEL_STAT.match(key)) and isinstance(value, int)), reverse=True)
    return [(str(level), value) for level, value in levels]


def downloads_in_flight(crawler: Crawler) -> int | None:
    """Requests in Scrapy's downloader now; None once it is gone."""
    downloader = getattr(getattr(crawler, "engine", None), "downloader", None)
    active = getattr(downloader, "active", None)
    return len(active) if active is not None else None
