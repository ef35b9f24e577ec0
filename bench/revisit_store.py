"""The re-visit table's cost: bytes per record in Redis, time per record of
``put`` and ``take_due`` in every store.

``--records`` records of ``--hosts`` hosts, as a crawl writes them: a content
fingerprint, an nginx-style ETag and an HTTP-date Last-Modified, due times
spread over an hour. Each store (memory, SQLite in a temporary file, Redis:
one ``redis-server`` started for the run, and with ``--cluster`` a 3-master
Redis Cluster) gets them in ``put`` batches of ``--batch`` (a checkpoint
after each batch, as the frontier commits), then gives them all back with
``take_due(now, --batch)`` until none is due. Times are medians of
``--runs`` runs on a fresh store (noisy on a shared machine).

Memory (Redis): ``used_memory_dataset`` added by the records (the server
holds nothing else), and the sum of ``MEMORY USAGE`` over the table's keys,
per record; with the mean packed value for reference.

    python -m bench.revisit_store                    # 100,000 records, 1,000 hosts
    python -m bench.revisit_store --records 20000 --cluster
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from email.utils import formatdate
from pathlib import Path
from typing import Any

from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.store import RevisitRecord
from extensions.backends.memory.backend import MemoryStore
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.revisits import pack_record
from extensions.backends.sqlite.store import SQLiteStore
from testweb.redisserver import RedisClusterServers, RedisServer

NOW = 1_750_000_000.0


def records(count: int, hosts: int) -> list[RevisitRecord]:
    """``count`` records as a crawl would write them."""
    made = []
    for i in range(count):
        fingerprint = url_fingerprint(f"http://h{i % hosts}.example/section/page-{i}.html")[0]
        modified = NOW - 86_400 - (i * 37) % 1_000_000
        made.append(RevisitRecord(
            fingerprint, NOW + (i * 7919) % 3600 + 0.25, 3600.0 * (1 + i % 5), visits=1 + i % 9,
            changes=i % 3, first_visit=NOW - 7200.5, last_visit=NOW - 10.125, last_change=NOW - 3600.75,
            content=(i * 0x9E3779B97F4A7C15) % (1 << 63), etag=f'"{int(modified):x}-{i % 65536:x}"',
            last_modified=formatdate(int(modified), usegmt=True)))
    return made


def exercise(store: Any, made: list[RevisitRecord], batch: int) -> tuple[float, float]:
    """Seconds per record of put (with checkpoints) and of take_due."""
    started = time.perf_counter()
    for start in range(0, len(made), batch):
        store.revisits.put(made[start:start + batch])
        store.checkpoint()
    put = time.perf_counter() - started
    started, taken = time.perf_counter(), 0
    for _ in range(len(made)):
        got = store.revisits.take_due(NOW + 7200, batch)
        if not got:
            break
        taken += len(got)
        store.checkpoint()
    take = time.perf_counter() - started
    assert taken == len(made), (taken, len(made))
    return put / len(made), take / len(made)


def redis_bytes(url: str, prefix: str, made: list[RevisitRecord], batch: int) -> tuple[float, float, str]:
    """Bytes per record: used_memory_dataset added, MEMORY USAGE of the
    table's keys, and that split by key kind."""
    store = RedisStore(url, prefix)
    store.open()
    before = store.connection.used_memory()[0]
    for start in range(0, len(made), batch):
        store.revisits.put(made[start:start + batch])
    store.checkpoint()
    added = store.connection.used_memory()[0] - before
    keys = [key for key in store.scan(f"{prefix}:*") if b"revisit" in key]
    usages = store.call(*[("MEMORY", "USAGE", key, "SAMPLES", "0") for key in keys])
    kinds: dict[str, int] = {}
    for key, usage in zip(keys, usages):
        kind = key.decode().rsplit(":", 1)[1]
        kinds[kind] = kinds.get(kind, 0) + usage
    store.close()
    split = ", ".join(f"{kind} {usage / len(made):.1f}" for kind, usage in sorted(kinds.items()))
    return added / len(made), sum(usages) / len(made), split


def timed(name: str, factory: Callable[[int], Any], made: list[RevisitRecord], batch: int,
          runs: int) -> tuple[str, float, float]:
    puts, takes = [], []
    for run in range(runs):
        store = factory(run)
        store.open()
        put, take = exercise(store, made, batch)
        store.close()
        puts.append(put)
        takes.append(take)
    return name, statistics.median(puts), statistics.median(takes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=1_000)
    parser.add_argument("--batch", type=int, default=100, help="records per put and per take_due")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cluster", action="store_true", help="also a 3-master Redis Cluster")
    args = parser.parse_args()
    made = records(args.records, args.hosts)
    packed = statistics.mean(len(pack_record(r)) for r in made)
    print(f"{args.records:,} records of {args.hosts:,} hosts; put and take_due in batches of {args.batch}; "
          f"median of {args.runs} runs; packed record {packed:.1f} bytes (mean)\n")
    with tempfile.TemporaryDirectory(prefix="revisit-store-") as directory:
        root = Path(directory)
        rows = [timed("memory", lambda run: MemoryStore(), made, args.batch, args.runs),
                timed("sqlite", lambda run: SQLiteStore(root / f"f{run}.sqlite3"), made, args.batch, args.runs)]
        memory = {}
        with RedisServer(root / "redis") as server:
            memory["redis"] = redis_bytes(server.url, "bytes", made, args.batch)
            rows.append(timed("redis", lambda run: RedisStore(server.url, f"run{run}"), made, args.batch,
                              args.runs))
        if args.cluster:
            (root / "cluster").mkdir()
            with RedisClusterServers(root / "cluster") as cluster:
                memory["redis-cluster"] = redis_bytes(cluster.url, "bytes", made, args.batch)
                rows.append(timed("redis-cluster", lambda run: RedisStore(cluster.url, f"run{run}"), made,
                                  args.batch, args.runs))
    print("| store | put µs/record | take_due µs/record | bytes/record (used_memory_dataset) "
          "| bytes/record (MEMORY USAGE: by key) |")
    print("|---|---:|---:|---:|---:|")
    for name, put, take in rows:
        if name in memory:
            dataset, usage, split = memory[name]
            extra = f"{dataset:.1f} | {usage:.1f} ({split})"
        else:
            extra = "- | -"
        print(f"| {name} | {put * 1e6:.1f} | {take * 1e6:.1f} | {extra} |", flush=True)


if __name__ == "__main__":
    main()
