"""The circuit breaker's arithmetic (pure) and its middleware's signals."""

from __future__ import annotations

import pytest
from scrapy import Request, Spider
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.test import get_crawler
from twisted.internet.error import ConnectionRefusedError as Refused

from extensions.breaker import CircuitBreaker, CircuitBreakerMiddleware
from extensions.signals import origin_deferred, origin_held


def test_consecutive_failures_open_it_and_a_response_closes_it() -> None:
    breaker = CircuitBreaker(failures=3, retry_delay=10.0, max_delay=300.0, retry_times=2)
    assert [breaker.failed("https://a.test", 0.0)[0] for _ in range(2)] == ["counted", "counted"]
    breaker.succeeded("https://a.test")
    assert [breaker.failed("https://a.test", 0.0)[0] for _ in range(2)] == ["counted", "counted"]
    assert breaker.failed("https://a.test", 0.0) == ("open", 10.0)
    assert breaker.is_open("https://a.test", 5.0) and not breaker.is_open("http://a.test", 5.0)
    assert breaker.failed("https://a.test", 5.0) == ("counted", 0.0)  # sent before it opened


def test_failed_probes_double_the_delay_then_defer() -> None:
    breaker = CircuitBreaker(failures=1, retry_delay=10.0, max_delay=15.0, retry_times=2)
    assert breaker.failed("o", 0.0) == ("open", 10.0)
    assert breaker.failed("o", 10.0) == ("open", 15.0)  # 20, capped
    assert breaker.failed("o", 25.0) == ("open", 15.0)
    assert breaker.failed("o", 40.0) == ("deferred", 0.0)


def test_invalid_settings_fail_naming_them() -> None:
    with pytest.raises(ValueError, match="CIRCUIT_BREAKER_FAILURES"):
        CircuitBreaker(failures=0, retry_delay=1.0, max_delay=1.0, retry_times=1)


def test_the_middleware_holds_then_defers_the_origin_by_signal() -> None:
    crawler = get_crawler(Spider, {"CIRCUIT_BREAKER_ENABLED": True, "CIRCUIT_BREAKER_FAILURES": 2,
                                   "CIRCUIT_BREAKER_RETRY_DELAY": 10.0, "CIRCUIT_BREAKER_RETRY_MAX_DELAY": 60.0,
                                   "CIRCUIT_BREAKER_RETRY_TIMES": 1})
    held, deferred = [], []
    crawler.signals.connect(lambda origin, delay, reason: held.append((origin, delay)), origin_held, weak=False)
    crawler.signals.connect(lambda origin, reason: deferred.append(origin), origin_deferred, weak=False)
    now = [0.0]
    middleware = CircuitBreakerMiddleware.from_crawler(crawler)
    middleware.clock = lambda: now[0]
    request = Request("https://a.test:8443/page")
    for _ in range(2):
        middleware.process_exception(request, Refused(), None)
    assert held == [("https://a.test:8443", 10.0)]
    with pytest.raises(IgnoreRequest):
        middleware.process_request(Request("https://a.test:8443/other"), None)
    middleware.process_request(Request("http://a.test/other"), None)  # another origin passes
    middleware.process_exception(request, ValueError("a bug"), None)  # not a network error: ignored
    now[0] = 10.0
    middleware.process_exception(request, Refused(), None)  # the probe fails
    assert held[-1] == ("https://a.test:8443", 20.0)
    now[0] = 30.0
    middleware.process_exception(request, Refused(), None)
    assert deferred == ["https://a.test:8443"]
    middleware.process_response(request, Response(request.url), None)
    assert not middleware.breaker.is_open("https://a.test:8443", 31.0)
