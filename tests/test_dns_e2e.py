"""``scrapy crawl web`` resolving through a real DNS server, and the address policy.

The crawl runs as a subprocess with ``DNS_NAMESERVERS`` pointing at a dnslib
server in this process (every ``*.test`` name is 127.0.0.1, where the
synthetic web listens), so what the crawler asked DNS is counted on the
server and what it fetched is in the web's access log.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from testweb.crawlrun import CrawlResult, run_web_crawl
from testweb.dnsserver import DnsServer
from testweb.localserver import LocalServer, Reply, Request


@pytest.fixture
def dns_server() -> Iterator[DnsServer]:
    with DnsServer() as server:
        server.answer_suffix(".test", "127.0.0.1", ttl=3600)
        yield server


def crawl(tmp_path: Path, seeds: str, dns_server: DnsServer, **settings: Any) -> CrawlResult:
    result = run_web_crawl(tmp_path / "crawl", seeds, timeout=180, settings={
        "DNS_NAMESERVERS": dns_server.nameserver, "DNS_TIMEOUT": 10, **settings})
    assert result.returncode == 0, result.log[-3000:]
    assert result.report["finish_reason"] == "finished"
    return result


def test_crawl_sends_one_query_per_host_it_contacts(
        tmp_path: Path, start_web: Any, dns_server: DnsServer) -> None:
    web = start_web(hosts=10, pages=6, links=4)
    result = crawl(tmp_path, web.url("h0000.test", "/"), dns_server, DEPTH_LIMIT=4)
    contacted = {entry.host.lower() for entry in web.entries()}
    assert len(contacted) > 5, contacted
    assert dns_server.names() == contacted
    assert dns_server.total() == len(contacted)  # within the TTL: never a name twice
    stats = result.stats
    assert stats["dns/queries"] == len(contacted)
    assert stats["dns/prefetches"] >= len(contacted) - 1  # the seed's host may be fetched first
    assert stats["dns/cache_hits"] > stats["dns/queries"]  # middleware, then the connection
    assert stats["dns/lookup_time_mean_ms"] > 0 and stats["dns/lookup_time_p99_ms"] > 0
    assert "dns/failures" not in stats and "dns/refused_private" not in stats


def test_nxdomain_seed_is_a_per_url_error_and_the_crawl_goes_on(
        tmp_path: Path, start_web: Any, dns_server: DnsServer) -> None:
    web = start_web(hosts=3, pages=3, links=2)
    dns_server.nxdomain("gone.test", soa_minimum=600)
    dns_server.delay("gone.test", 0.3)  # the fetch waits for this lookup in the middleware
    gone = f"http://gone.test:{web.port}/"
    result = crawl(tmp_path, f"{gone},{web.url('h0000.test', '/')}", dns_server, DEPTH_LIMIT=2)
    assert f"Ignoring <GET {gone}>: DNS lookup failed: gone.test: NXDOMAIN" in result.log
    assert result.stats["dns/failures/nxdomain"] >= 1
    assert dns_server.count("gone.test") == 1  # prefetch and fetch share it; then it is cached
    hosts = Counter(entry.host for entry in web.entries())
    assert "gone.test" not in hosts and hosts["h0000.test"] > 1


def test_private_addresses_are_refused_by_default(
        tmp_path: Path, start_web: Any, dns_server: DnsServer) -> None:
    web = start_web(hosts=3, pages=3, links=2)
    seeds = f"{web.url('h0000.test', '/')},http://127.0.0.1:{web.port}/"
    result = crawl(tmp_path, seeds, dns_server, ALLOW_PRIVATE_ADDRESSES=False)
    assert web.entries() == []  # not even robots.txt
    assert result.stats["dns/refused_private"] == 2
    assert "h0000.test resolves to 127.0.0.1, a loopback address" in result.log
    assert "127.0.0.1 is a loopback address" in result.log


def test_a_seed_with_a_literal_address_is_fetched_without_a_lookup(
        tmp_path: Path, start_web: Any, dns_server: DnsServer) -> None:
    """Was: the connection asked the resolver for "127.0.0.1", which queried
    the nameserver, failed, and held the origin as unreachable until deferred."""
    web = start_web(hosts=3, pages=3, links=2)
    result = crawl(tmp_path, f"http://127.0.0.1:{web.port}/", dns_server)
    paths = [entry.path for entry in web.entries() if entry.host.startswith("127.0.0.1")]
    assert paths == ["/robots.txt", "/"]  # the test web knows no such host: two 404s
    assert dns_server.total() == 0
    assert "dns/failures" not in result.stats and not result.report["deferred"]


class Redirector(LocalServer):
    """On 127.0.0.2, standing in for a public host: ``/`` answers 302 to
    ``target``; anything else 404."""

    def __init__(self) -> None:
        self.target = ""
        super().__init__(self.answer, address="127.0.0.2")

    def answer(self, request: Request) -> Reply:
        if request.path == "/":
            return Reply(302, b"", {"Location": self.target})
        return Reply(404, b"", {})


@pytest.fixture
def redirector() -> Iterator[Redirector]:
    with Redirector() as server:
        yield server


def test_redirect_from_an_allowed_name_to_a_private_one_is_refused(
        tmp_path: Path, start_web: Any, dns_server: DnsServer, redirector: Redirector) -> None:
    web = start_web(hosts=3, pages=3, links=2)
    dns_server.answer("public.test", "127.0.0.2")
    redirector.target = web.url("h0000.test", "/")
    seed = redirector.url("/", host="public.test")
    result = crawl(tmp_path, seed, dns_server, ALLOW_PRIVATE_ADDRESSES=False,
                   ALLOWED_ADDRESS_NETWORKS="127.0.0.2/32")
    assert "/" in redirector.served  # the allowed host was fetched...
    assert web.entries() == []  # ...its redirect target never was
    assert result.stats["dns/refused_private"] == 1
    assert "h0000.test resolves to 127.0.0.1, a loopback address" in result.log
