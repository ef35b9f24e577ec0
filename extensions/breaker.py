"""A per-origin circuit breaker, as a downloader middleware.

After ``CIRCUIT_BREAKER_FAILURES`` consecutive connection failures an origin
is held (``origin_held``), with back-off per failed probe, and deferred
(``origin_deferred``) after ``CIRCUIT_BREAKER_RETRY_TIMES`` of them."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.utils.misc import load_object

from extensions.pushback import origin_of
from extensions.robots.middleware import ROBOTS_FETCH
from extensions.signals import origin_deferred, origin_held

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class OriginState:
    """What the breaker remembers of one origin."""

    failures: int = 0  # consecutive connection failures
    trips: int = 0  # times opened since the last success
    open_until: float = 0.0


#: origins whose failures are counted; past it, those whose breaker never opened are forgotten
ORIGINS_KEPT = 10_000


class CircuitBreaker:
    """The breaker's arithmetic per origin, pure; remembers :data:`ORIGINS_KEPT` origins."""

    def __init__(self, failures: int, retry_delay: float, max_delay: float, retry_times: int) -> None:
        if failures < 1 or retry_delay < 0 or max_delay < 0 or retry_times < 0:
            raise ValueError(
                "CIRCUIT_BREAKER_FAILURES must be >= 1 and CIRCUIT_BREAKER_RETRY_DELAY, "
                "_RETRY_MAX_DELAY, _RETRY_TIMES >= 0; got "
                f"{failures!r}, {retry_delay!r}, {max_delay!r}, {retry_times!r}")
        self.failures, self.retry_delay = failures, retry_delay
        self.max_delay, self.retry_times = max_delay, retry_times
        self.origins: dict[str, OriginState] = {}

    def succeeded(self, origin: str) -> None:
        self.origins.pop(origin, None)

    def failed(self, origin: str, now: float) -> tuple[str, float]:
        """A connection failure: ``("counted", 0)``, ``("open", delay)`` when the
        breaker opens, or ``("deferred", 0)`` after too many failed probes."""
        state = self.origins.get(origin)
        if state is None:
            if len(self.origins) >= ORIGINS_KEPT:  # forget the origins whose breaker never opened
                for closed in [key for key, known in self.origins.items()
                               if not known.trips and known.open_until <= now]:
                    del self.origins[closed]
            state = self.origins[origin] = OriginState()
        state.failures += 1
        if state.failures < self.failures and not state.trips:
            return "counted", 0.0
        if state.open_until > now:  # a failure of a request sent before it opened
            return "counted", 0.0
        if state.trips > self.retry_times:
            del self.origins[origin]  # the frontier remembers the deferral
            return "deferred", 0.0
        delay = min(self.retry_delay * 2 ** state.trips, self.max_delay)
        state.trips += 1
        state.open_until = now + delay
        return "open", delay

    def is_open(self, origin: str, now: float) -> bool:
        state = self.origins.get(origin)
        return state is not None and state.open_until > now


class CircuitBreakerMiddleware:
    """Counts connection failures per origin; holds and defers origins."""

    def __init__(self, crawler: Crawler, breaker: CircuitBreaker, network_errors: tuple[type, ...],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.crawler, self.stats = crawler, crawler.stats
        self.breaker, self.network_errors, self.clock = breaker, network_errors, clock

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CircuitBreakerMiddleware:
        settings = crawler.settings
        if not settings.getbool("CIRCUIT_BREAKER_ENABLED"):
            raise NotConfigured
        breaker = CircuitBreaker(
            settings.getint("CIRCUIT_BREAKER_FAILURES"), settings.getfloat("CIRCUIT_BREAKER_RETRY_DELAY"),
            settings.getfloat("CIRCUIT_BREAKER_RETRY_MAX_DELAY"), settings.getint("CIRCUIT_BREAKER_RETRY_TIMES"))
        errors = tuple(load_object(path) if isinstance(path, str) else path
                       for path in settings.getlist("RETRY_EXCEPTIONS"))
        return cls(crawler, breaker, errors)

    def process_request(self, request: Request, spider: Any = None) -> None:
        if request.meta.get(ROBOTS_FETCH):
            return
        origin = origin_of(request)
        if self.breaker.is_open(origin, self.clock()):
            self.stats.inc_value("breaker/refused")
            raise IgnoreRequest(f"circuit breaker of {origin} is open")

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Response:
        if not request.meta.get(ROBOTS_FETCH):
            self.breaker.succeeded(origin_of(request))
        return response

    def process_exception(self, request: Request, exception: BaseException, spider: Any = None) -> None:
        if request.meta.get(ROBOTS_FETCH) or not isinstance(exception, self.network_errors):
            return
        origin = origin_of(request)
        verdict, delay = self.breaker.failed(origin, self.clock())
        self.stats.inc_value("breaker/failures")
        reason = f"{type(exception).__name__}: {exception}"
        if verdict == "open":
            self.stats.inc_value("breaker/opened")
            logger.info("Circuit breaker of %s open for %.1fs (%s)", origin, delay, reason)
            self.crawler.signals.send_catch_log(
                origin_held, origin=origin, delay=delay, request=request, reason=f"circuit breaker open ({reason})")
        elif verdict == "deferred":
            self.stats.inc_value("breaker/deferred")
            self.crawler.signals.send_catch_log(
                origin_deferred, origin=origin,
                reason=f"circuit breaker open after {self.breaker.retry_times} failed probes ({reason})")
