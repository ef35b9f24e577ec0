"""Whole-crawl cost of recording the link graph: ``LINKGRAPH_RECORD`` on versus off.

The same synthetic web crawled by ``scrapy crawl web`` with recording on
(the default) and off, and by a stock Scrapy CrawlSpider for scale, in
interleaved rounds (each round runs the three in a rotated order, so drift
on a shared machine hits each alike), ``--runs`` rounds. Pages/s come from
the test web's access log (:mod:`bench.crawl_vs_scrapy`, whose runners this
reuses); the table gives the median pages/s of each crawler and the median
of the per-round ratios on/off (paired, so a noisy round counts once). The
edges recorded come from the last run's ``JOBDIR/frontier.sqlite3``. A second
figure times ``Frontier.page_done`` alone, on and off (:func:`page_done_cost`),
and relates the difference to the crawl's time per page.

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


def page_done_cost(pages: int = 5000, links: int = 8, repeats: int = 5) -> dict[bool, float]:
    """Microseconds per ``Frontier.page_done`` (AOPIC on, SQLite store,
    ``links`` links a page) with recording on and off: medians of
    ``repeats`` interleaved runs over fresh stores. The in-process cost the
    whole-crawl figure hides in its noise."""
    import time  # noqa: PLC0415

    from extensions.aopic.ledger import AOPICLedger  # noqa: PLC0415
    from testweb.frontierargs import frontier_arguments  # noqa: PLC0415
    from extensions.frontier.page import PageVerdict  # noqa: PLC0415
    from extensions.frontier.prioritizer import CashPrioritizer  # noqa: PLC0415
    from extensions.frontier.scheduler import Frontier  # noqa: PLC0415
    from extensions.backends.sqlite.store import SQLiteStore  # noqa: PLC0415

    verdicts = [PageVerdict(f"http://h{i % 200}.test/p/{i}.html",
                            [f"http://h{(i + k * 7) % 200}.test/p/{i * 3 + k}.html" for k in range(links)])
                for i in range(pages)]
    timings: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory(prefix="bench-linkgraph-micro-") as tmp:
        for repeat in range(repeats):
            for on in (True, False) if repeat % 2 == 0 else (False, True):
                store = SQLiteStore(Path(tmp) / f"{repeat}-{on}.sqlite3")
                frontier = Frontier(store, **frontier_arguments(
                    ledger=AOPICLedger(store), prioritizer=CashPrioritizer(8), linkgraph_record=on))
                frontier.open(None)
                start = time.perf_counter()
                for verdict in verdicts:
                    frontier.page_done(verdict)
                store.commit()
                timings[on].append((time.perf_counter() - start) / pages * 1e6)
                frontier.close("finished")
    return {on: statistics.median(values) for on, values in timings.items()}


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
    micro = page_done_cost(links=args.links)
    budget = 1e6 / speed["recording off"]  # microseconds of crawl per page
    extra = micro[True] - micro[False]
    print(f"Frontier.page_done (AOPIC on, SQLite, {args.links} links), median us/page: "
          f"on {micro[True]:.1f}, off {micro[False]:.1f}; recording adds {extra:.1f} us/page = "
          f"{100 * extra / budget:.2f}% of the crawl's {budget:.0f} us/page (recording off)")


if __name__ == "__main__":
    main()
