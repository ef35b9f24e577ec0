"""Whole-crawl cost of recording the link graph: ``LINKGRAPH_RECORD`` on versus off.

The same synthetic web crawled by ``scrapy crawl web`` with recording on
(the default) and off, and by a stock Scrapy CrawlSpider for scale, in
interleaved rounds (each round runs the three in a rotated order, so drift
on a shared machine hits each alike), ``--runs`` rounds. Pages/s come from
the test web's access log (:mod:`bench.crawl_vs_scrapy`, whose runners this
reuses); the table gives the median pages/s of each crawler and the median
of the per-round ratios on/off (paired, so a noisy round counts once). The
edges recorded come from the last run's ``JOBDIR/frontier.sqlite3``.

    python -m bench.linkgraph_record --hosts 200 --pages 20 --runs 5
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
from pathlib import Path

from bench.crawl_vs_scrapy import CrawlRun, crawl_ours, crawl_stock
from testweb import WebConfig, start_testweb

VARIANTS: dict[str, tuple[str, ...]] = {
    "recording on": ("-s", "LINKGRAPH_RECORD=True"),
    "recording off": ("-s", "LINKGRAPH_RECORD=False"),
    "stock scrapy": (),
}


def recorded(job: Path) -> tuple[int, int]:
    """``(pages, edges)`` recorded in a crawl's SQLite store."""
    db = sqlite3.connect(f"file:{job / 'frontier.sqlite3'}?mode=ro", uri=True)
    try:
        pages, size = db.execute("SELECT COUNT(*), COALESCE(SUM(LENGTH(targets)), 0) FROM links").fetchone()
    finally:
        db.close()
    return pages, size // 8


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--links", type=int, default=8)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)

    names = list(VARIANTS)
    runs: dict[str, list[CrawlRun]] = {name: [] for name in names}
    graph = (0, 0)
    config = WebConfig(hosts=args.hosts, pages=args.pages, links=args.links)
    with tempfile.TemporaryDirectory(prefix="bench-linkgraph-") as tmp:
        workdir = Path(tmp)
        with start_testweb(config, workdir / "web") as web:
            for run in range(args.runs):
                for name in names[run % len(names):] + names[:run % len(names)]:  # rotated order
                    rundir = workdir / f"{names.index(name)}-{run}"
                    rundir.mkdir()
                    if name == "stock scrapy":
                        result = crawl_stock(web, rundir, args.depth, args.concurrency, args.timeout)
                    else:
                        result = crawl_ours(web, rundir, args.depth, args.concurrency, args.timeout,
                                            VARIANTS[name], name)
                        if name == "recording on":
                            graph = recorded(rundir / "job")
                    runs[name].append(result)
    speed = {name: statistics.median(r.pages_per_second for r in values) for name, values in runs.items()}
    ratios = [on.pages_per_second / off.pages_per_second
              for on, off in zip(runs["recording on"], runs["recording off"]) if off.pages_per_second]
    print(f"link graph recording: {args.hosts} hosts x {args.pages} pages x {args.links} links, "
          f"depth {args.depth}, CONCURRENT_REQUESTS={args.concurrency}, {args.runs} interleaved rounds")
    print(f"{'crawler':<15}{'pages':>8}{'pages/s median':>16}{'min':>8}{'max':>8}{'peak RSS MB':>13}")
    for name, values in runs.items():
        per_run = [r.pages_per_second for r in values]
        print(f"{name:<15}{int(statistics.median(r.pages for r in values)):>8}{speed[name]:>16.1f}"
              f"{min(per_run):>8.1f}{max(per_run):>8.1f}{statistics.median(r.peak_rss_mb for r in values):>13.1f}")
    print(f"on/off: ratio of medians {speed['recording on'] / speed['recording off']:.3f}, "
          f"median of per-round ratios {statistics.median(ratios):.3f} "
          f"(rounds: {' '.join(f'{r:.3f}' for r in ratios)})")
    print(f"recorded (last run): {graph[0]} pages, {graph[1]} edges")


if __name__ == "__main__":
    main()
