"""The pushback policy with numbers, the middleware with a real crawler's
signals, and the frontier's widened politeness: no server, no sleeping."""

from __future__ import annotations

import email.utils
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from extensions import defaults
from extensions.addon import default_settings
from extensions.frontier.politeness import Politeness
from extensions.pushback import Limits, PushbackMiddleware, PushbackPolicy, retry_after
from extensions.robots.middleware import ROBOTS_FETCH
from extensions.signals import origin_deferred, origin_held, politeness_widened

NOW = 1_700_000_000.0  # a wall time


def policy(**overrides: Any) -> PushbackPolicy:
    values = dict(backoff_delay=10.0, max_delay=600.0, max_per_url=100, retry_times=8, widen_after=2,
                  host_delay=2.0, host_delay_factor=2.0, host_max_delay=60.0)
    values.update(overrides)
    return PushbackPolicy(Limits(**values))


def push(rules: PushbackPolicy, url: str, header: str | None = None) -> Any:
    """A pushback of ``url`` at NOW."""
    origin = url[:url.index("/", url.index("//") + 2)]
    return rules.pushed_back(origin, origin.split("//")[1].split(":")[0], url, header, NOW)


# -- Retry-After ---------------------------------------------------------------------
def test_retry_after_in_seconds() -> None:
    assert retry_after("120", NOW) == ("seconds", 120.0)
    assert retry_after(" 0 ", NOW) == ("seconds", 0.0)


def test_retry_after_as_an_http_date_is_seconds_from_now() -> None:
    assert retry_after(email.utils.formatdate(NOW + 90, usegmt=True), NOW) == ("date", 90.0)
    assert retry_after("Tue, 14 Nov 2023 22:15:00 GMT", NOW) == ("date", 100.0)  # NOW + 100
    assert retry_after("Tue, 14 Nov 2023 22:15:00 -0000", NOW) == ("date", 100.0)
    assert retry_after("Tuesday, 14-Nov-23 22:15:00 GMT", NOW) == ("date", 100.0)  # RFC 850 form


def test_a_date_in_the_past_is_no_wait() -> None:
    assert retry_after(email.utils.formatdate(NOW - 30, usegmt=True), NOW) == ("date", 0.0)


@pytest.mark.parametrize("value", ["soon", "-5", "1.5", "²", "Tue, 99 Nov 2023 22:14:20 GMT"])
def test_an_unreadable_retry_after_is_invalid(value: str) -> None:
    assert retry_after(value, NOW) == ("invalid", None)


def test_no_retry_after() -> None:
    assert retry_after(None, NOW) == ("none", None)
    assert retry_after("  ", NOW) == ("none", None)


# -- the pause -----------------------------------------------------------------------
def test_the_pause_is_the_retry_after_capped() -> None:
    rules = policy(max_delay=600.0)
    assert push(rules, "http://a.test/", "30").pause == 30.0
    assert push(rules, "http://b.test/", "86400").pause == 600.0
    date = email.utils.formatdate(NOW + 7200, usegmt=True)
    assert push(rules, "http://c.test/", date).pause == 600.0


def test_without_retry_after_the_pause_doubles_in_a_row_up_to_the_cap() -> None:
    rules = policy(backoff_delay=10.0, max_delay=100.0)
    pauses = [push(rules, "http://a.test/", None).pause for _ in range(6)]
    assert pauses == [10.0, 20.0, 40.0, 80.0, 100.0, 100.0]


def test_an_invalid_retry_after_backs_off_as_none() -> None:
    rules = policy(backoff_delay=10.0)
    verdicts = [push(rules, "http://a.test/", "soon") for _ in range(2)]
    assert [(v.source, v.pause) for v in verdicts] == [("invalid", 10.0), ("invalid", 20.0)]


def test_another_answer_starts_the_back_off_again() -> None:
    rules = policy(backoff_delay=10.0)
    push(rules, "http://a.test/", None)
    push(rules, "http://a.test/", None)
    rules.answered("http://a.test", "http://a.test/")
    assert push(rules, "http://a.test/", None).pause == 10.0


def test_origins_back_off_apart() -> None:
    rules = policy(backoff_delay=10.0)
    push(rules, "https://a.test/", None)
    assert push(rules, "http://a.test/", None).pause == 10.0


def test_too_many_in_a_row_defers_the_origin() -> None:
    rules = policy(retry_times=3)
    verdicts = [push(rules, f"http://a.test/{n}", "1") for n in range(4)]
    assert [v.deferred for v in verdicts] == [False, False, False, True]
    assert verdicts[-1].in_a_row == 4


def test_a_url_that_keeps_pushing_back_is_handed_on_after_its_limit() -> None:
    rules = policy(max_per_url=3)
    verdicts = [push(rules, "http://a.test/broken", None) for _ in range(4)]
    assert [v is None for v in verdicts] == [False, False, False, True]
    assert push(rules, "http://a.test/broken", None) is not None  # a retry of it starts again
    rules.answered("http://a.test", "http://a.test/other")  # another URL's answer keeps its count
    assert [push(rules, "http://a.test/broken", None) is None for _ in range(3)] == [False, False, True]


# -- the host's widened delay --------------------------------------------------------
def test_the_host_delay_widens_from_the_second_url_and_doubles_to_the_cap() -> None:
    rules = policy(widen_after=2, host_delay=2.0, host_delay_factor=2.0, host_max_delay=10.0)
    delays = [push(rules, f"http://a.test/{n}", "1").host_delay for n in range(6)]
    assert delays == [None, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_one_urls_repeats_widen_nothing() -> None:
    rules = policy(widen_after=2, max_per_url=5)
    assert [push(rules, "http://a.test/broken", "1").host_delay for _ in range(5)] == [None] * 5
    assert push(rules, "http://a.test/busy", "1").host_delay == 2.0


def test_the_widening_counts_the_hosts_urls_even_after_other_answers() -> None:
    rules = policy(widen_after=2, host_delay=2.0)
    push(rules, "http://a.test/", "1")
    rules.answered("http://a.test", "http://a.test/")
    assert push(rules, "https://a.test/x", "1").host_delay == 2.0
    assert push(rules, "http://b.test/", "1").host_delay is None


@pytest.mark.parametrize("bad", [dict(backoff_delay=-1.0), dict(retry_times=-1), dict(widen_after=0),
                                 dict(max_per_url=0), dict(host_delay_factor=0.5), dict(host_max_delay=-2.0)])
def test_invalid_settings_fail_naming_them(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="PUSHBACK_"):
        policy(**bad)


def test_politeness_keeps_the_widened_delay_as_a_floor_of_the_gap() -> None:
    politeness = Politeness(delay=0.5)
    politeness.started("a.test", 0.0)
    politeness.finished("a.test", 10.0, 0.1)
    assert politeness.ready_at("a.test") == 10.5
    politeness.widen("a.test", 4.0)
    assert politeness.ready_at("a.test") == 14.0  # the gap already running is widened
    assert politeness.rate_limited("a.test")
    politeness.widen("a.test", 2.0)  # a narrower one changes nothing
    politeness.started("a.test", 14.0)
    assert politeness.finished("a.test", 20.0, 0.1) == 24.0
    politeness.set_crawl_delay("a.test", 9.0)  # a longer Crawl-delay wins
    assert politeness.gap("a.test", 0.0) == 9.0
    assert politeness.gap("b.test", 0.0) == 0.5


# -- the middleware, on a crawler's signals ----------------------------------------------
class Heard:
    """What the middleware announced."""

    def __init__(self, crawler: Any) -> None:
        self.held: list[tuple[str, float, str, Any]] = []
        self.widened: list[tuple[str, float]] = []
        self.deferred: list[tuple[str, str]] = []
        crawler.signals.connect(self.on_held, origin_held)
        crawler.signals.connect(self.on_widened, politeness_widened)
        crawler.signals.connect(self.on_deferred, origin_deferred)

    def on_held(self, origin: str, delay: float, reason: str, request: Any) -> None:
        self.held.append((origin, delay, reason, request))

    def on_widened(self, origin: str, delay: float) -> None:
        self.widened.append((origin, delay))

    def on_deferred(self, origin: str, reason: str) -> None:
        self.deferred.append((origin, reason))


def middleware(**settings: Any) -> tuple[PushbackMiddleware, Heard, Any]:
    crawler = get_crawler(settings_dict={**default_settings(), **settings})
    crawler.stats.open_spider()
    mw = PushbackMiddleware.from_crawler(crawler)
    mw.wall_clock = lambda: NOW
    return mw, Heard(crawler), crawler.stats


def response(url: str, status: int, retry: str | None = None) -> HtmlResponse:
    headers = {} if retry is None else {"Retry-After": retry}
    return HtmlResponse(url, status=status, headers=headers, body=b"slow down")


def test_a_429_holds_the_origin_and_goes_back_to_the_frontier() -> None:
    mw, heard, stats = middleware()
    request = Request("http://a.test:8080/x?y=1")
    with pytest.raises(IgnoreRequest):
        mw.process_response(request, response(request.url, 429, "30"))
    assert heard.held == [("http://a.test:8080", 30.0, "pushback: 429 (Retry-After, 30.0s)", request)]
    assert stats.get_value("pushback/responses") == stats.get_value("pushback/status/429") == 1
    assert stats.get_value("pushback/retry_after/seconds") == 1
    assert stats.get_value("pushback/pause_seconds") == 30.0


def test_a_503_without_retry_after_backs_off_and_a_second_url_widens_the_host() -> None:
    mw, heard, stats = middleware(PUSHBACK_BACKOFF_DELAY=5.0, PUSHBACK_HOST_DELAY=3.0)
    for url in ("http://a.test/", "http://a.test/b"):
        with pytest.raises(IgnoreRequest):
            mw.process_response(Request(url), response(url, 503))
    assert [delay for _, delay, _, _ in heard.held] == [5.0, 10.0]
    assert heard.widened == [("http://a.test", 3.0)]
    assert stats.get_value("pushback/retry_after/none") == 2
    assert stats.get_value("pushback/hosts_slowed") == stats.get_value("pushback/widened") == 1
    assert stats.get_value("pushback/host_delay_max") == 3.0


def test_other_statuses_and_robots_fetches_pass_and_another_answer_resets_the_back_off() -> None:
    mw, heard, _ = middleware(PUSHBACK_BACKOFF_DELAY=5.0)
    with pytest.raises(IgnoreRequest):
        mw.process_response(Request("http://a.test/"), response("http://a.test/", 429))
    ok = response("http://a.test/b", 200)
    assert mw.process_response(Request("http://a.test/b"), ok) is ok
    robots = Request("http://a.test/robots.txt", meta={ROBOTS_FETCH: True})
    busy = response(robots.url, 503)
    assert mw.process_response(robots, busy) is busy
    for status in (500, 404):
        answer = response("http://a.test/c", status)
        assert mw.process_response(Request("http://a.test/c"), answer) is answer
    with pytest.raises(IgnoreRequest):
        mw.process_response(Request("http://a.test/"), response("http://a.test/", 429))
    assert [delay for _, delay, _, _ in heard.held] == [5.0, 5.0]


def test_too_many_pushbacks_in_a_row_defer_the_origin_and_its_request() -> None:
    mw, heard, stats = middleware(PUSHBACK_RETRY_TIMES=1)
    for url in ("http://a.test/", "http://a.test/b"):
        with pytest.raises(IgnoreRequest):
            mw.process_response(Request(url), response(url, 429, "1"))
    assert len(heard.held) == 2  # the request is held (back to the frontier), then deferred
    assert heard.deferred == [("http://a.test", "pushback: 2 answers 429 in a row")]
    assert stats.get_value("pushback/deferred") == 1


def test_a_broken_page_goes_to_the_spider_after_its_pushbacks_without_more_retries() -> None:
    mw, heard, stats = middleware(PUSHBACK_MAX_PER_URL=2)
    request = Request("http://a.test/broken")
    for _ in range(2):
        with pytest.raises(IgnoreRequest):
            mw.process_response(request, response(request.url, 503))
    answer = response(request.url, 503)
    assert mw.process_response(request, answer) is answer
    assert request.meta["dont_retry"] and stats.get_value("pushback/handed_on") == 1
    assert len(heard.held) == 2 and stats.get_value("pushback/responses") == 2


def test_a_urls_count_ends_with_its_own_answer_even_after_its_origins_other_answers() -> None:
    mw, heard, _ = middleware(PUSHBACK_MAX_PER_URL=1)
    with pytest.raises(IgnoreRequest):
        mw.process_response(Request("http://a.test/x"), response("http://a.test/x", 429))
    mw.process_response(Request("http://a.test/y"), response("http://a.test/y", 200))  # the origin answers
    mw.process_response(Request("http://a.test/x"), response("http://a.test/x", 200))  # then the URL
    with pytest.raises(IgnoreRequest):  # a new pushback of it, its first again: obeyed
        mw.process_response(Request("http://a.test/x"), response("http://a.test/x", 429))
    assert len(heard.held) == 2


def test_switched_off_and_bad_statuses() -> None:
    with pytest.raises(NotConfigured):
        middleware(PUSHBACK_ENABLED=False)
    with pytest.raises(ValueError, match="PUSHBACK_STATUSES"):
        middleware(PUSHBACK_STATUSES=[200])


def test_defaults_give_a_first_pause_and_a_cap_in_order() -> None:
    assert defaults.PUSHBACK_STATUSES == [429, 503]
    assert 0 < defaults.PUSHBACK_BACKOFF_DELAY < defaults.PUSHBACK_MAX_DELAY
    assert 0 < defaults.PUSHBACK_HOST_DELAY <= defaults.PUSHBACK_HOST_MAX_DELAY
