"""Link graph compression: bits per link, build time, query latency.

Generates a synthetic web graph with host locality (fixed seed): hosts of
varied size (Zipf-like), pages of a host numbered consecutively (ids ordered
by host then URL, as the crawl's builder orders them), most links within the
host, lexicographically close pages sharing a navigation list (a site menu,
with small per-page changes), some cross-host links to popular pages. Then
writes the graph and its transpose as BVGraphs and prints a table.

    python -m bench.linkgraph                      # 1 M nodes, 20 M arcs
    python -m bench.linkgraph --nodes 100000       # smaller, same shape
    python -m bench.linkgraph --graph BASENAME     # measure an existing graph

Writes bench/results/linkgraph_synthetic.txt (or linkgraph_<name>.txt).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import webgraph

from extensions.linkgraph.bvgraph import Adjacency, transpose, write_bvgraph

RESULTS = Path(__file__).parent / "results"


def synthetic_graph(num_nodes: int, arcs_per_node: int, seed: int = 14) -> Adjacency:
    """A host-local graph with about ``num_nodes * arcs_per_node`` arcs."""
    rng = np.random.default_rng(seed)
    sizes = np.minimum(rng.zipf(1.6, size=num_nodes) * 3, 50_000)
    sizes = sizes[np.cumsum(sizes) <= num_nodes]
    sizes = np.append(sizes, num_nodes - sizes.sum()) if sizes.sum() < num_nodes else sizes
    host_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    host_of = np.repeat(np.arange(len(sizes)), sizes)
    node = np.arange(num_nodes)
    start, size = host_start[host_of], sizes[host_of]
    sources, targets = [], []
    # navigation: each block of 64 neighbouring pages shares a menu of up to 12
    # pages of its host (a run of section pages plus the host's top pages)
    menu_len = np.minimum(size, 12)
    block = node // 64
    for j in range(12):
        has = j < menu_len
        pick = np.where(j < 6, j, 6 + (block * 7 + j * 13) % np.maximum(size - 6, 1))
        sources.append(node[has])
        targets.append((start + np.minimum(pick, size - 1))[has])
    # per-page local links: the next few pages (siblings in a listing), then
    # lexicographically close pages at heavy-tailed distances
    for j in range(1, 5):
        sources.append(node)
        targets.append(start + np.mod(node - start + j, size))
    local = max(arcs_per_node - 17, 1)
    src = np.repeat(node, local)
    jump = np.rint(rng.standard_cauchy(len(src)) * 3).astype(np.int64)
    sources.append(src)
    targets.append(start[src] + np.mod(src - start[src] + jump, size[src]))
    # cross-host links: to popular pages (hosts' home pages, Zipf over hosts)
    cross = int(num_nodes * 2)
    src = rng.integers(0, num_nodes, cross)
    host = np.minimum(rng.zipf(1.3, cross) - 1, len(sizes) - 1)
    sources.append(src)
    targets.append(host_start[host] + np.minimum(rng.geometric(0.5, cross) - 1, sizes[host] - 1))
    return Adjacency.from_arcs(num_nodes, np.concatenate(sources), np.concatenate(targets))


def query_latency(graph: webgraph.BvGraph, samples: int, seed: int = 7) -> tuple[float, float]:
    """Median and p99 of one successors() call (the list decoded), in microseconds."""
    rng = np.random.default_rng(seed)
    times = []
    for node in rng.integers(0, graph.num_nodes(), samples).tolist():
        t0 = time.perf_counter()
        list(graph.successors(node))
        times.append(time.perf_counter() - t0)
    return float(np.median(times) * 1e6), float(np.percentile(times, 99) * 1e6)


def measure(graph: Adjacency, workdir: Path, samples: int) -> list[tuple[str, str]]:
    t0 = time.perf_counter()
    out_size = write_bvgraph(workdir / "graph", graph)
    t1 = time.perf_counter()
    reverse = transpose(graph)
    t2 = time.perf_counter()
    in_size = write_bvgraph(workdir / "graph-t", reverse)
    t3 = time.perf_counter()
    out_graph, in_graph = webgraph.BvGraph(str(workdir / "graph")), webgraph.BvGraph(str(workdir / "graph-t"))
    t4 = time.perf_counter()
    out_med, out_p99 = query_latency(out_graph, samples)
    in_med, in_p99 = query_latency(in_graph, samples)
    arcs = graph.num_arcs
    mib = 1 << 20
    compressed = (out_size.graph_bits / 8 + out_size.offsets_bytes) / mib
    return [
        ("nodes", f"{graph.num_nodes:,}"),
        ("arcs", f"{arcs:,}"),
        ("bits per link (graph)", f"{out_size.graph_bits / max(arcs, 1):.3f}"),
        ("bits per link (transposed)", f"{in_size.graph_bits / max(arcs, 1):.3f}"),
        ("offsets, bits per node", f"{out_size.offsets_bytes * 8 / max(graph.num_nodes, 1):.2f}"),
        ("uncompressed, 32-bit lists (MiB)", f"{(arcs + graph.num_nodes + 1) * 4 / mib:.1f}"),
        ("uncompressed, 64-bit lists (MiB)", f"{(arcs + graph.num_nodes + 1) * 8 / mib:.1f}"),
        ("compressed graph + offsets (MiB)", f"{compressed:.1f}"),
        ("build time, graph (s)", f"{t1 - t0:.1f}"),
        ("build time, transpose + transposed graph (s)", f"{t3 - t1:.1f}"),
        ("open both (s)", f"{t4 - t3:.1f}"),
        (f"out query median / p99 (us, {samples} nodes)", f"{out_med:.0f} / {out_p99:.0f}"),
        (f"in query median / p99 (us, {samples} nodes)", f"{in_med:.0f} / {in_p99:.0f}"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--arcs-per-node", type=int, default=20)
    parser.add_argument("--graph", help="BASENAME of an existing BVGraph to measure instead")
    parser.add_argument("--samples", type=int, default=2000, help="random nodes per latency figure")
    args = parser.parse_args()
    t0 = time.perf_counter()
    if args.graph:
        theirs = webgraph.BvGraph(args.graph)
        lists = [list(theirs.successors(node)) for node in range(theirs.num_nodes())]
        graph = Adjacency.from_arcs(len(lists), np.repeat(np.arange(len(lists)), [len(s) for s in lists]),
                                    np.array([t for s in lists for t in s], dtype=np.int64))
        name, source = Path(args.graph).name, f"BVGraph {args.graph}"
    else:
        graph = synthetic_graph(args.nodes, args.arcs_per_node)
        name = "synthetic"
        source = f"synthetic, seed 14, --nodes {args.nodes} --arcs-per-node {args.arcs_per_node}"
    load = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        rows = measure(graph, Path(tmp), args.samples)
    width = max(len(k) for k, _ in rows)
    lines = [f"# bench/linkgraph.py: {source} (loaded/generated in {load:.1f} s)",
             "# one run on a shared 2-core machine: timings are noisy",
             *(f"{k:<{width}}  {v}" for k, v in rows)]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"linkgraph_{name}.txt").write_text(text)


if __name__ == "__main__":
    main()
