"""What Python's cyclic garbage collector costs a crawl, with our tuning
(extensions.collector, the default) and without (``GC_TUNING_ENABLED=False``).

    python -m bench.gc_cost --runs 3                 # the test web, 200 hosts x 20 pages
    python -m bench.gc_cost --long 40000 --runs 1    # RSS on a long crawl (bench.rss_growth's web)

The first form crawls the test web alternately with the tuning on and off
and prints medians: pages per CPU second, the collector's seconds and
collections per generation (``bench/gcprobe.py``, a ``gc.callbacks`` probe)
and peak RSS. The second stops each crawl at ``--long`` pages and prints
RSS at bench.rss_growth's checkpoints.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from bench import rss_growth
from bench.crawl_vs_scrapy import compile_bytecode, crawl_ours
from testweb import WebConfig, start_testweb
from testweb.crawlrun import ROOT

VARIANTS = {"tuning on": (), "tuning off": ("-s", "GC_TUNING_ENABLED=False")}
PROBE = ("-s", 'EXTENSIONS={"bench.gcprobe.GcProbe": 0}')


def short(args: argparse.Namespace) -> None:
    rows: dict[str, list[tuple[float, list[float], list[int], float]]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="bench-gc-") as tmp:
        workdir = Path(tmp)
        with start_testweb(WebConfig(hosts=args.hosts, pages=args.pages, links=8), workdir / "web") as web:
            for run in range(args.runs):
                for name, extra in VARIANTS.items():
                    rundir = workdir / f"{name.replace(' ', '-')}-{run}"
                    rundir.mkdir()
                    probe = rundir / "gc.json"
                    crawl = crawl_ours(web, rundir, 8, 64, args.timeout,
                                       (*extra, *PROBE, "-s", f"GC_PROBE_FILE={probe}"))
                    found = json.loads(probe.read_text())
                    rows[name].append((crawl.pages_per_cpu_second, found["seconds"], found["collections"],
                                       crawl.peak_rss_mb))
    print(f"test web {args.hosts} hosts x {args.pages} pages, CONCURRENT_REQUESTS=64, medians of {args.runs} runs")
    print(f"{'variant':<12}{'pages/CPU-s':>12}{'gc s (gen 0/1/2)':>24}{'collections':>18}{'peak RSS MB':>13}")
    for name, runs in rows.items():
        seconds = [statistics.median(run[1][g] for run in runs) for g in range(3)]
        counts = [int(statistics.median(run[2][g] for run in runs)) for g in range(3)]
        print(f"{name:<12}{statistics.median(run[0] for run in runs):>12.1f}"
              f"{' / '.join(f'{s:.3f}' for s in seconds):>24}{' / '.join(map(str, counts)):>18}"
              f"{statistics.median(run[3] for run in runs):>13.1f}")


def long(args: argparse.Namespace) -> None:
    options = argparse.Namespace(hosts=4000, pages=60, links=8, max_pages=args.long, concurrency=64,
                                 timeout=args.timeout)
    checkpoints = [int(args.long * fraction) for fraction in rss_growth.CHECKPOINT_FRACTIONS]
    print(f"long crawl: 4000 hosts x 60 pages, stopped at {args.long} pages; RSS MB at pages {checkpoints}")
    with tempfile.TemporaryDirectory(prefix="bench-gc-long-") as tmp:
        workdir = Path(tmp)
        with start_testweb(WebConfig(hosts=4000, pages=60, links=8, seed=1), workdir / "web") as web:
            for run in range(args.runs):
                for name, extra in VARIANTS.items():
                    rundir = workdir / f"{name.replace(' ', '-')}-{run}"
                    rundir.mkdir()
                    cmd, cwd, env = rss_growth.crawl_command("ours", web, rundir, options)
                    result = rss_growth.run_sampled("ours", [*cmd, *extra], cwd, env, rundir / "crawl.log", web,
                                                    args.long, args.timeout)
                    at = [round(result.rss_at(point) or 0) for point in checkpoints]
                    print(f"{name:<12} {result.pages} pages, {result.seconds:.0f} s, peak {result.peak_rss_mb:.0f} MB,"
                          f" at checkpoints {at}", flush=True)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--long", type=int, default=0, help="pages: the long crawl's RSS instead")
    args = parser.parse_args(argv)
    compile_bytecode(ROOT)
    (long if args.long else short)(args)


if __name__ == "__main__":
    main()
