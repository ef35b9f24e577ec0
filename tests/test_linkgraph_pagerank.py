"""PageRank, Spearman's rho and the node order of the link graph, with numbers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extensions.linkgraph.build import node_order, order_key
from extensions.linkgraph.pagerank import pagerank, ranks, spearman


def adjacency(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.cumsum([0] + [len(successors) for successors in lists]).astype(np.int64)
    targets = np.array([t for successors in lists for t in successors], dtype=np.int64)
    return offsets, targets


def google_matrix_pagerank(lists: list[list[int]], damping: float) -> np.ndarray:
    """The principal eigenvector of the Google matrix, built densely: an
    independent computation of what power iteration should converge to."""
    n = len(lists)
    columns = np.zeros((n, n))
    for source, successors in enumerate(lists):
        if successors:
            for target in successors:
                columns[target, source] += 1.0 / len(successors)
        else:
            columns[:, source] = 1.0 / n  # a dangling page spreads evenly
    google = damping * columns + (1.0 - damping) / n
    values, vectors = np.linalg.eig(google)
    vector = np.real(vectors[:, np.argmax(np.real(values))])
    return vector / vector.sum()


graphs = st.integers(min_value=1, max_value=25).flatmap(
    lambda n: st.lists(st.lists(st.integers(0, n - 1), max_size=6, unique=True).map(sorted),
                       min_size=n, max_size=n))


@settings(max_examples=60, deadline=None)
@given(graphs)
def test_power_iteration_converges_to_the_google_matrix_eigenvector(lists: list[list[int]]) -> None:
    result = pagerank(*adjacency(lists))
    assert result.delta < 1e-10
    assert result.scores.sum() == pytest.approx(1.0)
    assert np.allclose(result.scores, google_matrix_pagerank(lists, 0.85), atol=1e-8)


def test_a_page_every_other_links_to_ranks_first_and_a_cycle_is_uniform() -> None:
    star = pagerank(*adjacency([[1], [], [1], [1]])).scores
    assert int(np.argmax(star)) == 1
    cycle = pagerank(*adjacency([[1], [2], [0]])).scores
    assert np.allclose(cycle, 1 / 3)


def test_damping_out_of_range_is_refused_and_an_empty_graph_has_no_scores() -> None:
    with pytest.raises(ValueError, match="damping"):
        pagerank(*adjacency([[0]]), damping=1.0)
    assert len(pagerank(np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)).scores) == 0


def test_ties_share_their_average_rank() -> None:
    assert ranks(np.array([10.0, 20.0, 10.0, 30.0])).tolist() == [1.5, 3.0, 1.5, 4.0]


def test_spearman_matches_a_worked_example() -> None:
    """Wikipedia's worked example (IQ against hours of TV a week): rho = -29/165."""
    iq = np.array([106, 100, 86, 101, 99, 103, 97, 113, 112, 110])
    tv = np.array([7, 27, 2, 50, 28, 29, 20, 12, 6, 17])
    assert spearman(iq, tv) == pytest.approx(-29 / 165)
    assert spearman(iq, iq * 3 + 1) == pytest.approx(1.0)
    assert spearman(iq, -iq) == pytest.approx(-1.0)
    assert np.isnan(spearman(iq, np.ones(10)))
    with pytest.raises(ValueError, match="length"):
        spearman(iq, tv[:3])


def test_pages_of_a_site_get_consecutive_ids_in_url_order() -> None:
    urls = [
        "http://b.test/z", "https://docs.a.test/x", "http://a.test/b", "http://c.test/",
        "http://a.test/a", "http://b.test/a", "https://a.test/b", "http://www.a.test/",
    ]
    ordered = [urls[i] for i in node_order(urls)]
    assert ordered == [
        "http://a.test/a", "http://a.test/b", "https://a.test/b",  # http and https copies side by side
        "https://docs.a.test/x", "http://www.a.test/",  # subdomains next to their site
        "http://b.test/a", "http://b.test/z", "http://c.test/",
    ]
    assert sorted(node_order(urls).tolist()) == list(range(len(urls)))


def test_an_unparsable_url_sorts_after_every_host() -> None:
    assert order_key("http://[::1/") > order_key("http://zzz.test/")


def test_numbered_pages_sort_by_number_so_a_run_of_them_gets_consecutive_ids() -> None:
    urls = [f"http://a.test/p/{n}.html" for n in (10, 9, 11, 8, 100, 2)] + ["http://a.test/p/index.html"]
    ordered = [urls[i].rsplit("/", 1)[1] for i in node_order(urls)]
    assert ordered == ["2.html", "8.html", "9.html", "10.html", "11.html", "100.html", "index.html"]
