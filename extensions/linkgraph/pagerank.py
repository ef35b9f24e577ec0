"""PageRank by power iteration (dangling mass spread over every page, so
scores sum to 1), and Spearman's rank correlation (ties get their average
rank), with which AOPIC's history is compared to PageRank."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DAMPING = 0.85


@dataclass(frozen=True, slots=True)
class PageRank:
    """Scores by node id (summing to 1), and how the iteration ended."""

    scores: np.ndarray
    iterations: int
    delta: float  # L1 change of the last iteration


def pagerank(offsets: np.ndarray, targets: np.ndarray, *, damping: float = DAMPING,
             tolerance: float = 1e-10, max_iterations: int = 200) -> PageRank:
    """PageRank of the CSR graph, until an iteration moves the scores by less than ``tolerance``."""
    if not 0.0 <= damping < 1.0:
        raise ValueError(f"damping must be in [0, 1), got {damping!r}")
    nodes = len(offsets) - 1
    if nodes <= 0:
        return PageRank(np.zeros(0), 0, 0.0)
    outdegree = np.diff(offsets).astype(np.float64)
    sources = np.repeat(np.arange(nodes), np.diff(offsets))
    dangling = outdegree == 0
    share = np.divide(1.0, outdegree, out=np.zeros(nodes), where=~dangling)
    scores = np.full(nodes, 1.0 / nodes)
    delta, iterations = float("inf"), 0
    while iterations < max_iterations and delta >= tolerance:
        spread = np.bincount(targets, weights=(scores * share)[sources], minlength=nodes)
        base = (1.0 - damping + damping * scores[dangling].sum()) / nodes
        updated = damping * spread + base
        delta = float(np.abs(updated - scores).sum())
        scores, iterations = updated, iterations + 1
    return PageRank(scores, iterations, delta)


def ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks of ``values``, ties sharing their average rank."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], len(values)]
    average = (starts + ends + 1) / 2.0  # mean of ranks start+1 .. end
    result = np.empty(len(values))
    result[order] = np.repeat(average, ends - starts)
    return result


def spearman(first: np.ndarray, second: np.ndarray) -> float:
    """Spearman's rho of two equally long samples (NaN if either is constant or short)."""
    if len(first) != len(second):
        raise ValueError(f"samples differ in length: {len(first)} and {len(second)}")
    if len(first) < 2:
        return float("nan")
    a, b = ranks(first), ranks(second)
    a, b = a - a.mean(), b - b.mean()
    norm = float(np.sqrt((a * a).sum() * (b * b).sum()))
    return float((a * b).sum() / norm) if norm > 0 else float("nan")
