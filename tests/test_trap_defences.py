"""Trap defences outside the URL filter: the frontier's per-host page budget
and path-ascending crawling."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request

from tests.test_frontier_support import STORES, make_frontier, make_store


@pytest.fixture(params=STORES)
def store(request: Any, tmp_path: Any) -> Any:
    return make_store(request.param, tmp_path)


def test_host_budget_refuses_a_hosts_urls_beyond_it(store: Any) -> None:
    frontier = make_frontier(store, host_budget=3)
    accepted = [frontier.enqueue_request(Request(f"http://trap.test/{i}")) for i in range(6)]
    assert accepted == [True, True, True, False, False, False]
    assert frontier.enqueue_request(Request("http://other.test/1"))  # other hosts unaffected
    assert frontier.stats.get_value("frontier/host_budget_refused") == 3


def test_host_budget_counts_survive_a_cold_cache(store: Any, tmp_path: Any) -> None:
    """The count comes from the store when the host is not cached (a resume)."""
    frontier = make_frontier(store, host_budget=3)
    for i in range(2):
        assert frontier.enqueue_request(Request(f"http://trap.test/{i}"))
    counts = frontier.admission.host_counts
    frontier.admission.host_counts = type(counts)(counts.capacity)  # cold, as after a resume
    assert frontier.enqueue_request(Request("http://trap.test/2"))
    assert not frontier.enqueue_request(Request("http://trap.test/3"))


def test_a_host_under_its_budget_costs_no_look_up_of_each_new_urls_row(
        store: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The budget is on by default: a new URL of a host under it is counted
    in memory, its row is not read first (only a host at its budget checks
    whether a URL is known, to call it a duplicate rather than a refusal)."""
    frontier = make_frontier(store, host_budget=50)
    looked_up: list[int] = []
    status_of = frontier.admission.store.urls.status_of

    def counting(fingerprint: int) -> Any:
        looked_up.append(fingerprint)
        return status_of(fingerprint)

    monkeypatch.setattr(frontier.admission.store.urls, "status_of", counting)
    before = len(looked_up)
    for i in range(40):
        assert frontier.enqueue_request(Request(f"http://site.test/{i}"))
    assert len(looked_up) == before
    assert not frontier.enqueue_request(Request("http://site.test/3"))  # known: a duplicate
    assert frontier.stats.get_value("frontier/host_budget_refused", 0) == 0


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://a.test/x/y/page.html", ["http://a.test/x/y/", "http://a.test/x/", "http://a.test/"]),
        ("http://a.test/x/y/", ["http://a.test/x/", "http://a.test/"]),
        ("http://a.test/", []),
        ("http://a.test/search?q=1", ["http://a.test/"]),
        ("http://a.test:8080/a/b", ["http://a.test:8080/a/", "http://a.test:8080/"]),
    ],
)
def test_path_ascending_ancestors(url: str, expected: list[str]) -> None:
    from extensions.urls.ascending import ancestors  # noqa: PLC0415

    assert ancestors(url) == expected


def test_path_ascending_crawl_finds_unlinked_directories(start_web: Any, tmp_path: Any) -> None:
    """A seed deep in a site: with LINKS_PATH_ASCENDING its directory
    ``/p/``, which no page links, is fetched too."""
    from tests.conftest import fetched_urls  # noqa: PLC0415
    from testweb.crawlrun import run_web_crawl  # noqa: PLC0415

    web = start_web(hosts=2, pages=4)
    seed = web.url("robots-401.test", "/p/1.html")
    directory = web.url("robots-401.test", "/p/")
    off = run_web_crawl(tmp_path / "off", seed, settings={"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 1})
    assert off.returncode == 0
    assert directory not in fetched_urls(web)
    on = run_web_crawl(tmp_path / "on", seed, settings={
        "DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 1, "LINKS_PATH_ASCENDING": True})
    assert on.returncode == 0
    assert directory in fetched_urls(web)
