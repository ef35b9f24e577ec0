"""AOPIC's importance evidence on the power-law web (:mod:`testweb.powerlaw`):
PageRank by URL, Spearman's rank correlation, discovery curves of the top
pages, AOPIC simulated on the graph, and crawls (``scrapy crawl web``) whose
fetch order and estimates are read back.

Used by ``tests/test_importance.py`` (the bounds) and ``bench/importance.py``
(the tables and the plot).
"""

from __future__ import annotations

import heapq
import json
import math
import sqlite3
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from testweb.crawlrun import run_web_crawl
from testweb.launch import TestWeb
from testweb.model import canonical_url
from testweb.powerlaw import Graph, build_graph, node_host, node_path, pagerank

TOP_SHARE = 0.1
BFS_SETTINGS = {"FRONTIER_AOPIC": False,
                "FRONTIER_PRIORITIZER": "extensions.frontier.prioritizer.FlatPrioritizer"}
MODES = {"aopic": {}, "bfs": BFS_SETTINGS}


# -- statistics ---------------------------------------------------------------

def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties given the average of the ranks they span."""
    order = sorted(range(len(values)), key=values.__getitem__)
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for position in range(start, end + 1):
            result[order[position]] = (start + end) / 2 + 1
        start = end + 1
    return result


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    mean_x, mean_y = statistics.fmean(xs), statistics.fmean(ys)
    covariance = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys))
    spread = math.sqrt(sum((x - mean_x) ** 2 for x in xs) * sum((y - mean_y) ** 2 for y in ys))
    return covariance / spread if spread else float("nan")


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Spearman's rho: Pearson's correlation of the (tie-averaged) ranks."""
    if len(xs) != len(ys) or len(xs) < 2:
        raise ValueError(f"spearman needs two equally long series of 2+ values, got {len(xs)}, {len(ys)}")
    return pearson(ranks(xs), ranks(ys))


def top_pages(scores: dict[str, float], share: float = TOP_SHARE) -> set[str]:
    """The ``share`` of URLs with the highest scores (at least one)."""
    count = max(1, math.ceil(len(scores) * share))
    return set(sorted(scores, key=lambda url: (-scores[url], url))[:count])


def discovery_curve(order: Sequence[str], top: set[str], budget: int) -> list[float]:
    """After k = 1 .. ``budget`` fetches: the fraction of ``top`` fetched."""
    curve, found, seen = [], 0, set()
    for url in list(order[:budget]) + [None] * max(0, budget - len(order)):
        if url is not None and url in top and url not in seen:
            found += 1
            seen.add(url)
        curve.append(found / len(top))
    return curve


def area(curve: Sequence[float]) -> float:
    """Normalised area under a discovery curve (its mean)."""
    return statistics.fmean(curve) if curve else 0.0


# -- the web and its PageRank -------------------------------------------------

def pagerank_by_url(web: TestWeb) -> dict[str, float]:
    config = web.config
    graph = build_graph(config.seed, config.powerlaw_pages, config.links)
    return {canonical_url(web.url(node_host(n), node_path(n))): rank
            for n, rank in enumerate(pagerank(graph))}


# -- AOPIC without a crawler ---------------------------------------------------

def simulate_aopic(graph: Graph, seeds: Sequence[int], tax: float = 0.1,
                   passes: int = 1) -> tuple[list[float], list[float], list[int]]:
    """AOPIC as the paper states it, on the graph itself: always fetch the
    known page with the most cash (each at most ``passes`` times; OPIC proper
    revisits forever), Lambda crawled when richer. Return history, cash and
    fetch order: the reference for what the crawler's AOPIC could reach.

    Lambda's spread is lazy (``dividend`` per known page, ``mark`` at
    discovery), so the heap key ``cash - mark`` orders pages by cash."""
    count = len(graph)
    cash, history, mark = [0.0] * count, [0.0] * count, [0.0] * count
    visits, known = [0] * count, set(seeds)
    lambda_cash, dividend, order = 0.0, 0.0, []
    heap = [(-1.0, seed) for seed in seeds]
    for seed in seeds:
        cash[seed] = 1.0
    while heap:
        key, node = heapq.heappop(heap)
        if visits[node] >= passes or -key != cash[node] - mark[node]:
            continue  # a stale heap entry
        if lambda_cash > cash[node] + dividend - mark[node]:
            dividend += lambda_cash / len(known)
            lambda_cash = 0.0
        taken = cash[node] + dividend - mark[node]
        history[node] += taken
        cash[node], mark[node] = 0.0, dividend
        visits[node] += 1
        order.append(node)
        targets = graph[node]
        lambda_cash += taken * tax if targets else taken
        share = taken * (1 - tax) / len(targets) if targets else 0.0
        for target in targets:
            if target not in known:
                known.add(target)
                mark[target] = dividend
            cash[target] += share
            if visits[target] < passes:
                heapq.heappush(heap, (-(cash[target] - mark[target]), target))
        if visits[node] < passes:
            heapq.heappush(heap, (-(cash[node] - mark[node]), node))
    return history, [c + dividend - m for c, m in zip(cash, mark)], order


# -- crawling -----------------------------------------------------------------

@dataclass
class Crawl:
    """What one crawl did: its fetch order and AOPIC's estimates per URL."""

    mode: str
    order: list[str]
    history: dict[str, float] = field(default_factory=dict)
    estimate: dict[str, float] = field(default_factory=dict)  # history + cash
    seconds: float = 0.0


def crawl_settings(web: TestWeb, workdir: Path, mode: str, budget: int,
                   concurrency: int) -> dict[str, object]:
    """Settings under which priority, not politeness, decides the order:
    few concurrent requests against many hosts, no delay, one request per host."""
    return {
        "DNS_HOSTS": web.hosts_file, "JOBDIR": workdir / "job",
        "CONCURRENT_REQUESTS": concurrency, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0, "CLOSESPIDER_PAGECOUNT": budget, "PROGRESS_INTERVAL": 0,
        **MODES[mode.removesuffix("-full")],
    }


def run_crawl(web: TestWeb, workdir: Path, mode: str, budget: int, concurrency: int,
              timeout: float, extra: dict[str, object] | None = None) -> Crawl:
    """One ``scrapy crawl web`` from the power-law seeds, stopped after at
    least ``budget`` pages (0: all)."""
    responses = budget + len(web.model.powerlaw_hosts) + 4 * concurrency if budget else 0
    settings = {**crawl_settings(web, workdir, mode, responses, concurrency), **(extra or {})}
    web.flush()
    since = time.time()
    result = run_web_crawl(workdir, ",".join(web.powerlaw_seeds()), settings, timeout=timeout,
                           robots_overrides=False)
    until = time.time()
    if result.returncode != 0:
        raise RuntimeError(f"{mode} crawl exited {result.returncode}:\n{result.log[-2000:]}")
    order = fetch_order(web, since, until)
    crawl = Crawl(mode, order, read_history(workdir / "items.jsonl"), {}, until - since)
    crawl.estimate = read_estimates(workdir / "job" / "frontier.sqlite3")
    return crawl


def fetch_order(web: TestWeb, since: float, until: float) -> list[str]:
    """Canonical URLs of the power-law pages served in [since, until], in
    request order, each once."""
    hosts = set(web.model.powerlaw_hosts)
    entries = sorted((e for e in web.entries() if since <= e.start <= until and e.host in hosts
                      and e.path != "/robots.txt" and e.status == 200), key=lambda e: e.start)
    order, seen = [], set()
    for entry in entries:
        url = canonical_url(web.url(entry.host, entry.path))
        if url not in seen:
            seen.add(url)
            order.append(url)
    return order


def read_history(items_file: Path) -> dict[str, float]:
    """URL -> the ``importance`` (AOPIC history) of each fetched HTML page."""
    history = {}
    if items_file.exists():
        for line in items_file.read_text().splitlines():
            item = json.loads(line) if line.strip() else {}
            if item.get("status") == 200 and item.get("importance") is not None:
                history[canonical_url(item["url"])] = float(item["importance"])
    return history


def read_estimates(database: Path) -> dict[str, float]:
    """URL -> history + cash (unpaid Lambda dividends included) at the end."""
    if not database.exists():
        return {}
    with sqlite3.connect(database) as db:
        saved = db.execute("SELECT value FROM meta WHERE key = 'aopic'").fetchone()
        dividend = float(saved[0].split(",")[1]) if saved else 0.0
        rows = db.execute("SELECT u.url, c.cash + (? - c.mark) + c.history FROM cash c "
                          "JOIN urls u USING (fingerprint) WHERE u.status = 2", (dividend,))
        return {canonical_url(url): value for url, value in rows}


# -- comparing with PageRank ------------------------------------------------

def correlation(scores: dict[str, float], estimates: dict[str, float]) -> float:
    urls = sorted(set(estimates) & set(scores))
    if len(urls) < 2:
        return float("nan")
    return spearman([estimates[u] for u in urls], [scores[u] for u in urls])


def order_correlation(scores: dict[str, float], order: Sequence[str]) -> float:
    """Spearman between PageRank and earliness (first fetched: highest)."""
    urls = [url for url in order if url in scores]
    if len(urls) < 2:
        return float("nan")
    return spearman([-position for position in range(len(urls))], [scores[u] for u in urls])
