"""AOPIC's importance evidence: history against PageRank, and the order in
which AOPIC and breadth-first crawls reach the most important pages.

The synthetic web gets a power-law graph (:mod:`testweb.powerlaw`);
PageRank (damping 0.85) is computed on that graph. Each run crawls it
(``scrapy crawl web`` subprocesses, one web, alternating):

* ``aopic``: the defaults (AOPIC cash, the cash prioritiser), stopped soon
  after ``--budget`` pages (``CLOSESPIDER_PAGECOUNT`` counts robots.txt
  responses too, so it gets one per host and some slack; the curves use the
  first ``--budget`` pages fetched);
* ``bfs``: ``FRONTIER_AOPIC=False`` and the ``FlatPrioritizer`` (one FIFO
  front queue: breadth-first), same budget;
* ``aopic-full``: AOPIC without a budget and with ``--full-revisits`` OPIC
  revisits (default 6), for the correlation over all pages.

Fetch order is read off the test web's access log (request start times).
Printed: Spearman's rank correlation between PageRank and AOPIC's estimates
(``history``: the ``importance`` items carry, the cash a page held when it
was fetched; ``history+cash``: OPIC's estimate, the history plus the cash
that reached the page after its fetch, read from ``JOBDIR/frontier.sqlite3``
at the end), the same for AOPIC simulated on the graph (strictly
richest first, one pass and five: what the crawler could reach, and what
OPIC's revisits add), and the curve "fraction of the top-10% PageRank pages fetched"
against pages fetched, for AOPIC and breadth-first, as a table at 10%, 20%
.. 100% of the budget with the normalised area under each curve (1.0: every
top page first). Medians over ``--runs``; the curves go to a PNG (``--out``).

    python -m bench.importance --pages 4000 --budget 1000 --runs 3 --out importance.png
"""

from __future__ import annotations

import argparse
import heapq
import json
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from testweb import TestWeb, WebConfig, canonical_url, read_access_log, start_testweb
from testweb.powerlaw import Graph, build_graph, node_host, node_path, pagerank, seed_nodes

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
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


def ideal_curve(top: int, budget: int) -> list[float]:
    return [min(k, top) / top for k in range(1, budget + 1)]


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


def simulation_lines(web: TestWeb, scores: dict[str, float], budget: int) -> list[str]:
    """Spearman and area of the simulated greedy AOPIC (one pass, five passes)."""
    config = web.config
    graph = build_graph(config.seed, config.powerlaw_pages, config.links)
    urls = [canonical_url(web.url(node_host(n), node_path(n))) for n in range(len(graph))]
    top, lines = top_pages(scores), []
    for passes in (1, 5):
        history, cash, order = simulate_aopic(graph, seed_nodes(config.powerlaw_pages), passes=passes)
        estimate = {url: h + c for url, h, c in zip(urls, history, cash)}
        rho_history = correlation(scores, dict(zip(urls, history)))
        line = (f"{'simulated':<11} {passes} pass{'es' if passes > 1 else '  '}   greedy: "
                f"history {rho_history:.3f}, history+cash {correlation(scores, estimate):.3f}")
        if passes == 1:  # with revisits a budget of fetches is not one of pages
            line += f", area {area(discovery_curve([urls[n] for n in order], top, budget)):.3f}"
        lines.append(line)
    return lines


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
        "ALLOW_PRIVATE_ADDRESSES": True, "DNS_HOSTS": web.hosts_file, "JOBDIR": workdir / "job",
        "CONCURRENT_REQUESTS": concurrency, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0, "CLOSESPIDER_PAGECOUNT": budget, "LOG_LEVEL": "INFO",
        "LOG_FILE": workdir / "crawl.log", "PROGRESS_INTERVAL": 0,
        **MODES[mode.removesuffix("-full")],
    }


def run_crawl(web: TestWeb, workdir: Path, mode: str, budget: int, concurrency: int,
              timeout: float, extra: dict[str, object] | None = None) -> Crawl:
    """One ``scrapy crawl web`` from the power-law seeds, stopped after at
    least ``budget`` pages (0: all)."""
    workdir.mkdir(parents=True, exist_ok=True)
    responses = budget + len(web.model.powerlaw_hosts) + 4 * concurrency if budget else 0
    settings = {**crawl_settings(web, workdir, mode, responses, concurrency), **(extra or {})}
    command = [SCRAPY, "crawl", "web", "-a", "seeds=" + ",".join(web.powerlaw_seeds()),
               "-O", str(workdir / "items.jsonl")]
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    web.flush()
    since = time.time()
    subprocess.run(command, cwd=ROOT, env=dict(os.environ), timeout=timeout, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    until = time.time()
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


# -- the report ---------------------------------------------------------------

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


def median_curve(curves: list[list[float]]) -> list[float]:
    return [statistics.median(values) for values in zip(*curves)]


def curve_table(curves: dict[str, list[float]], budget: int) -> str:
    names = list(curves)
    lines = [f"{'fetched':>8} {'% budget':>8} " + " ".join(f"{name:>8}" for name in names)]
    for tenth in range(1, 11):
        k = max(1, round(budget * tenth / 10))
        lines.append(f"{k:>8} {tenth * 10:>7}% " + " ".join(f"{curves[n][k - 1]:>8.3f}" for n in names))
    lines.append(f"{'area':>8} {'':>8} " + " ".join(f"{area(curves[n]):>8.3f}" for n in names))
    return "\n".join(lines)


def plot(curves: dict[str, list[float]], path: Path, title: str) -> None:
    import matplotlib  # noqa: PLC0415 - only the benchmark draws

    matplotlib.use("Agg")
    from matplotlib import pyplot  # noqa: PLC0415

    figure, axes = pyplot.subplots(figsize=(7, 4.5))
    styles = {"aopic": "-", "bfs": "--", "ideal": ":", "random": ":"}
    for name, curve in curves.items():
        axes.plot(range(1, len(curve) + 1), curve, styles.get(name, "-"), label=name)
    axes.set_xlabel("pages fetched")
    axes.set_ylabel(f"fraction of the top {TOP_SHARE:.0%} PageRank pages fetched")
    axes.set_title(title, fontsize=9)
    axes.set_ylim(0, 1.02)
    axes.grid(alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=4000, help="power-law graph size")
    parser.add_argument("--links", type=int, default=8, help="mean out-links per page")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--budget", type=int, default=0, help="CLOSESPIDER_PAGECOUNT (0: pages / 4)")
    parser.add_argument("--concurrency", type=int, default=4, help="CONCURRENT_REQUESTS")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-full", action="store_true", help="skip the full AOPIC crawl")
    parser.add_argument("--full-revisits", type=int, default=6,
                        help="FRONTIER_AOPIC_REVISITS of the full AOPIC crawl (OPIC passes - 1)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per crawl")
    parser.add_argument("--out", type=Path, default=Path("importance.png"))
    parser.add_argument("-s", dest="extra", action="append", default=[],
                        help="NAME=VALUE added to every crawl (e.g. FRONTIER_FRONT_QUEUE_WEIGHTS)")
    args = parser.parse_args(argv)
    budget = args.budget or args.pages // 4
    extra = dict(item.split("=", 1) for item in args.extra)
    config = WebConfig(hosts=1, pages=1, links=args.links, seed=args.seed, powerlaw_pages=args.pages)
    results: dict[str, list[Crawl]] = {"aopic": [], "bfs": [], "aopic-full": []}
    with tempfile.TemporaryDirectory(prefix="bench-importance-") as tmp:
        with start_testweb(config, Path(tmp) / "web") as web:
            scores = pagerank_by_url(web)
            simulated = simulation_lines(web, scores, budget)
            for run in range(args.runs):
                modes = ["aopic", "bfs"] if run % 2 == 0 else ["bfs", "aopic"]
                for mode in modes + ([] if args.no_full else ["aopic-full"]):
                    limit = 0 if mode == "aopic-full" else budget
                    settings = {**extra, "FRONTIER_AOPIC_REVISITS": args.full_revisits} \
                        if mode == "aopic-full" else extra
                    results[mode].append(run_crawl(web, Path(tmp) / f"{mode}-{run}", mode, limit,
                                                   args.concurrency, args.timeout, settings))
    report(results, scores, budget, args, simulated)


def report(results: dict[str, list[Crawl]], scores: dict[str, float], budget: int,
           args: argparse.Namespace, simulated: list[str]) -> None:
    top = top_pages(scores)
    curves = {mode: median_curve([discovery_curve(c.order, top, budget) for c in results[mode]])
              for mode in ("aopic", "bfs")}
    curves["ideal"] = ideal_curve(len(top), budget)
    curves["random"] = [k / len(scores) for k in range(1, budget + 1)]  # no order at all
    print(f"power-law web: {len(scores)} pages on {len(scores) // 20} hosts, seed {args.seed}; "
          f"budget {budget} pages; CONCURRENT_REQUESTS={args.concurrency}; "
          f"top {TOP_SHARE:.0%} = {len(top)} pages; medians of {args.runs} runs")
    print("Spearman vs PageRank over the pages each crawl fetched (n/a: no AOPIC):")
    for mode, crawls in results.items():
        if crawls:
            print(correlation_line(mode, crawls, scores))
    print("\n".join(simulated))
    print("fraction of the top pages fetched after k fetches:")
    print(curve_table(curves, budget))
    aucs = f"AUC aopic {area(curves['aopic']):.3f}, bfs {area(curves['bfs']):.3f}"
    plot(curves, args.out, f"{len(scores)}-page power-law web, budget {budget}, "
         f"medians of {args.runs} runs ({aucs})")
    print(f"plot: {args.out}")


def correlation_line(mode: str, crawls: list[Crawl], scores: dict[str, float]) -> str:
    def median(values: Iterator[float]) -> str:
        value = statistics.median(values)
        return "n/a" if math.isnan(value) else f"{value:.3f}"

    fetched = statistics.median(len(c.order) for c in crawls)
    seconds = statistics.median(c.seconds for c in crawls)
    return (f"{mode:<11} {fetched:>5.0f} pages {seconds:5.1f} s: "
            f"history {median(correlation(scores, c.history) for c in crawls)}, "
            f"history+cash {median(correlation(scores, c.estimate) for c in crawls)}, "
            f"fetch order {median(order_correlation(scores, c.order) for c in crawls)}")


if __name__ == "__main__":
    main()
