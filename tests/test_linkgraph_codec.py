"""The link graph codec: codes, BVGraph round trips, webgraph-rs cross-check."""

from __future__ import annotations

import numpy as np
import pytest
import webgraph
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from extensions.linkgraph import webgraph_ef
from extensions.linkgraph.bvgraph import Adjacency, _Batch, _choose_references, transpose, write_bvgraph
from extensions.linkgraph.codes import BitPacker, gamma_array, int2nat_array, zeta_array

FAST = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


def from_lists(lists: list[list[int]]) -> Adjacency:
    """A graph from one list of successors per node (any order, duplicates allowed)."""
    sources = np.repeat(np.arange(len(lists)), [len(s) for s in lists])
    return Adjacency.from_arcs(len(lists), sources, np.array([t for s in lists for t in s], dtype=np.int64))


# the codes as their definitions state them, one value at a time: the oracle of the vectorised ones


def gamma(x: int) -> tuple[int, int]:
    v = x + 1
    return v, 2 * v.bit_length() - 1


def zeta(x: int, k: int) -> tuple[int, int]:
    v = x + 1
    h = (v.bit_length() - 1) // k
    left = 1 << (h * k)
    y = v - left
    payload, plen = (y, h * k + k - 1) if y < left else (y + left, h * k + k)
    return (1 << plen) | payload, h + 1 + plen


def pack_codes(codes) -> tuple[bytes, int]:
    acc = nbits = 0
    for value, length in codes:
        acc = (acc << length) | value
        nbits += length
    pad = -nbits % 8
    return (acc << pad).to_bytes((nbits + pad) // 8, "big"), nbits


@FAST
@given(st.lists(st.integers(0, 2**50), min_size=1, max_size=200), st.integers(1, 7))
def test_vectorised_codes_and_packing_equal_scalar(values, k):
    # vectorised codes hold each code's value in 64 bits: naturals up to 2^50 (ids, gaps)
    array = np.array(values, dtype=np.int64)
    for vector, scalar in ((gamma_array(array), gamma), (zeta_array(array, k), lambda x: zeta(x, k))):
        assert list(zip(vector[0].tolist(), vector[1].tolist())) == [scalar(v) for v in values]
        packer = BitPacker()
        packer.write(*vector, batch=7)
        assert (packer.getvalue(), packer.bits) == pack_codes(scalar(v) for v in values)


@given(st.integers(-2**40, 2**40))
def test_sign_folding_maps_integers_to_naturals_in_order_of_magnitude(x):
    assert int(int2nat_array(np.array([x]))[0]) == (2 * x if x >= 0 else -2 * x - 1)


@st.composite
def graphs(draw):
    """Random graphs that exercise every part of the format."""
    n = draw(st.integers(1, 120))
    lists = [sorted(draw(st.sets(st.integers(0, n - 1), max_size=12))) for _ in range(n)]
    for node in draw(st.lists(st.integers(0, n - 1), max_size=8)):  # long intervals
        start = draw(st.integers(0, n - 1))
        lists[node] = sorted(set(lists[node]) | set(range(start, min(n, start + draw(st.integers(2, 40))))))
    for node in draw(st.lists(st.integers(1, n - 1), max_size=30)) if n > 1 else []:
        source = lists[node - draw(st.integers(1, min(node, 9)))]  # copies, edited
        edit = draw(st.sets(st.integers(0, n - 1), max_size=3))
        lists[node] = sorted(set(source) ^ edit)
    if draw(st.booleans()):
        lists[0] = sorted(set(lists[0]) | {0, n - 1})  # self loop, last node
    return from_lists(lists)


PARAMS = st.sampled_from([{}, {"window": 0}, {"min_interval": 0}, {"max_ref_count": 1},
                          {"window": 2, "zeta_k": 1, "min_interval": 2}, {"zeta_k": 5}])


@FAST
@given(graphs(), PARAMS)
def test_graph_round_trips_through_webgraph_rs(tmp_path, graph, params):
    size = write_bvgraph(tmp_path / "g", graph, **params)
    assert size.offsets[-1] == size.graph_bits and len(size.offsets) == graph.num_nodes + 1
    _cross_check(tmp_path / "g", graph)


def test_reference_chains_are_bounded(tmp_path):
    """Identical lists: every one would reference the previous, but chains stop at max_ref_count."""
    lists = [list(range(3, 48, 3))] * 50
    graph = from_lists(lists)
    chosen = _choose_references(_Batch(graph, 0, 50, 7), 7, 2, 4, 3, np.zeros(50, dtype=np.int64)).tolist()
    depth = []
    for node in range(50):
        chain, x = 0, node
        while chosen[x]:
            chain, x = chain + 1, x - chosen[x]
        depth.append(chain)
    assert max(depth) == 2 and depth.count(0) < 25
    write_bvgraph(tmp_path / "g", graph, max_ref_count=2)
    _cross_check(tmp_path / "g", graph)


@pytest.mark.parametrize("num_nodes", [1, 2, 7])
def test_graphs_without_arcs(tmp_path, num_nodes):
    graph = from_lists([[] for _ in range(num_nodes)])
    assert write_bvgraph(tmp_path / "g", graph).arcs == 0
    _cross_check(tmp_path / "g", graph)


@FAST
@given(graphs())
def test_transpose_twice_is_identity_and_in_agrees_with_out(graph):
    reverse = transpose(graph)
    back = transpose(reverse)
    assert back.offsets.tolist() == graph.offsets.tolist() and back.targets.tolist() == graph.targets.tolist()
    arcs = {(s, t) for s in range(graph.num_nodes) for t in graph.successors(s).tolist()}
    assert {(s, t) for t in range(reverse.num_nodes) for s in reverse.successors(t).tolist()} == arcs


def _cross_check(basename, graph):
    theirs = webgraph.BvGraph(str(basename))
    assert (theirs.num_nodes(), theirs.num_arcs()) == (graph.num_nodes, graph.num_arcs)
    for node in range(graph.num_nodes):
        assert list(theirs.successors(node)) == graph.successors(node).tolist(), node


def test_webgraph_rs_reads_a_large_skewed_graph(tmp_path):
    """Many select-index blocks, one of them with a 32-bit span (a hub among empty lists)."""
    rng = np.random.default_rng(14)
    n = 2048 * 40
    sources = np.concatenate([np.full(60_000, 4000), rng.integers(0, n, 2_000)])
    graph = Adjacency.from_arcs(n, sources, rng.integers(0, n, len(sources)))
    offsets = write_bvgraph(tmp_path / "g", graph).offsets
    upper = (tmp_path / "g.graph").stat().st_size * 8
    low = (upper // len(offsets)).bit_length() - 1
    inventory, _ = webgraph_ef._select_inventory((offsets >> low) + np.arange(len(offsets)),
                                                 len(offsets) + 1 + (upper >> low))
    assert (inventory[:-1:9] >> np.uint64(63)).any()  # the 32-bit span path is exercised
    theirs = webgraph.BvGraph(str(tmp_path / "g"))
    for node in [*range(0, n, 97), 4000, n - 1]:
        assert list(theirs.successors(node)) == graph.successors(node).tolist()


def _host_local_graph(hosts=200, pages=50, seed=3):
    """Pages of a host sharing a navigation list, sibling links, a few cross-host links."""
    rng = np.random.default_rng(seed)
    lists = []
    for host in range(hosts):
        base = host * pages
        nav = [base + j for j in range(8)]
        for page in range(pages):
            own = [base + (page + j) % pages for j in range(1, 6)]
            cross = rng.integers(0, hosts * pages, 1).tolist()
            lists.append(nav + own + (cross if page % 5 == 0 else []))
    return from_lists(lists)


def test_host_locality_compresses_below_bound(tmp_path):
    graph = _host_local_graph()
    full = write_bvgraph(tmp_path / "g", graph).graph_bits / graph.num_arcs
    no_references = write_bvgraph(tmp_path / "r", graph, window=0).graph_bits / graph.num_arcs
    no_intervals = write_bvgraph(tmp_path / "i", graph, min_interval=0).graph_bits / graph.num_arcs
    # measured: 2.6 bits per link; 3.1 without references, 3.0 without intervals
    assert full < 2.8
    assert no_references > full * 1.1 and no_intervals > full * 1.1
    _cross_check(tmp_path / "g", graph)
