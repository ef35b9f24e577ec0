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
* widens the host's politeness delay for the rest of the crawl once it has
  pushed back ``PUSHBACK_WIDEN_AFTER`` times (adaptive politeness, as
  Nutch's exponential back-off per queue does): ``PUSHBACK_HOST_DELAY``,
  times ``PUSHBACK_HOST_DELAY_FACTOR`` with each further pushback, at most
  ``PUSHBACK_HOST_MAX_DELAY``, announced with ``politeness_widened``;
* defers the origin for this run (``origin_deferred``) after
  ``PUSHBACK_RETRY_TIMES`` pushbacks in a row, so a site that never stops
  refusing cannot keep a crawl open.

robots.txt fetches are left to the robots.txt middleware. Stats:
``pushback/responses``, ``pushback/status/<code>``,
``pushback/retry_after/<seconds|date|none|invalid>``,
``pushback/pause_seconds`` (the pauses' sum), ``pushback/widened``,
``pushback/hosts_slowed``, ``pushback/host_delay_max``, ``pushback/deferred``.
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
class Verdict:
    """What one pushback decides."""

    pause: float  # seconds the origin is held
    source: str  # where the pause came from: "seconds", "date" (Retry-After), "none", "invalid" (back-off)
    in_a_row: int  # the origin's pushbacks since its last other answer, this one included
    host_delay: float | None  # the host's widened politeness delay, if this pushback widens it
    deferred: bool  # too many in a row: the origin is deferred for this run


class PushbackPolicy:
    """The pushback arithmetic, per origin and per host: pure, times passed in."""

    def __init__(self, backoff_delay: float, max_delay: float, retry_times: int, widen_after: int,
                 host_delay: float, host_delay_factor: float, host_max_delay: float) -> None:
        if min(backoff_delay, max_delay, host_delay, host_max_delay) < 0 or retry_times < 0 \
                or widen_after < 1 or host_delay_factor < 1:
            raise ValueError(
                "PUSHBACK_BACKOFF_DELAY, _MAX_DELAY, _HOST_DELAY, _HOST_MAX_DELAY and _RETRY_TIMES must be "
                ">= 0, PUSHBACK_WIDEN_AFTER >= 1 and PUSHBACK_HOST_DELAY_FACTOR >= 1; got "
                f"{backoff_delay!r}, {max_delay!r}, {host_delay!r}, {host_max_delay!r}, {retry_times!r}, "
                f"{widen_after!r}, {host_delay_factor!r}")
        self.backoff_delay, self.max_delay, self.retry_times = backoff_delay, max_delay, retry_times
        self.widen_after, self.host_delay, self.host_delay_factor = widen_after, host_delay, host_delay_factor
        self.host_max_delay = host_max_delay
        self.in_a_row: dict[str, int] = {}  # origin -> pushbacks since its last other answer
        self.host_pushbacks: dict[str, int] = {}  # host -> pushbacks in this crawl

    def pushed_back(self, origin: str, host: str, header: str | None, now: float) -> Verdict:
        """A pushback from ``origin`` (of ``host``) with that ``Retry-After``
        header, at wall time ``now``."""
        in_a_row = self.in_a_row[origin] = self.in_a_row.get(origin, 0) + 1
        source, seconds = retry_after(header, now)
        if seconds is None:
            seconds = self.backoff_delay * 2 ** min(in_a_row - 1, 64)
        pushbacks = self.host_pushbacks[host] = self.host_pushbacks.get(host, 0) + 1
        return Verdict(min(seconds, self.max_delay), source, in_a_row, self.widened_delay(pushbacks),
                       in_a_row > self.retry_times)

    def widened_delay(self, pushbacks: int) -> float | None:
        """A host's politeness delay after ``pushbacks`` pushbacks; None before it widens."""
        if pushbacks < self.widen_after:
            return None
        steps = min(pushbacks - self.widen_after, 64)
        return min(self.host_delay * self.host_delay_factor ** steps, self.host_max_delay)

    def answered(self, origin: str) -> None:
        """``origin`` gave another answer: its back-off starts again (its host's delay stays)."""
        self.in_a_row.pop(origin, None)


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
        policy = PushbackPolicy(
            settings.getfloat("PUSHBACK_BACKOFF_DELAY"), settings.getfloat("PUSHBACK_MAX_DELAY"),
            settings.getint("PUSHBACK_RETRY_TIMES"), settings.getint("PUSHBACK_WIDEN_AFTER"),
            settings.getfloat("PUSHBACK_HOST_DELAY"), settings.getfloat("PUSHBACK_HOST_DELAY_FACTOR"),
            settings.getfloat("PUSHBACK_HOST_MAX_DELAY"))
        return cls(crawler, policy, statuses)

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        if response.status not in self.statuses or request.meta.get(ROBOTS_FETCH):
            if self.policy.in_a_row:
                self.policy.answered(origin_of(request))
            return response
        origin, host = origin_of(request), urlparse_cached(request).hostname or ""
        header = response.headers.get(b"Retry-After")
        verdict = self.policy.pushed_back(origin, host, None if header is None else header.decode("latin-1"),
                                          self.wall_clock())
        self._count(response.status, verdict)
        reason = f"pushback: {response.status} ({self._why(verdict)})"
        send = self.crawler.signals.send_catch_log
        send(origin_held, origin=origin, delay=verdict.pause, reason=reason, request=request)
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
