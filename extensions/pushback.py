"""Sites that push back are obeyed: 429 and 503 pause the origin, as a downloader middleware.

A response whose status is in ``PUSHBACK_STATUSES`` (429 Too Many Requests,
503 Service Unavailable) is the server asking the crawler to slow down. The
middleware sits beside the downloader, before Scrapy's ``RetryMiddleware``
(550) in the response's path, so the answer never spends one of the URL's
retries (``RETRY_TIMES``). It:

* pauses the whole origin (``scheme://host[:port]``), not only the URL: it
  announces ``origin_held`` with the request, so the frontier parks the
  origin's URLs for the pause and puts the request back in its queue (never
  failed); on Redis the hold is shared by every process;
* takes the pause from ``Retry-After`` (delta-seconds or an HTTP-date, RFC
  9110 10.2.3), at most ``PUSHBACK_MAX_DELAY``; without a usable one, an
  exponential back-off: ``PUSHBACK_BACKOFF_DELAY`` doubled with each
  pushback of the origin since its last other answer, at most
  ``PUSHBACK_MAX_DELAY``;
* widens the host's politeness delay for the rest of the crawl once
  ``PUSHBACK_WIDEN_AFTER`` of its URLs have pushed back (adaptive
  politeness, as Nutch's exponential back-off per queue): to
  ``PUSHBACK_HOST_DELAY``, times ``PUSHBACK_HOST_DELAY_FACTOR`` with each
  further URL, at most ``PUSHBACK_HOST_MAX_DELAY``, announced with
  ``politeness_widened``; one URL's repeats widen nothing;
* hands a URL's answer on to the spider as it is after
  ``PUSHBACK_MAX_PER_URL`` pushbacks of that URL in a row (no immediate
  retries by ``RetryMiddleware`` after those patient ones: ``dont_retry``):
  a page that always answers 503 is a broken page, not a busy host;
* defers the origin for this run (``origin_deferred``) after
  ``PUSHBACK_RETRY_TIMES`` pushbacks in a row, so a site that never stops
  refusing cannot keep a crawl open.

robots.txt fetches are left to the robots.txt middleware. Stats:
``pushback/responses``, ``pushback/status/<code>``,
``pushback/retry_after/<seconds|date|none|invalid>``,
``pushback/pause_seconds`` (the pauses' sum), ``pushback/widened``,
``pushback/hosts_slowed``, ``pushback/host_delay_max``,
``pushback/handed_on``, ``pushback/deferred``.
"""

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
    """The pushback arithmetic, per origin, URL and host: pure, times passed in.

    A URL pushed back more than ``max_per_url`` times in a row is handed on
    (a page that always answers 503 is a broken page, not a busy host); a
    host's delay widens with the URLs it pushed back on, not with one URL's
    repeats."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.in_a_row: dict[str, int] = {}  # origin -> pushbacks since its last other answer
        self.by_url: dict[str, int] = {}  # URL -> its pushbacks since its last other answer
        self.host_urls: dict[str, int] = {}  # host -> URLs that pushed back in this crawl

    def pushed_back(self, origin: str, host: str, url: str, header: str | None, now: float) -> Verdict | None:
        """A pushback of ``url`` (of ``origin`` and ``host``) with that
        ``Retry-After`` header, at wall time ``now``; None when the URL has
        had its ``max_per_url`` pushbacks: hand the answer on as it is."""
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
        """``url`` of ``origin`` got another answer: the origin's back-off
        starts again (its host's delay stays)."""
        self.in_a_row.pop(origin, None)
        self.by_url.pop(url, None)


def origin_of(request: Request) -> str:
    """``scheme://netloc`` of the request, as holds are keyed."""
    parts = urlparse_cached(request)
    return f"{parts.scheme}://{parts.netloc}"


class PushbackMiddleware:
    """Turns a 429/503 into a pause of its origin and the request back in
    the frontier (see the module doc)."""

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
        reason = f"pushback: {response.status} ({self._why(verdict)})"
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

    @staticmethod
    def _why(verdict: Verdict) -> str:
        if verdict.source in ("seconds", "date"):
            return f"Retry-After, {verdict.pause:.1f}s"
        return f"back-off {verdict.pause:.1f}s, {verdict.in_a_row} in a row"

    def _widen(self, origin: str, host: str, delay: float) -> None:
        self.stats.inc_value("pushback/widened")
        self.stats.max_value("pushback/host_delay_max", delay)
        if host not in self.slowed:
            self.slowed.add(host)
            self.stats.inc_value("pushback/hosts_slowed")
        logger.info("%s pushed back again: its politeness delay is now at least %.1fs", origin, delay)
        self.crawler.signals.send_catch_log(politeness_widened, origin=origin, delay=delay)
