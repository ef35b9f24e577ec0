"""AOPIC's importance evidence: the power-law test web, PageRank, Spearman,
and crawls comparing AOPIC with breadth-first order on that web."""

from __future__ import annotations

import http.client
import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from testweb.importance import (
    Crawl, area, correlation, discovery_curve, pagerank_by_url, ranks, run_crawl, simulate_aopic,
    spearman, top_pages,
)
from testweb import SiteModel, TestWeb, WebConfig, canonical_url, start_testweb
from testweb import powerlaw
from testweb.powerlaw import build_graph, in_degrees, node_host, node_path, pagerank, seed_nodes

E2E_PAGES = 1000  # 50 hosts; seed 1: areas AOPIC 0.54-0.56, breadth-first 0.39 (5 runs each)
E2E_CONFIG = WebConfig(hosts=1, pages=1, seed=1, powerlaw_pages=E2E_PAGES)


def reachable(graph: powerlaw.Graph, seeds: list[int]) -> set[int]:
    seen, stack = set(seeds), list(seeds)
    while stack:
        for target in graph[stack.pop()]:
            if target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


# --- the power-law graph ------------------------------------------------------

def test_powerlaw_graph_is_a_function_of_seed_and_size() -> None:
    first = build_graph(7, 500, 8)
    build_graph.cache_clear()
    assert build_graph(7, 500, 8) == first
    assert build_graph(8, 500, 8) != first


def test_powerlaw_in_degree_is_skewed() -> None:
    degrees = sorted(in_degrees(build_graph(1, 2000, 8)), reverse=True)
    top_share = sum(degrees[:20]) / sum(degrees)
    assert top_share > 0.2  # the top 1% of pages hold over a fifth of all links
    assert degrees[0] > 50 * sum(degrees) / len(degrees)


def test_every_powerlaw_page_is_reachable_from_the_seeds() -> None:
    for pages in (1, 19, 21, 1000):
        graph = build_graph(1, pages, 8)
        assert reachable(graph, seed_nodes(pages)) == set(range(pages))


def test_powerlaw_graph_has_dangling_pages_and_no_self_links() -> None:
    graph = build_graph(1, 1000, 8)
    assert any(not targets for targets in graph)
    assert all(node not in targets for node, targets in enumerate(graph))


def test_powerlaw_hosts_exist_only_when_enabled() -> None:
    assert not any(host.startswith("pl") for host in SiteModel(WebConfig(), 8080).hosts)
    model = SiteModel(WebConfig(powerlaw_pages=45), 8080)
    assert model.hosts[-3:] == ["pl0000.test", "pl0001.test", "pl0002.test"]
    assert model.page("pl0000.test", "/robots.txt").status == 404
    assert model.page("pl0002.test", "/n/5.html").status == 404  # node 45: past the end
    assert model.page("pl0002.test", "/n/4.html").status == 200


def test_powerlaw_pages_link_their_out_neighbours() -> None:
    model = SiteModel(WebConfig(powerlaw_pages=300), 8080)
    graph = build_graph(1, 300, 8)
    for node in (0, 21, 299):
        page = model.page(node_host(node), node_path(node))
        expected = [model.url(node_host(n), node_path(n)) for n in graph[node]]
        assert [link.href for link in page.links] == expected


# --- PageRank and Spearman ----------------------------------------------------

def test_pagerank_sums_to_one() -> None:
    assert sum(pagerank(build_graph(1, 2000, 8))) == pytest.approx(1.0, abs=1e-9)


def test_pagerank_matches_a_hand_checked_graph() -> None:
    """0 -> 1, 2; 1 -> 2; 2 -> 0 with d = 0.85 solves to r0 = 0.128625 / 0.3316875."""
    ranks_ = pagerank(((1, 2), (2,), (0,)))
    assert ranks_ == pytest.approx([0.387790, 0.214811, 0.397400], abs=1e-6)


def test_pagerank_spreads_dangling_rank_over_every_page() -> None:
    """0 -> 1, 1 dangling: r0 = 0.075 + 0.425 r1 and r0 + r1 = 1, so r0 = 20/57."""
    assert pagerank(((1,), ())) == pytest.approx([20 / 57, 37 / 57], abs=1e-9)


def test_ranks_average_ties() -> None:
    assert ranks([10, 20, 20, 30, 5]) == [2, 3.5, 3.5, 5, 1]


def test_spearman_is_pearson_on_ranks() -> None:
    assert spearman([1, 2, 3, 4], [10, 200, 3000, 40000]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ranks of y: 1, 2, 3.5, 5, 3.5 -> covariance 8, variances 10 and 9.5
    assert spearman([1, 2, 3, 4, 5], [5, 6, 7, 8, 7]) == pytest.approx(8 / 95 ** 0.5)


def test_discovery_curve_counts_top_pages_fetched() -> None:
    curve = discovery_curve(["a", "x", "b", "y"], {"a", "b"}, 5)
    assert curve == [0.5, 0.5, 1.0, 1.0, 1.0]
    assert area(curve) == pytest.approx(0.8)


def test_simulated_aopic_fetches_the_richest_page_first() -> None:
    """Seed 0 splits 0.9 over 1 and 2 (0.1 to Lambda); 1 goes first on the tie
    and passes 0.405 to 2, which is fetched with 0.855."""
    history, cash, order = simulate_aopic(((1, 2), (2,), (0,)), [0])
    assert order == [0, 1, 2]
    assert history == pytest.approx([1.0, 0.45, 0.855])
    assert sum(cash) == pytest.approx(0.7695)  # 2's share back on 0; the rest is Lambda's


# --- crawls -----------------------------------------------------------------

@dataclass
class Crawls:
    web: TestWeb
    scores: dict[str, float]
    aopic: Crawl
    bfs: Crawl


@pytest.fixture(scope="module")
def crawls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Crawls]:
    """One AOPIC and one breadth-first crawl of the whole power-law web
    (CONCURRENT_REQUESTS=4 over 50 hosts, no delay: priority decides)."""
    workdir = tmp_path_factory.mktemp("importance")
    with start_testweb(E2E_CONFIG, workdir / "web") as web:
        aopic = run_crawl(web, workdir / "aopic", "aopic", 0, 4, timeout=60)
        bfs = run_crawl(web, workdir / "bfs", "bfs", 0, 4, timeout=60)
        yield Crawls(web, pagerank_by_url(web), aopic, bfs)


def test_served_pages_link_the_graph(crawls: Crawls) -> None:
    web, graph = crawls.web, crawls.web.powerlaw_graph()
    seed = web.powerlaw_seeds()[0]
    connection = http.client.HTTPConnection("127.0.0.1", web.port, timeout=10)
    try:
        connection.request("GET", "/", headers={"Host": "pl0000.test"})
        body = connection.getresponse().read().decode()
    finally:
        connection.close()
    assert [canonical_url(href) for href in re.findall(r'<a href="([^"]+)"', body)] == graph[seed]


def test_crawls_fetch_every_power_law_page(crawls: Crawls) -> None:
    assert set(crawls.aopic.order) == set(crawls.bfs.order) == set(crawls.scores)
    assert set(crawls.aopic.history) == set(crawls.scores)


def test_aopic_fetches_top_pagerank_pages_earlier_than_breadth_first(crawls: Crawls) -> None:
    top, budget = top_pages(crawls.scores), E2E_PAGES // 4
    aopic = area(discovery_curve(crawls.aopic.order, top, budget))
    bfs = area(discovery_curve(crawls.bfs.order, top, budget))
    assert aopic > bfs + 0.05, (aopic, bfs)


def test_aopic_history_tracks_pagerank_after_one_pass(crawls: Crawls) -> None:
    """What one pass achieves (measured 0.69-0.73 here): a guard against regressions."""
    assert correlation(crawls.scores, crawls.aopic.history) >= 0.6


def test_aopic_history_rank_correlation_with_pagerank_reaches_0_8(
        crawls: Crawls, tmp_path_factory: pytest.TempPathFactory) -> None:
    """OPIC converges by revisiting pages: with FRONTIER_AOPIC_REVISITS=6
    (seven passes) the history ranks pages as PageRank does (measured 0.82;
    one pass gives about 0.72 because a page's single history is mostly how
    early it was fetched)."""
    workdir = tmp_path_factory.mktemp("revisits")
    revisited = run_crawl(crawls.web, workdir, "aopic", 0, 8, timeout=120,
                          extra={"FRONTIER_AOPIC_REVISITS": 6})
    assert set(revisited.history) == set(crawls.scores)
    assert correlation(crawls.scores, revisited.history) >= 0.8
