"""Benchmark the frontier alone: enqueue, URL-seen and dequeue ops/s and peak RSS.

No Scrapy engine: the benchmark drives ``enqueue_request``, ``next_request``
and ``fetch_finished`` directly, with a fake clock (no politeness waits) and
a checkpoint (commit) every ``--checkpoint-every`` operations, as the 5 s
LoopingCall would. N URLs are spread over ``--hosts`` hosts (default 100 k).
Each (size, run) is a fresh subprocess, so peak RSS is that run's own;
the table shows the median of ``--runs``.

    python -m bench.frontier_ops                       # 1e5 and 1e6, 3 runs
    python -m bench.frontier_ops --sizes 1e7 --runs 1  # the 10 M point
    python -m bench.frontier_ops --sizes 1e5 --seen bloom --store memory
    python -m bench.frontier_ops --schedulers ours,stock,stock-jobdir  # side by side

``stock`` is Scrapy's own scheduler (memory priority queues, RFPDupeFilter),
``stock-jobdir`` the same with ``JOBDIR`` (pickled disk queues; the
fingerprint set stays in memory), driven the same way for the same N.

Phases: *enqueue* (N new URLs), *seen* (re-offer up to ``--seen-ops``
known URLs in random order: the URL-seen test on duplicates, mostly cache
misses when N is large), *dequeue* (up to ``--dequeue-ops`` next_request +
fetch_finished pairs; all N by default). ``--max-seconds`` bounds each phase.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from extensions import defaults


class _StockDriver:
    """Scrapy's stock scheduler behind the frontier's driving interface."""

    def __init__(self, directory: Path, jobdir: bool) -> None:
        from scrapy import Spider  # noqa: PLC0415
        from scrapy.core.scheduler import Scheduler  # noqa: PLC0415
        from scrapy.utils.test import get_crawler  # noqa: PLC0415

        # DownloaderAwarePriorityQueue (2.19's default) needs a running
        # engine; ScrapyPriorityQueue is the same queues without it.
        settings = {"SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue"}
        if jobdir:
            settings["JOBDIR"] = str(directory / "job")
        crawler = get_crawler(Spider, settings)
        crawler.spider = Spider.from_crawler(crawler, "bench")
        self.scheduler = Scheduler.from_crawler(crawler)
        self.scheduler.open(crawler.spider)
        self.directory = directory

    def enqueue_request(self, request) -> bool:  # noqa: ANN001
        return self.scheduler.enqueue_request(request)

    def next_request(self):  # noqa: ANN201
        return self.scheduler.next_request()

    def fetch_finished(self, request, duration: float = 0.0) -> None:  # noqa: ANN001
        pass

    def checkpoint(self) -> None:
        pass

    def entries_in_memory(self) -> int:
        return len(self.scheduler.mqs) if self.scheduler.mqs is not None else 0

    def close(self, reason: str) -> None:
        self.scheduler.close(reason)

    def disk_mb(self) -> float:
        return sum(f.stat().st_size for f in self.directory.rglob("*") if f.is_file()) / 2**20


def _child(args: argparse.Namespace) -> dict:
    if args.scheduler != "ours":
        return _drive(args, None)
    return _drive(args, "ours")


def _drive(args: argparse.Namespace, ours: str | None) -> dict:
    from scrapy import Request  # noqa: PLC0415 - keep the parent process light

    from extensions.frontier.localdispatch import LocalDispatch  # noqa: PLC0415
    from testweb.frontierargs import frontier_arguments  # noqa: PLC0415
    from extensions.frontier.politeness import Politeness  # noqa: PLC0415
    from extensions.frontier.scheduler import Frontier  # noqa: PLC0415
    from extensions.frontier.urlseen import BloomSeen  # noqa: PLC0415
    from extensions.backends.memory.backend import MemoryStore  # noqa: PLC0415
    from extensions.backends.sqlite.store import SQLiteStore  # noqa: PLC0415

    n, hosts = int(float(args.size)), args.hosts
    directory = Path(tempfile.mkdtemp(prefix="frontier-bench-", dir=args.tmpdir))
    store = MemoryStore() if args.store == "memory" else SQLiteStore(directory / "f.sqlite3")
    now = [0.0]
    bloom = BloomSeen(initial_capacity=1_000_000, error_rate=0.001) if args.seen == "bloom" else None
    if ours is None:
        store.close(clean=True)
        frontier = _StockDriver(directory, jobdir=args.scheduler == "stock-jobdir")
    else:
        frontier = Frontier(store, **frontier_arguments(
            dispatch=LocalDispatch(8, args.back_queues, queue_buffer=args.buffer),
            politeness=Politeness(), seen_cache_size=args.cache, bloom=bloom, host_budget=args.host_budget,
            clock=lambda: now[0], wall_clock=time.time,
        ))
        frontier.open(None)

    def url(i: int) -> str:
        return f"http://h{(i * 7919) % hosts}.example/p/{i}"

    result: dict = {"size": n}
    started = time.perf_counter()
    done = 0
    for i in range(n):
        frontier.enqueue_request(Request(url(i), meta={"depth": i % 5}))
        done += 1
        if done % args.checkpoint_every == 0:
            frontier.checkpoint()
            if time.perf_counter() - started > args.max_seconds:
                break
    frontier.checkpoint()
    result["enqueue_ops"] = done / (time.perf_counter() - started)
    result["enqueued"] = done

    rng = random.Random(1)
    sample = [rng.randrange(done) for _ in range(min(args.seen_ops, done))]
    started = time.perf_counter()
    duplicates = sum(not frontier.enqueue_request(Request(url(i))) for i in sample)
    result["seen_ops"] = len(sample) / max(time.perf_counter() - started, 1e-9)
    result["seen_duplicates_ok"] = duplicates == len(sample)

    limit = done if args.dequeue_ops <= 0 else min(args.dequeue_ops, done)
    started = time.perf_counter()
    dequeued = 0
    while dequeued < limit:
        request = frontier.next_request()
        if request is None:
            now[0] += 1.0
            continue
        now[0] += 1e-6
        frontier.fetch_finished(request, duration=0.0)
        dequeued += 1
        if dequeued % args.checkpoint_every == 0:
            frontier.checkpoint()
            if time.perf_counter() - started > args.max_seconds:
                break
    result["dequeue_ops"] = dequeued / max(time.perf_counter() - started, 1e-9)
    result["dequeued"] = dequeued
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result["entries_in_memory"] = frontier.entries_in_memory()
    frontier.close("finished")
    result["db_mb"] = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file()) / 2**20
    shutil.rmtree(directory, ignore_errors=True)
    return result


def _parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1e5,1e6", help="comma-separated N (default 1e5,1e6)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=100_000)
    parser.add_argument("--buffer", type=int, default=256, help="FRONTIER_QUEUE_BUFFER")
    parser.add_argument("--back-queues", type=int, default=48)
    parser.add_argument("--cache", type=int, default=65536, help="FRONTIER_SEEN_CACHE_SIZE")
    parser.add_argument("--schedulers", default="ours",
                        help="comma-separated: ours, stock, stock-jobdir (default ours)")
    parser.add_argument("--scheduler", default="ours", help=argparse.SUPPRESS)
    parser.add_argument("--seen", choices=["exact", "bloom"], default="exact")
    parser.add_argument("--host-budget", type=int, default=defaults.FRONTIER_HOST_BUDGET,
                        help="FRONTIER_HOST_BUDGET (default: the setting's default)")
    parser.add_argument("--store", choices=["sqlite", "memory"], default="sqlite")
    parser.add_argument("--seen-ops", type=int, default=100_000)
    parser.add_argument("--dequeue-ops", type=int, default=0, help="0: all")
    parser.add_argument("--checkpoint-every", type=int, default=50_000)
    parser.add_argument("--max-seconds", type=float, default=1800.0, help="bound per phase")
    parser.add_argument("--tmpdir", default=None)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--size", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = _parse(argv)
    if args.child:
        print(json.dumps(_child(args)))
        return
    passthrough = []
    for name, value in vars(args).items():
        if name not in {"sizes", "runs", "child", "size", "schedulers", "scheduler"} and value is not None:
            passthrough += [f"--{name.replace('_', '-')}", str(value)]
    root = Path(__file__).resolve().parents[1]
    header = f"{'scheduler':<13} {'N':>10} {'enqueue/s':>10} {'seen/s':>10} {'dequeue/s':>10} {'peak RSS MB':>12} {'DB MB':>8}"
    print(f"frontier_ops: store={args.store} seen={args.seen} hosts={args.hosts} "
          f"buffer={args.buffer} host_budget={args.host_budget} runs={args.runs} (median)")
    print(header)
    for size in args.sizes.split(","):
        for scheduler in args.schedulers.split(","):
            _report(root, size, scheduler, args.runs, passthrough)


def _report(root: Path, size: str, scheduler: str, runs: int, passthrough: list[str]) -> None:
    """Median of ``runs`` fresh child processes for one (size, scheduler)."""
    results = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-m", "bench.frontier_ops", "--child", "--size", size,
             "--scheduler", scheduler, *passthrough],
            capture_output=True, text=True, cwd=root, check=True,
        )
        results.append(json.loads(out.stdout.strip().splitlines()[-1]))

    def median(key: str) -> float:
        return statistics.median(r[key] for r in results)

    partial = "" if all(r["dequeued"] == r["enqueued"] == r["size"] for r in results) else " (bounded)"
    print(f"{scheduler:<13} {int(float(size)):>10} {median('enqueue_ops'):>10.0f} {median('seen_ops'):>10.0f} "
          f"{median('dequeue_ops'):>10.0f} {median('peak_rss_mb'):>12.1f} {median('db_mb'):>8.1f}{partial}",
          flush=True)


if __name__ == "__main__":
    main()
