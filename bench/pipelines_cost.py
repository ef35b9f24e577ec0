"""Whole-crawl cost of the page verdicts: content-seen and AOPIC on versus off.

The same synthetic web crawled by ``scrapy crawl web`` in four variants,
alternating, ``--runs`` times (medians): everything on (the defaults),
content-seen off (``CONTENTSEEN_ENABLED=False``), AOPIC off
(``FRONTIER_AOPIC=False``: Mercator's depth prioritiser), and both off.
Pages/s come from the test web's access log, as in
:mod:`bench.crawl_vs_scrapy`, whose crawl runner this reuses.

    python -m bench.pipelines_cost --hosts 200 --pages 20 --runs 3
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from bench.crawl_vs_scrapy import CrawlRun, crawl_ours, median_run
from testweb import WebConfig, start_testweb

VARIANTS: dict[str, tuple[str, ...]] = {
    "all on": (),
    "content-seen off": ("-s", "CONTENTSEEN_ENABLED=False"),
    "AOPIC off": ("-s", "FRONTIER_AOPIC=False",
                  "-s", "FRONTIER_PRIORITIZER=extensions.frontier.prioritizer.DepthPrioritizer"),
    "both off": ("-s", "CONTENTSEEN_ENABLED=False", "-s", "FRONTIER_AOPIC=False",
                 "-s", "FRONTIER_PRIORITIZER=extensions.frontier.prioritizer.DepthPrioritizer"),
}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)

    runs: dict[str, list[CrawlRun]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bench-pipelines-") as tmp:
        workdir = Path(tmp)
        with start_testweb(WebConfig(hosts=args.hosts, pages=args.pages), workdir / "web") as web:
            for run in range(args.runs):
                for index, (name, extra) in enumerate(VARIANTS.items()):
                    rundir = workdir / f"{index}-{run}"
                    rundir.mkdir()
                    runs[name].append(crawl_ours(web, rundir, args.depth, args.concurrency,
                                                 args.timeout, extra, name))
    medians = {name: median_run(values) for name, values in runs.items()}
    base = medians["both off"].pages_per_second
    print(f"page verdicts: {args.hosts} hosts x {args.pages} pages, depth {args.depth}, "
          f"CONCURRENT_REQUESTS={args.concurrency}, medians of {args.runs} runs")
    print(f"{'variant':<18}{'pages':>8}{'seconds':>10}{'pages/s':>10}{'vs both off':>13}{'peak RSS MB':>13}")
    for name, r in medians.items():
        ratio = r.pages_per_second / base if base else float("nan")
        print(f"{name:<18}{r.pages:>8}{r.seconds:>10.2f}{r.pages_per_second:>10.1f}"
              f"{ratio:>13.2f}{r.peak_rss_mb:>13.1f}")


if __name__ == "__main__":
    main()
