"""Redis round trips per page of a Redis-mode crawl, with the content-seen
test waiting on the reactor thread (``CONTENTSEEN_REDIS_IO_THREAD=False``)
and through its worker thread (``True``, the default).

    python -m bench.contentseen_redis_trips --hosts 100 --pages 20 --runs 1

One ``scrapy crawl web`` on the shared frontier (``bench.distributed``'s
``redis:1`` variant, content-seen on) per setting and run; from each
process's final stats, per fetched page: the round trips its reactor thread
waited for (``redis/reactor_round_trips``: the crawler's shared connection,
frontier and content-seen), the shared connection's round trips in all
(``redis/round_trips``), the content-seen worker's (``contentseen/redis/
round_trips``) and its pipelines' jobs. Counts, not times: the machine may
be noisy; pages/s is printed for orientation only.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from bench.distributed import run_variant
from testweb import WebConfig, start_testweb
from testweb.redisserver import RedisServer

COLUMNS = ("redis/reactor_round_trips", "redis/round_trips", "contentseen/redis/round_trips",
           "contentseen/redis/jobs")


def stats_of(workdir: Path) -> dict[str, float]:
    return json.loads((workdir / "p0" / "report.json").read_text()).get("stats", {})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--links", type=int, default=8)
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-contentseen-trips-") as tmp:
        workdir = Path(tmp)
        config = WebConfig(hosts=args.hosts, pages=args.pages, links=args.links)
        with start_testweb(config, workdir / "web") as web, RedisServer(workdir / "redis") as server:
            for run in range(args.runs):
                for io_thread in (False, True):
                    args.settings = [f"CONTENTSEEN_REDIS_IO_THREAD={io_thread}", "CONTENTSEEN_ENABLED=True"]
                    where = workdir / f"{io_thread}-{run}"
                    result = run_variant("redis", 1, web, where, server, args)
                    stats = stats_of(where)
                    checked = stats.get("contentseen/checked", 0)
                    rows.append((io_thread, run, result.pages, checked, result.pages_per_second,
                                 [stats.get(name, 0) / result.pages if result.pages else float("nan")
                                  for name in COLUMNS]))
                    print(f"  run {run + 1}: io_thread={io_thread}: {result.pages} pages", file=sys.stderr)
    print(f"content-seen Redis round trips: {args.hosts} hosts x {args.pages} pages, one process, "
          f"concurrency {args.concurrency}; per fetched page")
    print(f"{'io thread':>9} {'run':>3} {'pages':>6} {'checked':>7} {'pages/s':>7} "
          f"{'reactor RTs':>11} {'shared RTs':>10} {'worker RTs':>10} {'worker jobs':>11}")
    for io_thread, run, pages, checked, speed, values in rows:
        print(f"{str(io_thread):>9} {run + 1:>3} {pages:>6} {checked:>7} {speed:>7.1f} "
              + " ".join(f"{value:>{width}.3f}" for value, width in zip(values, (11, 10, 10, 11))))


if __name__ == "__main__":
    main()
