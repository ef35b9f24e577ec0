"""Progress log (every ``PROGRESS_INTERVAL`` seconds) and final report of a crawl, at
``spider_closed`` and in a JSON ``PROGRESS_REPORT_FILE``, instead of Scrapy's LogStats."""

from __future__ import annotations

import json
import logging
import math
import os
import time
from datetime import date, datetime
from hashlib import blake2b
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from scrapy import signals
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.httpobj import urlparse_cached

from extensions import defaults
from extensions.defaults import checked

if TYPE_CHECKING:
    from typing_extensions import Self

    from scrapy.crawler import Crawler
    from scrapy.http import Request, Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

DUPLICATE_STATS = ("dupefilter/filtered", "frontier/duplicates", "contentseen/duplicates")
IGNORED = "downloader/exception_type_count/scrapy.exceptions.IgnoreRequest"
#: report key -> stat: what the crawl decided, counted apart from the errors
OUTCOMES = {"excluded": "frontier/excluded", "refused": "frontier/refused", "deferred": "frontier/deferred",
            "requests_refused": IGNORED, "pushback": "pushback/responses"}
PUSHBACK_STATUS = "pushback/status/"
HASH_BITS = 64


def error_count(stats: dict[str, Any], server_errors: int) -> int:
    """Failed fetches and 5xx answers, the crawl's decisions left out."""
    failed = stats.get("downloader/exception_count", 0) - stats.get(IGNORED, 0)
    pushed_back = sum(value for key, value in stats.items()
                      if key.startswith(PUSHBACK_STATUS) and key[len(PUSHBACK_STATUS):].startswith("5"))
    return failed + server_errors - pushed_back


def outcomes(stats: dict[str, Any]) -> dict[str, int]:
    return {name: int(stats.get(key, 0)) for name, key in OUTCOMES.items()}


def is_robots_fetch(request: Request) -> bool:
    """The robots middleware's own fetch, which is not a page of the crawl."""
    if request.meta.get("robotstxt_fetch"):  # ours, also after its redirects
        return True
    return bool(request.meta.get("dont_obey_robotstxt")) and \
        urlparse_cached(request).path == "/robots.txt"


def json_safe(value: Any) -> Any:
    """Stats values as JSON: datetimes as ISO strings, unknown types as str."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [json_safe(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def write_atomically(path: Path, data: bytes) -> Path:
    """A reader sees the old file or the new one, never half of one."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
    return path


def write_json_atomically(path: Path, data: dict[str, Any]) -> None:
    write_atomically(path, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())


class DistinctCounter:
    """A distinct count: exact up to ``exact_limit`` strings, then a HyperLogLog
    of ``2**precision`` registers (standard error ``1.04 / sqrt(2**precision)``)."""

    def __init__(self, exact_limit: int = 10_000, precision: int = 14) -> None:
        if exact_limit < 0 or not 4 <= precision <= 18:
            raise ValueError(f"exact_limit must be >= 0 and precision in 4..18, got "
                             f"{exact_limit!r} and {precision!r}")
        self.exact_limit, self.precision = exact_limit, precision
        self.exact: set[str] | None = set()
        self.registers = bytearray(1 << precision)

    def add(self, text: str) -> None:
        if self.exact is not None:
            if text in self.exact:
                return
            self.exact.add(text)
            if len(self.exact) > self.exact_limit:
                self.exact = None  # the sketch has every string so far
        digest = int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "big")
        index = digest >> (HASH_BITS - self.precision)
        rest = digest & ((1 << (HASH_BITS - self.precision)) - 1)
        rank = HASH_BITS - self.precision - rest.bit_length() + 1
        if rank > self.registers[index]:
            self.registers[index] = rank

    def __len__(self) -> int:
        if self.exact is not None:
            return len(self.exact)
        return round(self.estimate())

    def estimate(self) -> float:
        """The HyperLogLog estimate, with linear counting for small counts."""
        m = len(self.registers)
        raw = (0.7213 / (1 + 1.079 / m)) * m * m / sum(2.0 ** -r for r in self.registers)
        zeros = self.registers.count(0)
        if raw <= 2.5 * m and zeros:
            return m * math.log(m / zeros)
        return raw


class ProgressReporter:
    """Counts pages, hosts and errors; logs progress and writes the report."""

    def __init__(self, stats: StatsCollector, interval: float, report_file: Path | None,
                 queue_size: Callable[[], int | None] = lambda: None,
                 clock: Callable[[], float] = time.monotonic,
                 hosts_exact: int = defaults.PROGRESS_HOSTS_EXACT):
        self.stats = stats
        self.interval = interval
        self.report_file = report_file
        self.queue_size = queue_size
        self.clock = clock
        self.pages = 0
        self.server_errors = 0
        self.hosts = DistinctCounter(hosts_exact)
        self.started = clock()
        self.last_tick, self.last_pages = self.started, 0
        self.task: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        interval = checked(crawler.settings, "PROGRESS_INTERVAL", lambda value: value >= 0, ">= 0 (0 disables)")
        path = crawler.settings.get("PROGRESS_REPORT_FILE")
        hosts_exact = checked(crawler.settings, "PROGRESS_HOSTS_EXACT", lambda value: value >= 0, "an integer >= 0", int)
        reporter = cls(crawler.stats, interval, Path(path) if path else None,
                       queue_size=lambda: scheduler_length(crawler), hosts_exact=hosts_exact)
        crawler.signals.connect(reporter.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(reporter.response_received, signal=signals.response_downloaded)
        crawler.signals.connect(reporter.spider_closed, signal=signals.spider_closed)
        return reporter

    def spider_opened(self) -> None:
        self.started = self.last_tick = self.clock()
        if self.interval:
            self.task = create_looping_call(self.log_progress)
            self.task.start(self.interval, now=False)

    def response_received(self, response: Response, request: Request) -> None:
        if is_robots_fetch(request):
            return
        self.pages += 1
        if response.status >= 500:
            self.server_errors += 1
        # the request's URL is parsed and cached already; the response's would be parsed again
        host = urlparse_cached(request if request.url == response.url else response).hostname
        if host:
            self.hosts.add(host)

    @property
    def errors(self) -> int:
        return error_count(self.stats.get_stats(), self.server_errors)

    def log_progress(self) -> None:
        now = self.clock()
        recent = (self.pages - self.last_pages) / max(now - self.last_tick, 1e-9)
        self.last_tick, self.last_pages = now, self.pages
        queue = self.queue_size()
        logger.info("Progress: %d pages (%.1f pages/s, %.1f overall), queue %s, %d hosts, %d errors%s",
                    self.pages, recent, self.overall_rate(now),
                    "?" if queue is None else queue, len(self.hosts), self.errors, self.freshness_note())

    def freshness_note(self) -> str:
        """A continuous crawl's freshness and age estimates (empty otherwise)."""
        freshness = self.stats.get_value("revisit/freshness")
        if freshness is None:
            return ""
        return (f", freshness {freshness:.2f}, age {self.stats.get_value('revisit/age_seconds', 0):.0f} s, "
                f"{self.stats.get_value('revisit/due_now', 0)} due")

    def overall_rate(self, now: float) -> float:
        return self.pages / max(now - self.started, 1e-9)

    def spider_closed(self, reason: str) -> None:
        if self.task is not None and self.task.running:
            self.task.stop()
        report = self.report(reason)
        done = report["outcomes"]
        logger.info("Finished (%s): %d pages in %.1f s (%.1f pages/s), %d hosts, %d errors, "
                    "%d duplicates, queue %s; not errors: %d URLs excluded by robots.txt, %d refused, "
                    "%d deferred, %d pushbacks obeyed", reason, report["pages"], report["elapsed"],
                    report["pages_per_second"], report["hosts"], report["errors"],
                    report["duplicates"], report["queue"], done["excluded"], done["refused"],
                    done["deferred"], done["pushback"])
        for origin, why in sorted(report["deferred"].items()):
            logger.warning("Deferred (retried first when resumed): %s: %s", origin, why)
        if self.report_file is not None:
            try:
                write_json_atomically(self.report_file, report)
            except OSError as err:
                logger.error("PROGRESS_REPORT_FILE=%s: cannot write report: %s", self.report_file, err)

    def report(self, reason: str) -> dict[str, Any]:
        """The final report; ``stats`` is the whole stats dict as JSON."""
        now = self.clock()
        return {
            "pages": self.pages,
            "hosts": len(self.hosts),
            "errors": self.errors,
            "outcomes": outcomes(self.stats.get_stats()),
            "duplicates": sum(self.stats.get_value(key, 0) for key in DUPLICATE_STATS),
            "elapsed": round(now - self.started, 3),
            "pages_per_second": round(self.overall_rate(now), 3),
            "queue": self.queue_size(),
            "finish_reason": reason,
            # origins whose URLs could not be crawled in this run, with why
            "deferred": dict(self.stats.get_value("frontier/deferred_reasons", {})),
            "deferred_urls": self.stats.get_value("frontier/deferred", 0),
            # a continuous crawl: Cho and Garcia-Molina's freshness and age of its copies, estimated
            "freshness": self.stats.get_value("revisit/freshness"),
            "age_seconds": self.stats.get_value("revisit/age_seconds"),
            "stats": json_safe(self.stats.get_stats()),
        }


def scheduler_length(crawler: Crawler) -> int | None:
    """Requests waiting in the scheduler (``engine.scheduler``); None where that is unknown."""
    scheduler = getattr(getattr(crawler, "engine", None), "scheduler", None)
    try:
        return len(scheduler) if scheduler is not None else None
    except Exception:  # no __len__, or a store already closed at spider_closed
        return None
