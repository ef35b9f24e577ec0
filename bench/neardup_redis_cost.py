"""Per-page cost of the Redis near-duplicate index: client CPU, redis-server
CPU, round trips and Redis memory, for this checkout and, with
``--checkout NAME=PATH``, others (each in a subprocess importing that
checkout's code).

Pages: random simhashes and sketches of the default size as of a page of 500
distinct shingles (as :mod:`bench.redis_scale`); one page in ten is a near
copy of an earlier one (its simhash 2 bits away, the same sketch), so its
look-up reads the earlier page's record. Each page goes through
the exact set (``add_or_get``) and ``add_or_match_steps`` with its content
fingerprint, as a crawl's worker thread stores it, on a ``redis-server`` of
its own per run (figures: both sets, the exact set's the same in every checkout). CPU figures are
the minimum over ``--runs`` runs (a shared machine: noisy); redis-server CPU
is ``INFO cpu`` (user + system) over the pages.

    python -m bench.neardup_redis_cost --checkout before=/path/to/clone
"""

from __future__ import annotations

import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SKETCH_VALUES = 64
SHINGLES = 500


def pages(count: int) -> list[tuple[int, str, bytes, int]]:
    """``(simhash, url, sketch, content fingerprint)`` of ``count`` pages, one in ten a near copy."""
    rng = random.Random(17)
    shape = struct.Struct(f">{SKETCH_VALUES}I")
    made: list[tuple[int, str, bytes, int]] = []
    for number in range(count):
        if number % 10 == 9:
            simhash, _, sketch, _ = made[rng.randrange(len(made))]
            simhash ^= 1 << rng.randrange(64) | 1 << rng.randrange(64)
        else:
            simhash = rng.getrandbits(64)
            sketch = shape.pack(*sorted(rng.sample(range(2**32 * SKETCH_VALUES // SHINGLES), SKETCH_VALUES)))
        made.append((simhash, f"http://h{number % 1000}.test/p{number}", sketch, rng.getrandbits(64)))
    return made


def server_cpu(client: Any) -> float:
    """redis-server's CPU seconds so far (user + system)."""
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def measure(count: int, runs: int) -> dict[str, Any]:
    """The figures of the checkout this process imports from."""
    import redis  # the checkout's own code (PYTHONPATH)

    from extensions.backends.redis.contentseen import (
        RedisContentSeen,
        RedisContentStore,
    )
    from extensions.backends.redis.nearindex import RedisNearDuplicateIndex
    from extensions.contentseen.nearindex import BlockLayout
    from testweb.redisserver import RedisServer

    work = pages(count)
    best: dict[str, Any] = {}
    for run in range(runs):
        with tempfile.TemporaryDirectory(prefix="near-cost-") as directory, RedisServer(Path(directory)) as server:
            client = redis.Redis.from_url(server.url)
            store = RedisContentStore(server.url, f"run{run}")
            exact, index = RedisContentSeen(store), RedisNearDuplicateIndex(store, BlockLayout())
            memory, cpu_before = int(client.info("memory")["used_memory"]), server_cpu(client)
            started, wall = time.process_time(), time.perf_counter()
            flagged = 0
            for simhash, url, sketch, fingerprint in work:
                exact.add_or_get(fingerprint, url)  # the exact set holds the URL the record refers to
                found = index.run(index.add_or_match_steps(simhash, url, sketch, None, fingerprint))
                flagged += found[1] is not None
            index.flush()
            client_cpu, wall = time.process_time() - started, time.perf_counter() - wall
            trips = index.counters["round_trips"] + index.counters["flushes"] + exact.counters["round_trips"]
            figures = {"client CPU us/page": client_cpu / count * 1e6,
                       "redis CPU us/page": (server_cpu(client) - cpu_before) / count * 1e6,
                       "wall us/page": wall / count * 1e6,
                       "round trips/page": trips / count,
                       "Redis bytes/page": (int(client.info("memory")["used_memory"]) - memory) / count,
                       "near copies found": flagged}
            exact.close()
            index.close()
            client.close()
        for name, value in figures.items():
            best[name] = min(best.get(name, value), value)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--checkout", action="append", default=[], help="NAME=PATH (repeatable)")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.measure:
        print(json.dumps(measure(options.pages, options.runs)))
        return
    checkouts = [("this", ROOT)] + [(name, Path(path).resolve()) for name, _, path in
                                    (item.partition("=") for item in options.checkout)]
    results = {}
    for name, path in checkouts:
        output = subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--measure", "--pages", str(options.pages),
             "--runs", str(options.runs)],
            cwd=path, env={**os.environ, "PYTHONPATH": str(path)}, check=True, capture_output=True,
            text=True).stdout
        results[name] = json.loads(output.strip().splitlines()[-1])
    names = [name for name, _ in checkouts]
    print(f"Redis near-duplicate index per page ({options.pages:,} pages, one in ten a near copy; min of "
          f"{options.runs} runs; shared machine: noisy)")
    print(f"{'':22s}" + "".join(f"{name:>12s}" for name in names))
    for figure in results["this"]:
        print(f"{figure:22s}" + "".join(f"{results[name][figure]:>12.1f}" for name in names))


if __name__ == "__main__":
    main()
