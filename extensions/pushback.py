"""Sites that push back (429, 503) are obeyed, as a downloader middleware before
``RetryMiddleware`` (a pushback spends no retry): the origin is held for its ``Retry-After``
or a back-off, then the host's delay widened, at last the origin deferred."""

from __future__ import annotations

import email.utils
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timezone
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached

from extensions.robots.middleware import ROBOTS_FETCH
from extensions.signals import origin_deferred, origin_held, politeness_widened

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


def retry_after(value: str | None, now: float) -> tuple[str, float | None]:
    """How a ``Retry-After`` header reads, and its seconds from ``now`` (a
    wall time): ``("seconds", s)`` or ``("date", s)`` (a date past is 0),
    ``("none", None)`` when absent, ``("invalid", None)`` when unreadable."""
    text = (value or "").strip()
    if not text:
        return "none", None
    if text.isascii() and text.isdigit():
        return "seconds", float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return "invalid", None
    if when.tzinfo is None:  # "-0000": UTC, by RFC 5322
        when = when.replace(tzinfo=timezone.utc)
    return "date", max(0.0, when.timestamp() - now)


@dataclass(frozen=True, slots=True)
class Limits:
    """The pushback settings, checked (``PUSHBACK_*``; defaults in :mod:`extensions.defaults`)."""

    backoff_delay: float
    max_delay: float
    max_per_url: int
    retry_times: int
    widen_after: int
    host_delay: float
    host_delay_factor: float
    host_max_delay: float

    def __post_init__(self) -> None:
        if min(self.backoff_delay, self.max_delay, self.host_delay, self.host_max_delay, self.retry_times) < 0 \
                or self.max_per_url < 1 or self.widen_after < 1 or self.host_delay_factor < 1:
            raise ValueError(
                "PUSHBACK_BACKOFF_DELAY, _MAX_DELAY, _HOST_DELAY, _HOST_MAX_DELAY and _RETRY_TIMES must be "
                ">= 0, PUSHBACK_MAX_PER_URL and PUSHBACK_WIDEN_AFTER >= 1, PUSHBACK_HOST_DELAY_FACTOR >= 1; "
                f"got {self!r}")


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one pushback decides."""

    pause: float  # seconds the origin is held
    source: str  # where the pause came from: "seconds", "date" (Retry-After), "none", "invalid" (back-off)
    in_a_row: int  # the origin's pushbacks since its last other answer, this one included
    host_delay: float | None  # the host's widened politeness delay, if this pushback widens it
    deferred: bool  # too many in a row: the origin is deferred for this run


class PushbackPolicy:
    """The pushback arithmetic, per origin, URL and host: pure, times passed in."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.in_a_row: dict[str, int] = {}  # origin -> pushbacks since its last other answer
        self.by_url: dict[str, int] = {}  # URL -> its pushbacks since its last other answer
        self.host_urls: dict[str, int] = {}  # host -> URLs that pushed back in this crawl

    def pushed_back(self, origin: str, host: str, url: str, header: str | None, now: float) -> Verdict | None:
        """A pushback of ``url`` at wall time ``now``; None once the URL had ``max_per_url``."""
        limits = self.limits
        repeats = self.by_url.get(url, 0) + 1
        if repeats > limits.max_per_url:
            del self.by_url[url]
            return None
        self.by_url[url] = repeats
        in_a_row = self.in_a_row[origin] = self.in_a_row.get(origin, 0) + 1
        source, seconds = retry_after(header, now)
        if seconds is None:
            seconds = limits.backoff_delay * 2 ** min(in_a_row - 1, 64)
        widened = None
        if repeats == 1:
            urls = self.host_urls[host] = self.host_urls.get(host, 0) + 1
            widened = self.widened_delay(urls)
        return Verdict(min(seconds, limits.max_delay), source, in_a_row, widened, in_a_row > limits.retry_times)

    def widened_delay(self, urls: int) -> float | None:
        """A host's politeness delay once ``urls`` of its URLs pushed back; None before it widens."""
        limits = self.limits
        if urls < limits.widen_after:
            return None
        steps = min(urls - limits.widen_after, 64)
        return min(limits.host_delay * limits.host_delay_factor ** steps, limits.host_max_delay)

    def answered(self, origin: str, url: str) -> None:
        """``url`` of ``origin`` got another answer: the origin's back-off starts again."""
        self.in_a_row.pop(origin, None)
        self.by_url.pop(url, None)


def origin_of(request: Request) -> str:
    """``scheme://netloc`` of the request, as holds are keyed."""
    parts = urlparse_cached(request)
    return f"{parts.scheme}://{parts.netloc}"


class PushbackMiddleware:
    """A 429/503 pauses its origin and sends the request back to the frontier."""

    def __init__(self, crawler: Crawler, policy: PushbackPolicy, statuses: Iterable[int],
                 wall_clock: Callable[[], float] = time.time) -> None:
        self.crawler, self.stats = crawler, crawler.stats
        self.policy, self.statuses, self.wall_clock = policy, frozenset(statuses), wall_clock
        self.slowed: set[str] = set()  # hosts whose delay was widened

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> PushbackMiddleware:
        settings = crawler.settings
        if not settings.getbool("PUSHBACK_ENABLED"):
            raise NotConfigured
        statuses = [int(code) for code in settings.getlist("PUSHBACK_STATUSES")]
        if any(not 400 <= code <= 599 for code in statuses):
            raise ValueError(f"PUSHBACK_STATUSES must be HTTP error statuses (400-599); got {statuses!r}")
        limits = Limits(
            backoff_delay=settings.getfloat("PUSHBACK_BACKOFF_DELAY"), max_delay=settings.getfloat("PUSHBACK_MAX_DELAY"),
            max_per_url=settings.getint("PUSHBACK_MAX_PER_URL"), retry_times=settings.getint("PUSHBACK_RETRY_TIMES"),
            widen_after=settings.getint("PUSHBACK_WIDEN_AFTER"), host_delay=settings.getfloat("PUSHBACK_HOST_DELAY"),
            host_delay_factor=settings.getfloat("PUSHBACK_HOST_DELAY_FACTOR"),
            host_max_delay=settings.getfloat("PUSHBACK_HOST_MAX_DELAY"))
        return cls(crawler, PushbackPolicy(limits), statuses)

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        if response.status not in self.statuses or request.meta.get(ROBOTS_FETCH):
            if self.policy.in_a_row or self.policy.by_url:  # nothing to forget, nearly always
                self.policy.answered(origin_of(request), request.url)
            return response
        origin, host = origin_of(request), urlparse_cached(request).hostname or ""
        header = response.headers.get(b"Retry-After")
        verdict = self.policy.pushed_back(origin, host, request.url,
                                          None if header is None else header.decode("latin-1"), self.wall_clock())
        if verdict is None:  # patient tries used up: the spider gets the answer, not more hammering
            self.stats.inc_value("pushback/handed_on")
            request.meta["dont_retry"] = True
            return response
        self._count(response.status, verdict)
        why = f"Retry-After, {verdict.pause:.1f}s" if verdict.source in ("seconds", "date") else \
            f"back-off {verdict.pause:.1f}s, {verdict.in_a_row} in a row"
        reason = f"pushback: {response.status} ({why})"
        send = self.crawler.signals.send_catch_log
        send(origin_held, origin=origin, delay=verdict.pause, reason=reason, request=request, wait_out=True)
        if verdict.host_delay is not None:
            self._widen(origin, host, verdict.host_delay)
        if verdict.deferred:
            self.stats.inc_value("pushback/deferred")
            send(origin_deferred, origin=origin,
                 reason=f"pushback: {verdict.in_a_row} answers {response.status} in a row")
        raise IgnoreRequest(f"{origin} pushed back ({response.status}): held {verdict.pause:.1f}s")

    def _count(self, status: int, verdict: Verdict) -> None:
        stats = self.stats
        stats.inc_value("pushback/responses")
        stats.inc_value(f"pushback/status/{status}")
        stats.inc_value(f"pushback/retry_after/{verdict.source}")
        stats.inc_value("pushback/pause_seconds", verdict.pause, start=0.0)

    def _widen(self, origin: str, host: str, delay: float) -> None:
        self.stats.inc_value("pushback/widened")
        self.stats.max_value("pushback/host_delay_max", delay)
        if host not in self.slowed:
            self.slowed.add(host)
            self.stats.inc_value("pushback/hosts_slowed")
        logger.info("%s pushed back again: its politeness delay is now at least %.1fs", origin, delay)
        self.crawler.signals.send_catch_log(politeness_widened, origin=origin, delay=delay)
