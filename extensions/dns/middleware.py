"""The address policy before any fetch, and DNS prefetch: a request whose host
resolves to a refused address, or not at all, is refused with an ``IgnoreRequest``;
``host_assigned`` starts a host's lookup early. Stats ``dns/*``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.python.failure import Failure

from extensions.dns.policy import AddressPolicy, describe_refusal, parse_address, policy_from_settings
from extensions.dns.resolver import AddressRefusedError
from extensions.signals import host_assigned, urls_refused

if TYPE_CHECKING:
    from collections.abc import Callable, Coroutine

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.defer import Deferred
    from typing_extensions import Self

    from extensions.resolver import SimpleResolver

logger = logging.getLogger(__name__)

REFUSED_STAT = "dns/refused_private"
PREFETCH_STAT, PREFETCH_FAILED_STAT = "dns/prefetches", "dns/prefetch_failures"
LOGGED_HOSTS_LIMIT = 10000  # refused hosts remembered for log-once


class AddressPolicyMiddleware:
    """Refuses requests to non-public addresses and to names that do not resolve."""

    def __init__(self, resolver: SimpleResolver, policy: AddressPolicy, stats: StatsCollector,
                 send: Callable[..., Any] | None = None):
        self.resolver = resolver
        self.policy = policy
        self.stats = stats
        self.send = send  # the crawler's send_catch_log: refusals go to the frontier
        self.logged_hosts: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Crawler, resolver: SimpleResolver | None = None) -> Self:
        """``resolver``: the installed reactor's unless given (tests run their own reactor)."""
        if resolver is None:
            from twisted.internet import reactor  # noqa: PLC0415 - the installed one
            resolver = reactor.resolver
        middleware = cls(resolver, policy_from_settings(crawler.settings), crawler.stats,
                         crawler.signals.send_catch_log)
        crawler.signals.connect(middleware.prefetch, signal=host_assigned)
        crawler.signals.connect(middleware.publish_stats, signal=signals.spider_idle)
        crawler.signals.connect(middleware.publish_stats, signal=signals.spider_closed)
        return middleware

    def process_request(self, request: Request) -> Coroutine[Any, Any, None] | None:
        host = urlparse_cached(request).hostname
        if not host:
            return None
        if parse_address(host) is not None:  # a literal IP: judged as it is
            self.judge(host, request, host)
            return None
        lookup = self.resolver.getHostByName(host)
        if not lookup.called:
            return self.wait_and_judge(lookup, request, host)
        outcome = lookup.result  # a cache hit: judged now, no await
        lookup.addErrback(lambda _: None)  # handled here
        self.judge(outcome.value if isinstance(outcome, Failure) else outcome, request, host)
        return None

    async def wait_and_judge(self, lookup: Deferred[str], request: Request, host: str) -> None:
        try:
            outcome: Any = await maybe_deferred_to_future(lookup)
        except Exception as err:  # judged below: every failure refuses the request
            outcome = err
        self.judge(outcome, request, host)

    def judge(self, outcome: str | BaseException, request: Request, host: str) -> None:
        """Return if ``outcome`` (an address, or the lookup's error) allows the fetch."""
        if isinstance(outcome, AddressRefusedError):
            self.refuse(request, host, describe_refusal(host, outcome.address, outcome.category),
                        outcome, outcome.category)
        if isinstance(outcome, BaseException):
            logger.error("Ignoring %s: %s", request, outcome)
            raise IgnoreRequest(f"Ignoring {request.url}: {outcome}") from outcome
        category = self.policy.refusal(outcome)
        if category is not None:
            self.refuse(request, host, describe_refusal(host, outcome, category), None, category)

    def refuse(self, request: Request, host: str, reason: str,
               cause: BaseException | None = None, category: str = "private") -> None:
        """Count, log once per host, announce ``urls_refused`` and raise the IgnoreRequest."""
        self.stats.inc_value(REFUSED_STAT)
        if self.send is not None:
            self.send(urls_refused, refusals=[(request.url, f"address/{category}")], request=request)
        if host not in self.logged_hosts:
            if len(self.logged_hosts) >= LOGGED_HOSTS_LIMIT:
                self.logged_hosts.clear()
            self.logged_hosts.add(host)
            logger.warning("Refusing %s: %s; further refusals of %s are only counted (%s)",
                           request, reason, host, REFUSED_STAT)
        raise IgnoreRequest(f"Refused {request.url}: {reason}") from cause

    def prefetch(self, host: str) -> None:
        """Start resolving a host the frontier will fetch soon (literal IPs need none)."""
        if not host or parse_address(host) is not None:
            return
        self.stats.inc_value(PREFETCH_STAT)
        self.resolver.getHostByName(host).addErrback(lambda _: self.stats.inc_value(PREFETCH_FAILED_STAT))

    def publish_stats(self) -> None:
        """Have the resolver bring its stats up to date (CachingResolver counts locally)."""
        publish = getattr(self.resolver, "publish_stats", None)
        if publish is not None:
            publish()
