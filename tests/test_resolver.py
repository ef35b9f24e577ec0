"""DNS_HOSTS: the hosts-file parser, and real crawls that resolve through it."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from extensions.resolver import HostsTable, load_hosts_file, parse_hosts
from testweb.crawlrun import run_spider
from testweb.hostsresolver import HostsFileResolver
from testweb.localserver import LocalWeb
from tests._sup_spiders import FOLLOW_SPIDER, follow_args

RESOLVER = "testweb.hostsresolver.HostsFileResolver"


def test_first_entry_wins_and_names_are_case_insensitive() -> None:
    table = parse_hosts([
        "# comment line",
        "",
        "10.0.0.1   Alpha.Test alias.test   # trailing comment",
        "10.0.0.2   alpha.test beta.test.",
    ])
    assert table.lookup("ALPHA.test") == "10.0.0.1"
    assert table.lookup("alias.test") == "10.0.0.1"
    assert table.lookup("beta.test") == "10.0.0.2"
    assert table.lookup("beta.test.") == "10.0.0.2"
    assert table.lookup("gamma.test") is None
    assert table.malformed == 0


def test_ipv4_entry_preferred_over_earlier_ipv6_entry() -> None:
    table = parse_hosts(["::1 both.test v6only.test", "127.0.0.2 both.test"])
    assert table.lookup("both.test") == "127.0.0.2"
    assert table.lookup("v6only.test") == "::1"


def test_malformed_lines_are_skipped_with_one_warning_each(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="extensions.resolver"):
        table = parse_hosts(["999.1.1.1 bad.test", "10.0.0.1", "not-an-ip x.test", "10.0.0.3 ok.test"])
    assert table.malformed == 3
    assert len([r for r in caplog.records if "malformed" in r.getMessage()]) == 3
    assert table.lookup("ok.test") == "10.0.0.3"
    assert table.lookup("bad.test") is None


def test_missing_hosts_file_error_names_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="DNS_HOSTS"):
        load_hosts_file(tmp_path / "absent")


class _Inner:
    def __init__(self) -> None:
        self.asked: list[str] = []

    def getHostByName(self, name: str, timeout: object = ()) -> object:
        from twisted.internet import defer
        self.asked.append(name)
        return defer.succeed("192.0.2.9")


def test_names_not_in_the_file_fall_through_to_the_inner_resolver() -> None:
    inner = _Inner()
    resolver = HostsFileResolver(None, inner, parse_hosts(["127.0.0.1 local.test"]))
    results: list[str] = []
    resolver.getHostByName("LOCAL.test").addCallback(results.append)
    resolver.getHostByName("example.org").addCallback(results.append)
    assert results == ["127.0.0.1", "192.0.2.9"]
    assert inner.asked == ["example.org"]


def test_without_hosts_entries_resolver_is_a_pass_through() -> None:
    inner = _Inner()
    resolver = HostsFileResolver(None, inner, HostsTable())
    results: list[str] = []
    resolver.getHostByName("anything.test").addCallback(results.append)
    assert results == ["192.0.2.9"] and inner.asked == ["anything.test"]


def test_crawl_fetches_made_up_name_through_hosts_file(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("# test web\n127.0.0.1 made-up-name.test\nbogus line here\n")
    with LocalWeb(pages=3) as web:
        run = run_spider(tmp_path / "crawl", FOLLOW_SPIDER, follow_args(web.url("/page/0", host="made-up-name.test")), {
            "TWISTED_DNS_RESOLVER": RESOLVER,
            "DNS_HOSTS": str(hosts),
            "LOG_LEVEL": "DEBUG",
        })
        served = dict(web.served)
    assert run.returncode == 0, run.log
    # Scrapy 2.19's default reactor, whose connectTCP resolves through ours
    assert "Using reactor: twisted.internet.asyncioreactor.AsyncioSelectorReactor" in run.log
    assert f"Crawled (200) <GET http://made-up-name.test:{web.port}/page/0>" in run.log
    assert served == {"/page/0": 1, "/page/1": 1, "/page/2": 1}
    assert "'downloader/response_status_count/200': 3" in run.log
    # one lookup per new connection; the system resolver knows no .test names
    assert "'dns/hosts_file/hit':" in run.log
    assert "'dns/hosts_file/malformed': 1" in run.log
    assert run.log.count("skipping malformed hosts line") == 1


def test_crawl_without_hosts_entry_still_resolves_through_dns(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 unrelated.test\n")
    with LocalWeb(pages=1) as web:
        run = run_spider(tmp_path / "crawl", FOLLOW_SPIDER, follow_args(web.url("/page/0", host="localhost")), {
            "TWISTED_DNS_RESOLVER": RESOLVER,
            "DNS_HOSTS": str(hosts),
        })
        served = dict(web.served)
    assert run.returncode == 0, run.log
    assert served == {"/page/0": 1}
    assert "dns/hosts_file/hit" not in run.log


def test_crawl_with_missing_hosts_file_exits_with_error(tmp_path: Path) -> None:
    run = run_spider(tmp_path / "crawl", FOLLOW_SPIDER, follow_args("http://made-up-name.test/"), {
        "TWISTED_DNS_RESOLVER": RESOLVER,
        "DNS_HOSTS": str(tmp_path / "no-such-hosts"),
    })
    assert run.returncode != 0
    assert "DNS_HOSTS=" in run.log and "no-such-hosts" in run.log
