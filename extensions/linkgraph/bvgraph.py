"""BVGraph: Boldi and Vigna's compressed adjacency lists in WebGraph's format
(files: docs/reference/formats.md)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np

from .codes import BitPacker, gamma_array, int2nat_array, zeta_array

GRAPH_CLASS = "it.unimi.dsi.webgraph.BVGraph"
_BATCH_NODES = 1 << 17


class Adjacency(NamedTuple):
    """Successor lists in CSR form: ``targets[offsets[i]:offsets[i + 1]]``,
    each sorted, no duplicates, ids in ``[0, num_nodes)``."""

    offsets: np.ndarray
    targets: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.offsets) - 1

    @property
    def num_arcs(self) -> int:
        return int(self.offsets[-1])

    def successors(self, node: int) -> np.ndarray:
        return self.targets[self.offsets[node]:self.offsets[node + 1]]

    @classmethod
    def from_arcs(cls, num_nodes: int, sources: np.ndarray, targets: np.ndarray) -> Adjacency:
        """Build from arc arrays in any order; duplicate arcs are dropped."""
        sources = np.asarray(sources, dtype=np.int64)
        targets = np.asarray(targets, dtype=np.int64)
        if len(sources) and (min(sources.min(), targets.min()) < 0
                             or max(sources.max(), targets.max()) >= num_nodes):
            raise ValueError("arc endpoint outside [0, num_nodes)")
        keys = np.unique(sources * num_nodes + targets)
        src, dst = np.divmod(keys, num_nodes) if num_nodes else (keys, keys)
        offsets = np.zeros(num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=num_nodes), out=offsets[1:])
        return cls(offsets, dst.astype(np.int64))


class GraphSize(NamedTuple):
    """What :func:`write_bvgraph` wrote."""

    graph_bits: int
    offsets_bytes: int
    arcs: int
    nodes: int
    offsets: np.ndarray  # the bit position at which each list starts, and the end

def transpose(graph: Adjacency) -> Adjacency:
    """The transposed graph (predecessor lists), sorted."""
    n = graph.num_nodes
    sources = np.repeat(np.arange(n, dtype=np.int64), np.diff(graph.offsets))
    # a stable sort by target keeps sources ascending within each target
    order = np.argsort(graph.targets, kind="stable")
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(graph.targets, minlength=n), out=offsets[1:])
    return Adjacency(offsets, sources[order])


# -- writing -----------------------------------------------------------------


class _Codes:
    """Code items of a batch: per section, arrays (node, value, length)."""

    def __init__(self) -> None:
        self.parts: list[tuple[int, np.ndarray, np.ndarray, np.ndarray]] = []

    def add(self, section: int, node: np.ndarray, value: np.ndarray, length: np.ndarray) -> None:
        self.parts.append((section, node, value, length))

    def bits_per_node(self, lo: int, hi: int) -> np.ndarray:
        out = np.zeros(hi - lo, dtype=np.int64)
        for _, node, _, length in self.parts:
            out += np.bincount(node - lo, weights=length, minlength=hi - lo).astype(np.int64)
        return out

    def ordered(self) -> tuple[np.ndarray, np.ndarray]:
        """Values and lengths in stream order (node, then section, then item)."""
        keys = np.concatenate([node * 8 + section for section, node, _, _ in self.parts])
        order = np.argsort(keys, kind="stable")
        values = np.concatenate([v.astype(np.uint64) for _, _, v, _ in self.parts])
        lengths = np.concatenate([length for _, _, _, length in self.parts])
        return values[order], lengths[order]


def _runs(breaks: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Runs of an array cut where ``breaks`` is true: (start, length, run id of each item)."""
    run_id = np.cumsum(breaks) - 1
    starts = np.flatnonzero(breaks)
    return starts, np.bincount(run_id, minlength=len(starts)), run_id


def _code_blocks(codes: _Codes, ref_node: np.ndarray, in_current: np.ndarray, dist: int) -> None:
    """Copy blocks of nodes ``y + dist`` copying from ``y``: ``ref_node`` the
    referenced lists' arcs, ``in_current`` whether each is also a successor."""
    if len(ref_node) == 0:
        return
    brk = np.ones(len(ref_node), dtype=bool)
    brk[1:] = (ref_node[1:] != ref_node[:-1]) | (in_current[1:] != in_current[:-1])
    starts, lengths, _ = _runs(brk)
    node = ref_node[starts]
    copy = in_current[starts]
    first = np.ones(len(starts), dtype=bool)
    first[1:] = node[1:] != node[:-1]
    # blocks start with a copy block: an empty one when the list starts skipping
    pad = np.flatnonzero(first & ~copy)
    node = np.insert(node, pad, node[pad])
    lengths = np.insert(lengths, pad, 0)
    first = np.ones(len(node), dtype=bool)
    first[1:] = node[1:] != node[:-1]
    last = np.ones(len(node), dtype=bool)
    last[:-1] = node[1:] != node[:-1]
    # the last block is implicit; every block but the first is >= 1
    keep = ~last
    heads = node[first] + dist
    count = np.bincount(node[keep] - node[0], minlength=int(node[-1] - node[0]) + 1)
    v, ln = gamma_array(count[node[first] - node[0]])
    codes.add(2, heads, v, ln)
    v, ln = gamma_array(lengths[keep] - (~first[keep]))
    codes.add(3, node[keep] + dist, v, ln)


def _code_extras(codes: _Codes, node: np.ndarray, target: np.ndarray, min_interval: int,
                 zeta_k: int) -> None:
    """Intervals and residuals of the arcs not copied (sorted by node, target)."""
    if len(node) == 0:
        return
    heads = np.ones(len(node), dtype=bool)
    heads[1:] = node[1:] != node[:-1]
    in_interval = np.zeros(len(node), dtype=bool)
    if min_interval > 0:
        brk = heads.copy()
        brk[1:] |= target[1:] != target[:-1] + 1
        starts, lengths, run_id = _runs(brk)
        is_interval = lengths >= min_interval
        in_interval = is_interval[run_id]
        left, length, inode = target[starts[is_interval]], lengths[is_interval], node[starts[is_interval]]
        count = np.bincount(inode, minlength=int(node[-1]) + 1)[node[heads]] if len(inode) else \
            np.zeros(int(heads.sum()), dtype=np.int64)
        v, ln = gamma_array(count)
        codes.add(4, node[heads], v, ln)
        if len(left):
            ifirst = np.ones(len(left), dtype=bool)
            ifirst[1:] = inode[1:] != inode[:-1]
            prev_end = np.empty_like(left)
            prev_end[1:] = left[:-1] + length[:-1]
            gap = np.where(ifirst, int2nat_array(left - inode), left - prev_end - 1)
            gv, gl = gamma_array(gap)
            lv, ll = gamma_array(length - min_interval)
            codes.add(5, np.repeat(inode, 2), np.stack([gv, lv], 1).ravel(),
                      np.stack([gl, ll], 1).ravel())
    rnode, rtarget = node[~in_interval], target[~in_interval]
    if len(rnode):
        rfirst = np.ones(len(rnode), dtype=bool)
        rfirst[1:] = rnode[1:] != rnode[:-1]
        prev = np.empty_like(rtarget)
        prev[1:] = rtarget[:-1]
        gap = np.where(rfirst, int2nat_array(rtarget - rnode), rtarget - prev - 1)
        v, ln = zeta_array(gap, zeta_k)
        codes.add(6, rnode, v, ln)


class _Batch:
    """Nodes ``[lo, hi)`` with the ``window`` lists before them, for reference tests."""

    def __init__(self, graph: Adjacency, lo: int, hi: int, window: int) -> None:
        self.lo, self.hi = lo, hi
        base = max(0, lo - window)
        a0, a1 = int(graph.offsets[base]), int(graph.offsets[hi])
        self.cur = int(graph.offsets[lo]) - a0  # first arc of node lo
        self.target = graph.targets[a0:a1]
        degrees = np.diff(graph.offsets[base:hi + 1])
        self.node = np.repeat(np.arange(base, hi, dtype=np.int64), degrees)
        self.degree = degrees[lo - base:]
        self.all_degrees = degrees
        self.base = base
        self.n = max(graph.num_nodes, 1)
        self.keys = self.node * self.n + self.target

    def member(self, node: np.ndarray, target: np.ndarray) -> np.ndarray:
        """Whether each arc (node, target) is in the batch's graph."""
        query = node * self.n + target
        pos = np.searchsorted(self.keys, query)
        pos[pos == len(self.keys)] = 0
        return self.keys[pos] == query


def _code_candidate(batch: _Batch, dist: int, min_interval: int, zeta_k: int,
                    codes: _Codes | None = None, select: np.ndarray | None = None) -> _Codes:
    """Codes of the batch's lists referencing ``dist`` back (``select``: the nodes using it)."""
    codes = codes if codes is not None else _Codes()
    node, target = batch.node[batch.cur:], batch.target[batch.cur:]
    if select is not None:
        keep = select[node - batch.lo]
        node, target = node[keep], target[keep]
    extra = np.ones(len(node), dtype=bool)
    if dist > 0:
        extra = ~batch.member(node - dist, target)
        lo_ref = max(batch.lo - dist, 0)
        ref_arcs = slice(int(np.searchsorted(batch.node, lo_ref)),
                         int(np.searchsorted(batch.node, batch.hi - dist)))
        rnode, rtarget = batch.node[ref_arcs], batch.target[ref_arcs]
        if select is not None:
            keep = select[rnode + dist - batch.lo]
            rnode, rtarget = rnode[keep], rtarget[keep]
        _code_blocks(codes, rnode, batch.member(rnode + dist, rtarget), dist)
    _code_extras(codes, node[extra], target[extra], min_interval, zeta_k)
    return codes


def _choose_references(batch: _Batch, window: int, max_ref_count: int, min_interval: int,
                       zeta_k: int, ref_count: np.ndarray) -> np.ndarray:
    """Per node of the batch, the reference distance with the fewest bits."""
    lo, hi = batch.lo, batch.hi
    cost = [_code_candidate(batch, 0, min_interval, zeta_k).bits_per_node(lo, hi).tolist()]
    for dist in range(1, window + 1):
        bits = _code_candidate(batch, dist, min_interval, zeta_k).bits_per_node(lo, hi) + dist
        # a reference to an empty list (or before node 0) is never useful
        ref = np.arange(lo, hi) - dist
        ref_deg = np.where(ref >= 0, batch.all_degrees[np.maximum(ref - batch.base, 0)], 0)
        bits[ref_deg == 0] = 1 << 62
        cost.append(bits.tolist())
    degree = batch.degree.tolist()
    chosen = np.zeros(hi - lo, dtype=np.int64)
    counts = ref_count  # a global array: chains cross batch boundaries
    for i in range(hi - lo):
        x = lo + i
        if degree[i] == 0:
            counts[x] = 0
            continue
        best, best_bits = 0, cost[0][i]
        for dist in range(1, window + 1):
            if cost[dist][i] < best_bits and counts[x - dist] < max_ref_count:
                best, best_bits = dist, cost[dist][i]
        chosen[i] = best
        counts[x] = counts[x - best] + 1 if best else 0
    return chosen


def _code_batch(batch: _Batch, chosen: np.ndarray, window: int, min_interval: int,
                zeta_k: int) -> _Codes:
    """All codes of the batch's nodes, with the chosen references."""
    codes = _Codes()
    nodes = np.arange(batch.lo, batch.hi, dtype=np.int64)
    v, ln = gamma_array(batch.degree)
    codes.add(0, nodes, v, ln)
    if window > 0:
        has = batch.degree > 0
        codes.add(1, nodes[has], np.ones(int(has.sum()), dtype=np.uint64), chosen[has] + 1)
    for dist in np.unique(chosen).tolist():
        _code_candidate(batch, dist, min_interval, zeta_k, codes, select=chosen == dist)
    return codes


def write_bvgraph(basename: Path, graph: Adjacency, *, window: int = 7, max_ref_count: int = 3,
                  min_interval: int = 4, zeta_k: int = 3) -> GraphSize:
    """Compress ``graph`` into ``basename.graph``, ``.offsets``, ``.properties`` and ``.ef``."""
    from .webgraph_ef import ef_bytes  # a sibling module, imported late to keep this one readable

    if min_interval and min_interval < 2:
        raise ValueError(f"min_interval must be 0 or >= 2, got {min_interval}")
    basename = Path(basename)
    n = graph.num_nodes
    ref_count = np.zeros(n, dtype=np.int64)
    packer = BitPacker()
    node_bits = np.zeros(n, dtype=np.int64)
    for lo in range(0, n, _BATCH_NODES):
        hi = min(n, lo + _BATCH_NODES)
        batch = _Batch(graph, lo, hi, window)
        chosen = _choose_references(batch, window, max_ref_count, min_interval, zeta_k, ref_count) \
            if window > 0 else np.zeros(hi - lo, dtype=np.int64)
        codes = _code_batch(batch, chosen, window, min_interval, zeta_k)
        node_bits[lo:hi] = codes.bits_per_node(lo, hi)
        packer.write(*codes.ordered())
    # webgraph-rs reads the stream in 32-bit words (Java pads to 64): pad it
    graph_bytes = packer.getvalue()
    graph_bytes += b"\0" * (-len(graph_bytes) % 8)
    basename.with_suffix(".graph").write_bytes(graph_bytes)
    gaps = np.concatenate([[0], node_bits])
    offsets_packer = BitPacker()
    offsets_packer.write(*gamma_array(gaps))
    offsets_bytes = offsets_packer.getvalue()
    basename.with_suffix(".offsets").write_bytes(offsets_bytes)
    arcs, bits = graph.num_arcs, packer.bits
    properties = [
        "#BVGraph properties",
        "version=0",
        f"graphclass={GRAPH_CLASS}",
        f"nodes={n}",
        f"arcs={arcs}",
        f"windowsize={window}",
        f"maxrefcount={max_ref_count}",
        f"minintervallength={min_interval}",
        f"zetak={zeta_k}",
        # webgraph-rs reads zetak only with an explicit residual flag (Java always)
        "compressionflags=" + ("" if zeta_k == 3 else "RESIDUALS_ZETA"),
        f"bitsperlink={bits / arcs if arcs else 0:.3f}",
        f"length={bits}",
    ]
    basename.with_suffix(".properties").write_text("\n".join(properties) + "\n")
    basename.with_suffix(".ef").write_bytes(ef_bytes(np.cumsum(gaps), len(graph_bytes) * 8))
    return GraphSize(packer.bits, len(offsets_bytes), graph.num_arcs, n, np.cumsum(gaps))
