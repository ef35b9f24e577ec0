"""robots.txt exclusion by RFC 9309, in place of Scrapy's ``RobotsTxtMiddleware`` (same
``ROBOTSTXT_OBEY``): one fetch per origin, rules in a bounded expiring LRU, an unreachable
robots.txt holds its origin and is retried with back-off."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from twisted.internet import defer, reactor, task

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object

from extensions.robots.rules import Kind, RobotsRules, decode_body, kind_of_status, product_token
from extensions.signals import origin_deferred, origin_held, request_excluded, robots_rules_parsed
from extensions import defaults
from extensions.defaults import checked
from extensions.urls.recent import TwoGenerationCache

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

#: origins remembered for log-once, and sitemap URLs already announced; each set
#: starts again empty at this size (memory does not grow with the hosts)
REMEMBERED_LIMIT = 10_000
ROBOTS_FETCH = "robotstxt_fetch"  # meta key: this request fetches a robots.txt


class RobotsMiddleware:
    """Fetch, cache and apply each origin's robots.txt before its pages."""

    DOWNLOAD_PRIORITY = 1000

    def __init__(self, crawler: Crawler, clock: Callable[[], float] = time.monotonic) -> None:
        settings = crawler.settings
        if not settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        self.crawler = crawler
        self.stats = crawler.stats
        self.clock = clock
        self.token = product_token(settings.get("ROBOTSTXT_USER_AGENT"), settings.get("USER_AGENT"))
        #: origin -> its RobotsRules
        self.cache = TwoGenerationCache(checked(settings, "ROBOTSTXT_CACHE_SIZE", lambda value: value >= 1, "at least 1", int))
        self.ttl = settings.getfloat("ROBOTSTXT_CACHE_TTL", defaults.ROBOTSTXT_CACHE_TTL)
        self.max_size = settings.getint("ROBOTSTXT_MAX_SIZE", defaults.ROBOTSTXT_MAX_SIZE)
        self.max_redirects = settings.getint("ROBOTSTXT_MAX_REDIRECTS", defaults.ROBOTSTXT_MAX_REDIRECTS)
        self.retry_delay = settings.getfloat("ROBOTSTXT_RETRY_DELAY", defaults.ROBOTSTXT_RETRY_DELAY)
        self.retry_max_delay = settings.getfloat("ROBOTSTXT_RETRY_MAX_DELAY", defaults.ROBOTSTXT_RETRY_MAX_DELAY)
        self.retry_times = settings.getint("ROBOTSTXT_RETRY_TIMES", defaults.ROBOTSTXT_RETRY_TIMES)
        self.unreachable_period = settings.getfloat("ROBOTSTXT_UNREACHABLE_PERIOD", defaults.ROBOTSTXT_UNREACHABLE_PERIOD)
        self.network_errors = tuple(load_object(path) if isinstance(path, str) else path
                                    for path in settings.getlist("RETRY_EXCEPTIONS"))
        self.deferred: dict[str, str] = {}  # origin -> reason, for this run
        self.unreachable_reasons: dict[str, str] = {}  # origin -> the last failure, while unreachable
        self.max_crawl_delay = settings.getfloat("ROBOTSTXT_MAX_CRAWL_DELAY", defaults.ROBOTSTXT_MAX_CRAWL_DELAY)
        self.sitemap_seeds = settings.getbool("ROBOTSTXT_SITEMAP_SEEDS", defaults.ROBOTSTXT_SITEMAP_SEEDS)
        self._pending: dict[str, defer.Deferred[RobotsRules]] = {}
        # origin -> when its host may be fetched after its robots.txt (the frontier's answer)
        self._polite_until: dict[str, float] = {}
        self._logged: set[str] = set()
        self.sitemaps: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsMiddleware:
        return cls(crawler)

    # -- the decision ---------------------------------------------------------
    async def process_request(self, request: Request, spider: Any = None) -> None:
        """Let ``request`` through, or raise IgnoreRequest (excluded, postponed)."""
        parts = urlparse_cached(request)
        if request.meta.get("dont_obey_robotstxt") or parts.scheme not in ("http", "https"):
            return
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin in self.deferred:
            self.stats.inc_value("robotstxt/deferred_requests")
            raise IgnoreRequest(f"{origin} deferred: {self.deferred[origin]}")
        rules = self.cache.get(origin)
        fetched = False
        if rules is None or rules.expires <= self.clock():
            rules = await self._rules_for(origin, rules)
            fetched = True
        else:
            self.stats.inc_value("robotstxt/cache_hits")
        if rules.kind is Kind.UNREACHABLE:
            self._hold(origin, rules, request)
        if not rules.allowed(request.url):
            self.stats.inc_value("robotstxt/forbidden")
            logger.debug("Forbidden by robots.txt: %s", request)
            self.crawler.signals.send_catch_log(request_excluded, request=request, reason="robotstxt")
            raise IgnoreRequest("Forbidden by robots.txt")
        if fetched:
            await self._polite_pause(origin)

    def _hold(self, origin: str, rules: RobotsRules, request: Request) -> None:
        """The robots.txt is unreachable: hold the origin or, after the last retry, defer it."""
        if rules.failures > self.retry_times:
            reason = f"robots.txt unreachable after {rules.failures} tries ({self.unreachable_reasons.pop(origin, 'unknown')})"
            self.deferred[origin] = reason
            self.stats.inc_value("robotstxt/deferred_origins")
            self.crawler.signals.send_catch_log(origin_deferred, origin=origin, reason=reason)
            raise IgnoreRequest(f"{origin} deferred: {reason}")
        wait = max(0.0, rules.expires - self.clock())
        receivers = self.crawler.signals.send_catch_log(
            origin_held, origin=origin, delay=wait, request=request,
            reason=f"robots.txt unreachable ({self.unreachable_reasons.get(origin, 'unknown')})")
        if receivers:
            self.stats.inc_value("robotstxt/held")
            raise IgnoreRequest(f"robots.txt of {origin} unreachable; retrying in {wait:.0f}s")
        self.stats.inc_value("robotstxt/unreachable_dropped")
        self._log_once(origin, "robots.txt of %s unreachable and no frontier holds its URLs; "
                               "dropping its requests", origin)
        raise IgnoreRequest(f"robots.txt of {origin} unreachable")

    async def _polite_pause(self, origin: str) -> None:
        """After a robots.txt fetch, wait until the time the receivers of ``robots_rules_parsed`` answered."""
        wait = self._polite_until.get(origin, 0.0) - self.clock()
        if wait > 0:  # every page that waited on this robots.txt reads it before any wakes
            await maybe_deferred_to_future(task.deferLater(reactor, wait, lambda: None))
        self._polite_until.pop(origin, None)

    # -- fetching (single flight per origin) ---------------------------------
    async def _rules_for(self, origin: str, previous: RobotsRules | None) -> RobotsRules:
        pending = self._pending.get(origin)
        if pending is not None:
            self.stats.inc_value("robotstxt/waited")
            waiter: defer.Deferred[RobotsRules] = defer.Deferred()
            pending.addBoth(lambda result: (waiter.callback(result), result)[1])
            return await maybe_deferred_to_future(waiter)
        pending = self._pending[origin] = defer.Deferred()
        try:
            rules = await self._fetch(origin, previous)
        except self.network_errors as err:  # RFC 9309 2.3.1.4: unreachable
            rules = self._unreachable(origin, previous, f"{type(err).__name__}: {err}")
        except BaseException as err:
            pending.errback(err)  # a bug: the waiters fail with it, and so do we
            raise
        finally:
            del self._pending[origin]
        self.cache.add(origin, rules)
        self.stats.set_value("robotstxt/cache_size", len(self.cache))
        self.stats.set_value("robotstxt/cache_evictions", self.cache.evictions)
        try:
            await self._apply(origin, rules)
        finally:
            pending.callback(rules)
        return rules

    async def _fetch(self, origin: str, previous: RobotsRules | None) -> RobotsRules:
        robots = Request(
            f"{origin}/robots.txt",
            priority=self.DOWNLOAD_PRIORITY,
            callback=NO_CALLBACK,
            dont_filter=True,
            meta={"dont_obey_robotstxt": True, "dont_retry": True, ROBOTS_FETCH: True,
                  "redirect_ttl": self.max_redirects},
        )
        self.stats.inc_value("robotstxt/request_count")
        try:
            response = await self.crawler.engine.download_async(robots)
        except IgnoreRequest as err:  # too many redirects, or refused: unavailable
            self.stats.inc_value("robotstxt/unavailable")
            logger.debug("robots.txt of %s unavailable (%s): no restrictions", origin, err)
            return RobotsRules(Kind.UNAVAILABLE, self.token, self.clock() + self.ttl)
        return self._from_response(origin, previous, response)

    def _from_response(self, origin: str, previous: RobotsRules | None, response: Response) -> RobotsRules:
        status = response.status
        self.stats.inc_value("robotstxt/response_count")
        self.stats.inc_value(f"robotstxt/response_status_count/{status}")
        kind = kind_of_status(status)
        now = self.clock()
        if kind is Kind.UNREACHABLE:
            return self._unreachable(origin, previous, f"status {status}")
        if kind is Kind.UNAVAILABLE:
            self.stats.inc_value("robotstxt/unavailable")
            return RobotsRules(Kind.UNAVAILABLE, self.token, now + self.ttl, status=status)
        content_type = response.headers.get(b"Content-Type", b"").decode("latin-1") or None
        body = response.body
        if len(body) > self.max_size:
            self.stats.inc_value("robotstxt/truncated")
        text = decode_body(body, content_type, self.max_size)
        if body and not text:
            self.stats.inc_value("robotstxt/not_text")
        try:
            return RobotsRules.parse(text, self.token, now + self.ttl, status)
        except Exception as err:  # noqa: BLE001 - a parser bug must not stop the crawl
            self.stats.inc_value("robotstxt/parse_errors")
            self._log_once(origin, "Cannot parse robots.txt of %s (%s): no restrictions", origin, err)
            return RobotsRules(Kind.UNAVAILABLE, self.token, now + self.ttl, status=status)

    def _unreachable(self, origin: str, previous: RobotsRules | None, reason: str) -> RobotsRules:
        """Disallow for now and retry with back-off, up to ``ROBOTSTXT_UNREACHABLE_PERIOD``."""
        now = self.clock()
        self.unreachable_reasons[origin] = reason
        since = previous.unreachable_since if previous is not None else None
        since = now if since is None else since
        failures = (previous.failures if previous is not None else 0) + 1
        self.stats.inc_value("robotstxt/unreachable")
        if now - since >= self.unreachable_period:
            self.stats.inc_value("robotstxt/unreachable_expired")
            self._log_once(origin, "robots.txt of %s unreachable for %.0fs (%s): no restrictions now",
                           origin, now - since, reason)
            return RobotsRules(Kind.UNAVAILABLE, self.token, now + self.ttl,
                               unreachable_since=since, failures=failures)
        delay = min(self.retry_delay * 2 ** (failures - 1), self.retry_max_delay)
        logger.info("robots.txt of %s unreachable (%s): its URLs wait, retry in %.1fs",
                    origin, reason, delay)
        return RobotsRules(Kind.UNREACHABLE, self.token, now + delay,
                           unreachable_since=since, failures=failures)

    # -- what a fetched robots.txt gives the rest of the crawler -------------
    async def _apply(self, origin: str, rules: RobotsRules) -> None:
        if rules.kind is not Kind.UNREACHABLE:
            self.unreachable_reasons.pop(origin, None)
            delay = rules.crawl_delay()
            if delay is not None:
                self.stats.inc_value("robotstxt/crawl_delays")
                delay = min(delay, self.max_crawl_delay)
            answers = self.crawler.signals.send_catch_log(robots_rules_parsed, origin=origin, crawl_delay=delay)
            waits = [result for _, result in answers if isinstance(result, (int, float))]
            if waits and max(waits) > 0:
                self._polite_until[origin] = self.clock() + max(waits)
        new = [url for url in rules.sitemaps if url not in self.sitemaps]
        if not new:
            return
        if len(self.sitemaps) + len(new) > REMEMBERED_LIMIT:
            self.sitemaps.clear()  # one more announcement costs the frontier a duplicate, no more
        self.sitemaps.update(new)
        self.stats.inc_value("robotstxt/sitemaps", len(new))
        logger.info("robots.txt of %s lists sitemaps: %s", origin, ", ".join(new))
        spider = self.crawler.spider
        if self.sitemap_seeds and hasattr(spider, "sitemap_requests"):
            for request in spider.sitemap_requests(new):
                self.crawler.engine.crawl(request)

    def _log_once(self, origin: str, message: str, *args: Any) -> None:
        if origin not in self._logged:
            if len(self._logged) >= REMEMBERED_LIMIT:
                self._logged.clear()
            self._logged.add(origin)
            logger.warning(message, *args)
