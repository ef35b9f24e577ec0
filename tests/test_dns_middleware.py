"""AddressPolicyMiddleware with a real resolver and a real DNS server.

Requests go through ``process_request`` as Scrapy's downloader would call
it: a returned coroutine is awaited on the test's own loop, so the slow path
(a lookup still in flight) and the fast path (a cached answer, judged with no
await) are both exercised.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.test import get_crawler

from extensions.dns.middleware import AddressPolicyMiddleware
from extensions.dns.resolver import CachingResolver
from extensions.resolver import parse_hosts
from extensions.signals import host_assigned
from testweb.dnsserver import DnsServer
from testweb.hostsresolver import HostsFileResolver
from tests.loopreactor import LoopReactor, PublishedStats


@pytest.fixture
def loop() -> Iterator[LoopReactor]:
    driver = LoopReactor()
    yield driver
    driver.close()


@pytest.fixture
def server() -> Iterator[DnsServer]:
    with DnsServer() as dns_server:
        yield dns_server


class Setup:
    """A crawler, its stats, our resolver on the test's reactor, and the middleware."""

    def __init__(self, loop: LoopReactor, server: DnsServer, **settings: Any):
        self.loop = loop
        self.crawler = get_crawler(settings_dict={
            "DNS_NAMESERVERS": server.nameserver, "DNS_TIMEOUT": 5, **settings})
        self.resolver = CachingResolver.from_crawler(self.crawler, loop.reactor)
        self.stats = PublishedStats(self.resolver, self.crawler.stats)
        self.middleware = AddressPolicyMiddleware.from_crawler(self.crawler, resolver=self.resolver)

    def fetch(self, url: str) -> tuple[bool, Any]:
        """(waited, outcome): whether process_request had to wait, and its result or error."""
        try:
            pending = self.middleware.process_request(Request(url))
        except IgnoreRequest as err:
            return False, err
        if pending is None:
            return False, None
        try:
            return True, self.loop.run(pending)
        except IgnoreRequest as err:
            return True, err


def test_literal_private_ip_is_refused_and_logged_once_per_host(
        loop: LoopReactor, server: DnsServer, caplog: pytest.LogCaptureFixture) -> None:
    setup = Setup(loop, server)
    with caplog.at_level(logging.WARNING, logger="extensions.dns.middleware"):
        outcomes = [setup.fetch(url)[1] for url in (
            "http://127.0.0.1:8080/a", "http://127.0.0.1:8080/b", "http://[::1]/", "http://10.0.0.5/")]
    assert all(isinstance(outcome, IgnoreRequest) for outcome in outcomes)
    assert "127.0.0.1 is a loopback address" in str(outcomes[0])
    assert setup.stats.get_value("dns/refused_private") == 4
    refusals = [r.getMessage() for r in caplog.records if "Refusing" in r.getMessage()]
    assert len(refusals) == 3  # 127.0.0.1 once, ::1 once, 10.0.0.5 once
    assert setup.stats.get_value("dns/lookups") is None  # literals ask no resolver


def test_literal_public_ip_passes_without_a_lookup(loop: LoopReactor, server: DnsServer) -> None:
    setup = Setup(loop, server)
    assert setup.fetch("http://93.184.216.34/page") == (False, None)
    assert server.total() == 0


def test_name_resolving_to_a_private_address_is_refused_before_the_fetch(
        loop: LoopReactor, server: DnsServer) -> None:
    server.answer("intranet.test", "10.0.0.1")
    setup = Setup(loop, server)
    waited, outcome = setup.fetch("http://intranet.test/admin")
    assert waited and isinstance(outcome, IgnoreRequest)
    assert "intranet.test resolves to 10.0.0.1, a private address" in str(outcome)
    waited, outcome = setup.fetch("http://intranet.test/other")  # from the cache, no await
    assert not waited and isinstance(outcome, IgnoreRequest)
    assert setup.stats.get_value("dns/refused_private") == 2
    assert server.count("intranet.test") == 1


def test_allowed_network_and_allow_private_let_the_request_through(
        loop: LoopReactor, server: DnsServer) -> None:
    server.answer("staging.test", "127.0.0.2")
    server.answer("local.test", "127.0.0.1")
    setup = Setup(loop, server, ALLOWED_ADDRESS_NETWORKS="127.0.0.2/32")
    assert setup.fetch("http://staging.test/") == (True, None)
    assert isinstance(setup.fetch("http://local.test/")[1], IgnoreRequest)
    lifted = Setup(loop, server, ALLOW_PRIVATE_ADDRESSES=True)
    assert lifted.fetch("http://local.test/") == (True, None)
    assert lifted.fetch("http://127.0.0.1/") == (False, None)


def test_unresolvable_name_is_ignored_with_a_per_url_error(
        loop: LoopReactor, server: DnsServer, caplog: pytest.LogCaptureFixture) -> None:
    server.nxdomain("nowhere.test")
    setup = Setup(loop, server)
    with caplog.at_level(logging.ERROR, logger="extensions.dns.middleware"):
        first = setup.fetch("http://nowhere.test/one")[1]
        second = setup.fetch("http://nowhere.test/two")[1]
    assert isinstance(first, IgnoreRequest) and isinstance(second, IgnoreRequest)
    assert "nowhere.test: NXDOMAIN" in str(first)
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert "http://nowhere.test/one" in errors[0] and "NXDOMAIN" in errors[0]
    assert setup.stats.get_value("dns/failures/nxdomain") == 2
    assert setup.stats.get_value("dns/refused_private") is None


def test_host_assigned_prefetches_so_the_fetch_finds_the_answer_cached(
        loop: LoopReactor, server: DnsServer) -> None:
    server.answer("warm.test", "127.0.0.1")
    setup = Setup(loop, server, ALLOW_PRIVATE_ADDRESSES=True)
    setup.crawler.signals.send_catch_log(host_assigned, host="warm.test")
    setup.crawler.signals.send_catch_log(host_assigned, host="127.0.0.1")  # nothing to resolve
    assert setup.stats.get_value("dns/prefetches") == 1
    # wait for the prefetch's query by joining it
    assert setup.loop.outcome(setup.resolver.getHostByName("warm.test")) == "127.0.0.1"
    assert setup.stats.get_value("dns/queries") == 1
    assert setup.fetch("http://warm.test/") == (False, None)  # cached: judged without waiting
    assert server.count("warm.test") == 1


def test_failed_prefetch_is_counted_not_raised(loop: LoopReactor, server: DnsServer) -> None:
    server.nxdomain("dead.test")
    setup = Setup(loop, server)
    setup.crawler.signals.send_catch_log(host_assigned, host="dead.test")
    setup.loop.outcome(setup.resolver.getHostByName("dead.test"))  # joins the prefetch's query
    assert setup.stats.get_value("dns/prefetch_failures") == 1
    assert server.count("dead.test") == 1


def test_answers_of_a_resolver_without_the_policy_are_judged_here(
        loop: LoopReactor, server: DnsServer) -> None:
    hosts = HostsFileResolver(None, CachingResolver.from_crawler(get_crawler(settings_dict={
        "DNS_NAMESERVERS": server.nameserver}), loop.reactor),
        parse_hosts(["10.0.0.1 pinned.test", "93.184.216.34 public.test"]))
    crawler = get_crawler()
    middleware = AddressPolicyMiddleware.from_crawler(crawler, resolver=hosts)
    with pytest.raises(IgnoreRequest, match="pinned.test resolves to 10.0.0.1, a private address"):
        middleware.process_request(Request("http://pinned.test/"))
    assert middleware.process_request(Request("http://public.test/")) is None
    assert crawler.stats.get_value("dns/refused_private") == 1
