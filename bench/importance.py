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
import math
import statistics
import tempfile
from collections.abc import Iterator
from pathlib import Path

from testweb import TestWeb, WebConfig, start_testweb
from testweb.importance import (
    TOP_SHARE, Crawl, area, correlation, discovery_curve, order_correlation, pagerank_by_url,
    run_crawl, simulate_aopic, top_pages,
)
from testweb.model import canonical_url
from testweb.powerlaw import build_graph, node_host, node_path, seed_nodes


def ideal_curve(top: int, budget: int) -> list[float]:
    return [min(k, top) / top for k in range(1, budget + 1)]


# -- the report ---------------------------------------------------------------

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
