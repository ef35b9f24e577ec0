"""What crash safety costs and what it saves: checkpoints only versus write-ahead.

Two variants of the same crawl of the synthetic web (``JOBDIR`` set):

* ``checkpoint``: ``FRONTIER_WRITE_AHEAD=False``, the URL database commits
  every ``FRONTIER_CHECKPOINT_INTERVAL`` (5 s), as before;
* ``write-ahead``: the default, a commit before each request is handed out.

Throughput: each variant crawls to the end ``--runs`` times, alternating;
pages/s from the test web's access log (first request start to last response
end), medians. Refetches: on a fresh web per variant, ``--kills`` SIGKILLs
at random moments (``--min-gap`` to ``--max-gap`` seconds after each run's first fetch),
each followed by the same command, then a run to the end; a refetch is a
fetch of a URL whose previous answer was not a 5xx (retries of a 5xx are on
purpose); "in flight" is the count of rows with status inflight in the
database right after each kill. Timing figures on a shared machine are noisy.

    python -m bench.crash_safety --hosts 200 --pages 20 --runs 3 --kills 3
"""

from __future__ import annotations

import argparse
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.crawl_vs_scrapy import ROOT as _ROOT, SCRAPY, CrawlRun, crawl_ours, median_run  # noqa: E402
from testweb import WebConfig, read_access_log, start_testweb  # noqa: E402
from extensions.urls.canonical import canonicalize  # noqa: E402

VARIANTS = {"checkpoint": ("-s", "FRONTIER_WRITE_AHEAD=False"), "write-ahead": ("-s", "FRONTIER_WRITE_AHEAD=True")}


def crawl_command(web, job: Path, depth: int, concurrency: int, extra: tuple[str, ...]) -> list[str]:
    """The same command every time (the user's 'same command' after a kill)."""
    return [SCRAPY, "crawl", "web", "-a", f"seeds={web.seeds_file}",
            "-s", f"DNS_HOSTS={web.hosts_file}", "-s", f"DEPTH_LIMIT={depth}",
            "-s", f"CONCURRENT_REQUESTS={concurrency}", "-s", "LOG_LEVEL=INFO",
            "-s", f"JOBDIR={job}", "-s", "ALLOW_PRIVATE_ADDRESSES=True",
            "-s", "ROBOTSTXT_UNREACHABLE_PERIOD=0", *extra]


def in_flight(job: Path) -> int:
    reader = sqlite3.connect(job / "frontier.sqlite3")
    try:
        return reader.execute("SELECT COUNT(*) FROM urls WHERE status=1").fetchone()[0]
    except sqlite3.OperationalError:  # killed before the schema was committed
        return 0
    finally:
        reader.close()


def refetches(web) -> tuple[int, int]:
    """(fetches of a URL after an answer that was not a 5xx, distinct URLs fetched)."""
    last: dict[str, int] = {}
    extra: Counter[str] = Counter()
    for entry in sorted(read_access_log(web.access_log), key=lambda e: e.start):
        if entry.path == "/robots.txt":
            continue
        url = canonicalize(f"http://{entry.host}:{web.port}{entry.path}")
        if url in last and last[url] < 500:
            extra[url] += 1
        last[url] = entry.status
    return sum(extra.values()), len(last)


def kill_run(config: WebConfig, workdir: Path, variant: str, args: argparse.Namespace) -> dict[str, int]:
    """``args.kills`` SIGKILLs then a run to the end, on a fresh web."""
    rng = random.Random(args.seed)
    job = workdir / "job"
    with start_testweb(config, workdir / "web") as web:
        command = crawl_command(web, job, args.depth, args.concurrency, VARIANTS[variant])
        flights = []
        for kill in range(args.kills):
            with open(workdir / f"run{kill}.log", "wb") as log:
                served = len(read_access_log(web.access_log))
                proc = subprocess.Popen(command, cwd=_ROOT, stdout=log, stderr=subprocess.STDOUT)
                for _ in range(1200):  # the gap counts from this run's first fetch, not its start-up
                    web.flush()
                    if len(read_access_log(web.access_log)) > served or proc.poll() is not None:
                        break
                    time.sleep(0.05)  # polling the access log, bounded
                try:
                    proc.wait(timeout=rng.uniform(args.min_gap, args.max_gap))
                except subprocess.TimeoutExpired:
                    proc.send_signal(signal.SIGKILL)
                    proc.wait(timeout=60)
                    flights.append(in_flight(job))
                else:
                    break  # the crawl ended before this kill
        with open(workdir / "final.log", "wb") as log:
            subprocess.run(command, cwd=_ROOT, stdout=log, stderr=subprocess.STDOUT, timeout=args.timeout,
                           check=True)
        web.flush()
        refetched, pages = refetches(web)
    return {"kills": len(flights), "in_flight": sum(flights), "refetched": refetched, "pages": pages}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--kills", type=int, default=3)
    parser.add_argument("--min-gap", type=float, default=2.0)
    parser.add_argument("--max-gap", type=float, default=6.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    config = WebConfig(hosts=args.hosts, pages=args.pages, seed=args.seed)
    runs: dict[str, list[CrawlRun]] = {name: [] for name in VARIANTS}
    kills: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="crash-safety-") as tmp:
        with start_testweb(config, Path(tmp) / "web") as web:
            for run in range(args.runs):
                for name, extra in VARIANTS.items():
                    workdir = Path(tmp) / f"{name}-{run}"
                    workdir.mkdir()
                    runs[name].append(crawl_ours(web, workdir, args.depth, args.concurrency,
                                                 args.timeout, extra, name))
        for name in VARIANTS:
            kills[name] = kill_run(config, Path(tmp) / f"kills-{name}", name, args)
    print(f"crash safety: {args.hosts} hosts x {args.pages} pages, depth {args.depth}, "
          f"CONCURRENT_REQUESTS={args.concurrency}; pages/s medians of {args.runs} runs; "
          f"{args.kills} SIGKILLs {args.min_gap:g}-{args.max_gap:g} s after each run's first fetch, then to the end")
    print(f"{'variant':<13}{'pages':>7}{'seconds':>9}{'pages/s':>9}{'runs (pages/s)':>26}"
          f"{'kills':>7}{'in flight':>11}{'refetched':>11}")
    for name in VARIANTS:
        best = median_run(runs[name])
        each = " ".join(f"{r.pages_per_second:.0f}" for r in runs[name])
        k = kills[name]
        print(f"{name:<13}{best.pages:>7}{best.seconds:>9.2f}"
              f"{statistics.median(r.pages_per_second for r in runs[name]):>9.1f}{each:>26}"
              f"{k['kills']:>7}{k['in_flight']:>11}{k['refetched']:>11}")
    ratio = (statistics.median(r.pages_per_second for r in runs["write-ahead"])
             / statistics.median(r.pages_per_second for r in runs["checkpoint"]))
    print(f"write-ahead / checkpoint throughput: {ratio:.3f}")


if __name__ == "__main__":
    main()
