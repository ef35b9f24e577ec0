"""How long one refresh of the crawl report takes (``REPORT_DIR``).

Runs ``make demo``'s crawl of the synthetic web (30 hosts x 30 pages by
default) with the report refreshed every ``--interval`` seconds, several
times, and prints per run the refreshes made and skipped (a tick that found
the previous refresh still drawing) and the seconds one refresh took in the
worker thread (mean and max, from the crawl's ``report/*`` stats), then the
medians. The machine is shared: the figures are noisy, an upper bound.
``--screenshot PATH`` saves headless Chromium's picture of the last run's
report (the README's ``docs/report.png``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.demo import demo_settings  # noqa: E402
from testweb import WebConfig, start_testweb  # noqa: E402
from testweb.browser import screenshot  # noqa: E402
from testweb.crawlrun import run_web_crawl  # noqa: E402


def one_run(workdir: Path, args: argparse.Namespace) -> dict[str, float]:
    with start_testweb(WebConfig(hosts=args.hosts, pages=args.pages), workdir / "web") as web:
        settings = {**demo_settings(web, workdir, args.depth), "REPORT_INTERVAL": args.interval}
        result = run_web_crawl(workdir, str(web.seeds_file), settings, timeout=1800, robots_overrides=False)
    if result.returncode != 0:
        raise SystemExit(f"crawl failed ({result.returncode}); see {workdir}/crawl.log")
    stats = result.stats
    refreshes = stats.get("report/refreshes", 0)
    return {"pages": result.report["pages"], "elapsed": result.report["elapsed"], "refreshes": refreshes,
            "skipped": stats.get("report/skipped", 0),
            "mean": stats.get("report/render_seconds_total", 0.0) / max(refreshes, 1),
            "max": stats.get("report/render_seconds_max", 0.0)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=30)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--interval", type=float, default=2.0)
    parser.add_argument("--screenshot", type=Path, help="save a screenshot of the last run's report")
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="report-bench-") as tmp:
        for run in range(args.runs):
            rows.append(one_run(Path(tmp) / f"run{run}", args))
        if args.screenshot:
            report = Path(tmp) / f"run{args.runs - 1}" / "report" / "index.html"
            screenshot(report.as_uri(), args.screenshot.resolve(), width=1400, height=1900)
    print(f"report refresh time: {args.hosts} hosts x {args.pages} pages, REPORT_INTERVAL={args.interval}")
    print(f"{'run':>4} {'pages':>6} {'crawl s':>8} {'refreshes':>9} {'skipped':>7} {'mean s':>7} {'max s':>7}")
    for run, row in enumerate(rows):
        print(f"{run:>4} {row['pages']:>6} {row['elapsed']:>8.1f} {row['refreshes']:>9} {row['skipped']:>7} "
              f"{row['mean']:>7.3f} {row['max']:>7.3f}")
    print(f"{'median':>6} {'':>13} {'':>9} {'':>7} {statistics.median(r['mean'] for r in rows):>7.3f} "
          f"{statistics.median(r['max'] for r in rows):>7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
