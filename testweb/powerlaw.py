"""A power-law link graph over ``pl0000.test`` ...: AOPIC's importance test bed.

Off by default (``WebConfig.powerlaw_pages = 0``), so other webs and their
ground truths are unchanged. With ``powerlaw_pages = N`` the web gains N
pages on ``ceil(N / PAGES_PER_HOST)`` hosts; node ``n`` lives on host
``pl{n // PAGES_PER_HOST:04d}.test`` at ``/`` (the first node of a host) or
``/n/{n % PAGES_PER_HOST}.html``. Pages are HTML listing their out-neighbours
as absolute URLs; robots.txt answers 404. No other host links here: crawls
are seeded with :func:`seed_nodes` (the roots of the first :data:`SEEDS`
hosts).

The edges (:func:`build_graph`) are a pure function of ``(seed, N, links)``:

1. Reachability: the nodes in a random order, seeds first; every later
   non-seed node gets one in-link from a uniformly chosen earlier node that
   is not dangling (a random recursive tree, depth about ``ln N``).
2. Skew: every node except the dangling ones (:data:`DANGLING_SHARE`) gets
   between 1 and ``2 * links - 1`` more out-links. Each target is, with
   probability :data:`LOCAL_SHARE`, a uniform page of the same host, else a
   page drawn with Zipf weights ``rank ** -ZIPF_EXPONENT`` over a random
   ranking of all nodes (a static fitness model: in-degree is Zipf-skewed,
   and the popular pages are scattered over the web, not bunched near the
   seeds). Duplicate targets and self-links are dropped.

:func:`pagerank` is PageRank on that graph (power iteration, dangling
nodes' rank spread uniformly), the reference AOPIC's history is compared to.
"""

from __future__ import annotations

import random
import re
from bisect import bisect_right
from functools import lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING

from testweb.model import Link, Page, html_response, stable_int, words

if TYPE_CHECKING:
    from testweb.model import SiteModel

PAGES_PER_HOST = 20
SEEDS = 3
ZIPF_EXPONENT = 1.0
LOCAL_SHARE = 0.25
DANGLING_SHARE = 0.05
_HOST = re.compile(r"pl(\d{4,})\.test")
_PATH = re.compile(r"/n/([1-9]\d*)\.html")

Graph = tuple[tuple[int, ...], ...]  # node -> its out-neighbours, sorted


def host_count(pages: int) -> int:
    return -(-pages // PAGES_PER_HOST)


def host_names(pages: int) -> list[str]:
    return [f"pl{index:04d}.test" for index in range(host_count(pages))]


def node_host(node: int) -> str:
    return f"pl{node // PAGES_PER_HOST:04d}.test"


def node_path(node: int) -> str:
    local = node % PAGES_PER_HOST
    return "/" if local == 0 else f"/n/{local}.html"


def node_of(host: str, path: str, pages: int) -> int | None:
    """The node at ``host`` and canonical ``path``; None if there is none."""
    match = _HOST.fullmatch(host)
    if not match:
        return None
    local = 0 if path == "/" else None
    if (path_match := _PATH.fullmatch(path)) and int(path_match.group(1)) < PAGES_PER_HOST:
        local = int(path_match.group(1))
    if local is None:
        return None
    node = int(match.group(1)) * PAGES_PER_HOST + local
    return node if node < pages else None


def seed_nodes(pages: int) -> list[int]:
    """The roots of the first :data:`SEEDS` hosts."""
    return [index * PAGES_PER_HOST for index in range(min(SEEDS, host_count(pages)))]


@lru_cache(maxsize=4)
def build_graph(seed: int, pages: int, links: int) -> Graph:
    """The out-neighbours of every node (see the module docstring)."""
    if pages <= 0:
        return ()
    rng = random.Random(stable_int(seed, "powerlaw", pages, links))
    seeds = seed_nodes(pages)
    seed_set = set(seeds)
    dangling = {n for n in range(pages) if n not in seed_set and rng.random() < DANGLING_SHARE}
    out: list[set[int]] = [set() for _ in range(pages)]
    order = [n for n in range(pages) if n not in seed_set]
    rng.shuffle(order)
    parents = list(seeds)
    for node in order:  # 1. the random recursive tree
        out[rng.choice(parents)].add(node)
        if node not in dangling:
            parents.append(node)
    ranking = list(range(pages))
    rng.shuffle(ranking)
    cumulative = list(accumulate((rank + 1) ** -ZIPF_EXPONENT for rank in range(pages)))
    for node in range(pages):  # 2. the Zipf-skewed links
        if node in dangling:
            continue
        for _ in range(rng.randint(1, max(1, 2 * links - 1))):
            out[node].add(_target(rng, node, pages, ranking, cumulative))
        out[node].discard(node)
    return tuple(tuple(sorted(targets)) for targets in out)


def _target(rng: random.Random, node: int, pages: int, ranking: list[int],
            cumulative: list[float]) -> int:
    if rng.random() < LOCAL_SHARE:
        first = node - node % PAGES_PER_HOST
        return rng.randrange(first, min(first + PAGES_PER_HOST, pages))
    rank = bisect_right(cumulative, rng.random() * cumulative[-1])
    return ranking[min(rank, pages - 1)]


def in_degrees(graph: Graph) -> list[int]:
    degrees = [0] * len(graph)
    for targets in graph:
        for target in targets:
            degrees[target] += 1
    return degrees


def pagerank(graph: Graph, damping: float = 0.85, tolerance: float = 1e-12,
             max_iterations: int = 1000) -> list[float]:
    """PageRank by power iteration: ``r' = (1 - d) / N + d * (sum over
    in-links of r[j] / outdegree[j] + dangling / N)``, where ``dangling`` is
    the rank of nodes without out-links (spread uniformly, so the ranks keep
    summing to 1). Stops when the L1 change is below ``tolerance``."""
    count = len(graph)
    if count == 0:
        return []
    rank = [1.0 / count] * count
    for _ in range(max_iterations):
        dangling = sum(rank[node] for node, targets in enumerate(graph) if not targets)
        base = (1.0 - damping + damping * dangling) / count
        following = [base] * count
        for node, targets in enumerate(graph):
            if targets:
                share = damping * rank[node] / len(targets)
                for target in targets:
                    following[target] += share
        change = sum(abs(a - b) for a, b in zip(rank, following))
        rank = following
        if change < tolerance:
            break
    return rank


def powerlaw_page(model: SiteModel, host: str, target: str) -> Page | None:
    """The page of node (host, target), or None (robots.txt too: a 404)."""
    config = model.config
    node = node_of(host, target, config.powerlaw_pages)
    if node is None:
        return None
    graph = build_graph(config.seed, config.powerlaw_pages, config.links)
    links = [Link(model.url(node_host(n), node_path(n))) for n in graph[node]]
    rng = model.rng(host, target)
    return html_response(f"{host} node {node}", words(rng, 30), links)
