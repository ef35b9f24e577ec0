"""CachingResolver against a real DNS server (dnslib on loopback UDP).

Lookups go through a real Twisted reactor on a private asyncio loop; the
server counts every query it receives, so "sent no query" is observed on
the wire. Expiry is tested by moving an injected clock, never by waiting.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.resolver import dnscache as scrapy_dnscache
from scrapy.utils.test import get_crawler
from twisted.internet.error import DNSLookupError

from extensions.dns.resolver import FLUSH_EVERY, AddressRefusedError, CachingResolver, DnsLookupError
from testweb.dnsserver import DnsServer
from tests.loopreactor import LoopReactor, PublishedStats


class Clock:
    """A clock the test moves."""

    def __init__(self, now: float = 1000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def loop() -> Iterator[LoopReactor]:
    driver = LoopReactor()
    yield driver
    driver.close()


@pytest.fixture
def server() -> Iterator[DnsServer]:
    with DnsServer() as dns_server:
        yield dns_server


def build(loop: LoopReactor, server: DnsServer, clock: Any = time.monotonic,
          **settings: Any) -> tuple[CachingResolver, PublishedStats]:
    """A resolver from crawler settings (as Scrapy builds it) and that crawler's stats."""
    crawler = get_crawler(settings_dict={
        "DNS_NAMESERVERS": [server.nameserver], "ALLOW_PRIVATE_ADDRESSES": True,
        "DNS_TIMEOUT": 5, **settings})
    resolver = CachingResolver.from_crawler(crawler, loop.reactor, clock=clock)
    return resolver, PublishedStats(resolver, crawler.stats)


def test_concurrent_lookups_send_one_query_per_name(loop: LoopReactor, server: DnsServer) -> None:
    names = [f"n{i}.test" for i in range(30)]
    for i, name in enumerate(names):
        server.answer(name, f"192.0.2.{i + 1}")
    resolver, stats = build(loop, server)
    # 10 callers per name, all waiting before the first answer arrives
    results = loop.outcomes([resolver.getHostByName(name) for _ in range(10) for name in names])
    assert results == [f"192.0.2.{i + 1}" for _ in range(10) for i in range(30)]
    assert server.total() == 30 and all(server.count(name) == 1 for name in names)
    assert stats.get_value("dns/queries") == 30
    assert stats.get_value("dns/lookups") == 300
    # within the TTL every name is answered from the cache
    again = loop.outcomes([resolver.getHostByName(name.upper()) for name in names])
    assert again == [f"192.0.2.{i + 1}" for i in range(30)]
    assert server.total() == 30
    assert stats.get_value("dns/cache_hits") == 30


@pytest.mark.parametrize("literal", ["127.0.0.1", "::1"])
def test_a_literal_address_is_its_own_answer_without_a_query(
        loop: LoopReactor, server: DnsServer, literal: str) -> None:
    """Twisted asks the installed resolver even for ``connectTCP("127.0.0.1")``:
    answering with a query made every URL of a literal-address host fail
    ("no results for hostname lookup")."""
    resolver, _ = build(loop, server)
    assert loop.outcome(resolver.getHostByName(literal)) == literal
    assert server.total() == 0


def test_a_literal_address_is_judged_by_the_address_policy(loop: LoopReactor, server: DnsServer) -> None:
    resolver, _ = build(loop, server, ALLOW_PRIVATE_ADDRESSES=False)
    outcome = loop.outcome(resolver.getHostByName("127.0.0.1"))
    assert isinstance(outcome, AddressRefusedError) and outcome.category == "loopback"


def assert_kept_for(loop: LoopReactor, resolver: CachingResolver, server: DnsServer,
                    clock: Clock, name: str, seconds: float) -> list[Any]:
    """The answer for ``name`` is cached exactly ``seconds``: asked once until then, again after."""
    outcomes = [loop.outcome(resolver.getHostByName(name))]
    clock.advance(seconds - 1)
    outcomes.append(loop.outcome(resolver.getHostByName(name)))
    assert server.count(name) == 1
    clock.advance(2)
    outcomes.append(loop.outcome(resolver.getHostByName(name)))
    assert server.count(name) == 2
    return outcomes


def test_answer_is_queried_again_once_its_ttl_runs_out(loop: LoopReactor, server: DnsServer) -> None:
    server.answer("ttl.test", "192.0.2.1", ttl=120)
    clock = Clock()
    resolver, _ = build(loop, server, clock)
    first = loop.outcome(resolver.getHostByName("ttl.test"))
    clock.advance(119)
    assert first == loop.outcome(resolver.getHostByName("ttl.test")) == "192.0.2.1"
    assert server.count("ttl.test") == 1
    server.answer("ttl.test", "192.0.2.2", ttl=120)
    clock.advance(2)
    assert loop.outcome(resolver.getHostByName("ttl.test")) == "192.0.2.2"
    assert server.count("ttl.test") == 2


@pytest.mark.parametrize(("record_ttl", "settings", "kept"), [
    (1, {"DNS_MIN_TTL": 60}, 60),
    (7 * 86400, {"DNS_MAX_TTL": 3600}, 3600),
    (7 * 86400, {}, 86400),  # the default DNS_MAX_TTL
])
def test_record_ttl_is_clamped_to_min_and_max(loop: LoopReactor, server: DnsServer, record_ttl: int,
                                              settings: dict[str, Any], kept: int) -> None:
    server.answer("clamped.test", "192.0.2.1", ttl=record_ttl)
    clock = Clock()
    resolver, _ = build(loop, server, clock, **settings)
    assert_kept_for(loop, resolver, server, clock, "clamped.test", kept)


def test_nxdomain_is_a_clear_error_cached_for_the_soa_minimum(
        loop: LoopReactor, server: DnsServer) -> None:
    server.nxdomain("gone.test", soa_minimum=90)
    clock = Clock()
    resolver, stats = build(loop, server, clock)
    errors = assert_kept_for(loop, resolver, server, clock, "gone.test", 90)
    for error in errors:
        assert isinstance(error, DnsLookupError) and isinstance(error, DNSLookupError)
        assert error.reason == "nxdomain" and error.host == "gone.test"
        assert "gone.test" in str(error) and "NXDOMAIN" in str(error)
    assert stats.get_value("dns/failures/nxdomain") == 3
    assert stats.get_value("dns/failures") == 3


def test_nxdomain_without_soa_is_cached_for_the_negative_ttl(
        loop: LoopReactor, server: DnsServer) -> None:
    clock = Clock()  # unknown names are NXDOMAIN without an SOA
    resolver, _ = build(loop, server, clock, DNS_NEGATIVE_TTL=200)
    assert_kept_for(loop, resolver, server, clock, "nobody.test", 200)


def test_dead_nameserver_times_out_within_the_bound(loop: LoopReactor, server: DnsServer) -> None:
    server.dead = True
    resolver, stats = build(loop, server, DNS_TIMEOUT=0.6, DNS_RETRIES=2)
    started = time.monotonic()
    error = loop.outcome(resolver.getHostByName("silent.test"), timeout=5)
    elapsed = time.monotonic() - started
    assert isinstance(error, DnsLookupError) and error.reason == "timeout"
    assert "silent.test" in str(error) and "timeout" in str(error)
    assert 0.5 <= elapsed < 1.5, elapsed
    assert server.count("silent.test") == 3  # the first try and DNS_RETRIES=2 more
    assert stats.get_value("dns/failures/timeout") == 1
    # a timeout is not an answer: the next lookup asks again
    loop.outcome(resolver.getHostByName("silent.test"), timeout=5)
    assert server.count("silent.test") == 6


def test_servfail_is_a_clear_error_and_not_cached(loop: LoopReactor, server: DnsServer) -> None:
    server.servfail("broken.test")
    resolver, stats = build(loop, server)
    error = loop.outcome(resolver.getHostByName("broken.test"))
    assert isinstance(error, DnsLookupError) and error.reason == "servfail"
    assert "broken.test" in str(error) and "SERVFAIL" in str(error)
    loop.outcome(resolver.getHostByName("broken.test"))
    assert server.count("broken.test") == 2
    assert stats.get_value("dns/failures/servfail") == 2


def test_least_recently_used_name_is_evicted_at_the_bound(
        loop: LoopReactor, server: DnsServer) -> None:
    server.answer_suffix(".test", "192.0.2.7")
    resolver, _ = build(loop, server, DNS_CACHE_SIZE=3)
    for name in ("a.test", "b.test", "c.test", "a.test", "d.test"):
        loop.outcome(resolver.getHostByName(name))
    assert len(resolver.cache) == 3
    assert [server.count(n) for n in ("a.test", "b.test", "c.test", "d.test")] == [1, 1, 1, 1]
    loop.outcome(resolver.getHostByName("b.test"))  # evicted: a was used after it
    loop.outcome(resolver.getHostByName("a.test"))  # kept
    assert server.count("b.test") == 2 and server.count("a.test") == 1


def test_hosts_file_answers_before_dns(loop: LoopReactor, server: DnsServer, tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("192.0.2.50 pinned.test\nnot-an-address bogus.test\n")
    server.answer("pinned.test", "192.0.2.99")
    server.answer("other.test", "192.0.2.98")
    resolver, stats = build(loop, server, DNS_HOSTS=str(hosts))
    assert loop.outcome(resolver.getHostByName("Pinned.Test")) == "192.0.2.50"
    assert loop.outcome(resolver.getHostByName("other.test")) == "192.0.2.98"
    assert server.count("pinned.test") == 0 and server.count("other.test") == 1
    assert stats.get_value("dns/hosts_file/hit") == 1
    assert stats.get_value("dns/hosts_file/malformed") == 1


def test_cname_chain_is_followed_with_the_shortest_ttl(
        loop: LoopReactor, server: DnsServer) -> None:
    server.answer("target.test", "192.0.2.60", ttl=3000)
    server.alias("www.test", "target.test", ttl=100)  # target's A in the same answer
    server.alias("cdn.test", "target.test", ttl=3000, with_target=False)  # asked separately
    clock = Clock()
    resolver, _ = build(loop, server, clock)
    assert loop.outcome(resolver.getHostByName("www.test")) == "192.0.2.60"
    assert loop.outcome(resolver.getHostByName("cdn.test")) == "192.0.2.60"
    assert server.count("target.test") == 1  # only for cdn.test
    clock.advance(101)
    loop.outcome(resolver.getHostByName("www.test"))
    loop.outcome(resolver.getHostByName("cdn.test"))
    assert server.count("www.test") == 2 and server.count("cdn.test") == 1


def test_address_policy_refuses_private_answers(loop: LoopReactor, server: DnsServer) -> None:
    server.answer("inside.test", "10.1.2.3")
    server.answer("loop.test", "127.0.0.1")
    server.answer("public.test", "93.184.216.34")
    resolver, stats = build(loop, server, ALLOW_PRIVATE_ADDRESSES=False,
                            ALLOWED_ADDRESS_NETWORKS="10.1.0.0/16")
    assert loop.outcome(resolver.getHostByName("public.test")) == "93.184.216.34"
    assert loop.outcome(resolver.getHostByName("inside.test")) == "10.1.2.3"  # allowed network
    error = loop.outcome(resolver.getHostByName("loop.test"))
    assert isinstance(error, AddressRefusedError) and isinstance(error, DNSLookupError)
    assert "loop.test resolves to 127.0.0.1, a loopback address" in str(error)
    # the answer is cached; the policy is applied to cached answers too
    assert isinstance(loop.outcome(resolver.getHostByName("loop.test")), AddressRefusedError)
    assert server.count("loop.test") == 1
    assert stats.get_value("dns/failures/private_address") == 2


def test_stats_count_lookups_and_time_the_slow_ones(loop: LoopReactor, server: DnsServer) -> None:
    server.answer_suffix(".test", "192.0.2.8")
    server.delay("slow.test", 0.2)
    server.nxdomain("missing.test")
    resolver, stats = build(loop, server)
    names = [f"f{i}.test" for i in range(8)] + ["slow.test", "missing.test"]
    loop.outcomes([resolver.getHostByName(name) for name in names])
    loop.outcomes([resolver.getHostByName(name) for name in names])
    assert stats.get_value("dns/lookups") == 20
    assert stats.get_value("dns/queries") == 10
    assert stats.get_value("dns/cache_hits") == 10
    assert stats.get_value("dns/failures") == 2
    assert stats.get_value("dns/failures/nxdomain") == 2
    # 10 timed lookups, one of them at least 200 ms: p99 is that one
    assert stats.get_value("dns/lookup_time_p99_ms") >= 200
    assert 20 <= stats.get_value("dns/lookup_time_mean_ms") < 200


def test_cache_hits_reach_the_stats_without_a_stats_call_per_lookup(
        loop: LoopReactor, server: DnsServer) -> None:
    server.answer("hot.test", "192.0.2.5")
    resolver, stats = build(loop, server)
    loop.outcome(resolver.getHostByName("hot.test"))  # the query's end adds the counts
    assert stats.collector.get_value("dns/lookups") == 1
    for _ in range(FLUSH_EVERY - 1):
        resolver.getHostByName("hot.test")
    assert stats.collector.get_value("dns/cache_hits") is None  # counted locally so far
    resolver.getHostByName("hot.test")  # the FLUSH_EVERY-th since the last flush adds them
    assert stats.collector.get_value("dns/lookups") == 1 + FLUSH_EVERY
    assert stats.collector.get_value("dns/cache_hits") == FLUSH_EVERY - 1
    assert stats.get_value("dns/cache_hits") == FLUSH_EVERY  # and publish_stats the rest


def test_a_cancelled_waiter_leaves_the_others_their_answer(
        loop: LoopReactor, server: DnsServer) -> None:
    server.answer("shared.test", "192.0.2.9")
    resolver, _ = build(loop, server)
    first, second = resolver.getHostByName("shared.test"), resolver.getHostByName("shared.test")
    first.cancel()
    assert loop.outcome(second) == "192.0.2.9"
    assert server.count("shared.test") == 1


def test_resolved_names_reach_scrapys_dns_cache_for_per_ip_slots(
        loop: LoopReactor, server: DnsServer) -> None:
    server.answer("perip.test", "192.0.2.77")
    resolver, _ = build(loop, server)
    loop.outcome(resolver.getHostByName("perip.test"))
    assert scrapy_dnscache.get("perip.test") == "192.0.2.77"


def test_nameservers_from_a_comma_separated_setting(loop: LoopReactor, server: DnsServer) -> None:
    server.answer("comma.test", "192.0.2.10")
    with DnsServer() as dead:
        dead.dead = True
        # the dead one first: its per-try share of DNS_TIMEOUT runs out, the live one answers
        resolver, _ = build(loop, server, DNS_NAMESERVERS=f"{dead.nameserver}, {server.nameserver}",
                            DNS_TIMEOUT=2, DNS_RETRIES=0)
        assert loop.outcome(resolver.getHostByName("comma.test")) == "192.0.2.10"
        assert dead.count("comma.test") == 1 and server.count("comma.test") == 1


@pytest.mark.parametrize(("name", "value"), [
    ("DNS_NAMESERVERS", "not-an-ip"), ("DNS_NAMESERVERS", "127.0.0.1:99999"),
    ("DNS_CACHE_SIZE", -1), ("DNS_RETRIES", -1), ("DNS_TIMEOUT", 0),
    ("ALLOWED_ADDRESS_NETWORKS", "10.0.0.0/33"),
])
def test_invalid_setting_is_an_error_naming_it(loop: LoopReactor, server: DnsServer,
                                               name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=name):
        build(loop, server, **{name: value})


def test_min_ttl_above_max_ttl_is_an_error(loop: LoopReactor, server: DnsServer) -> None:
    with pytest.raises(ValueError, match="DNS_MIN_TTL"):
        build(loop, server, DNS_MIN_TTL=100, DNS_MAX_TTL=50)
