"""Redis memory per URL of the frontier: the URL-seen layouts side by side.

One frontier (no Scrapy engine, a fake clock, no politeness waits) enqueues
N URLs of ``--hosts`` hosts and fetches them all, on a ``redis-server`` of its
own, started for the run (nothing else in its memory; a small crawl under
another prefix first, so that Redis' per-command latency statistics, made at
each command's first use, are not counted). Each fetched page credits three
of the URLs as its outlinks when AOPIC is on, so every URL gets its cash row,
as in a crawl. Variants: URL-seen ``exact`` (a crawl's default: the exact
fingerprint set of :mod:`extensions.backends.redis.fpset`, finished rows
trimmed), ``bloom`` (``FRONTIER_REDIS_BLOOM_*``; finished rows trimmed) and
``rows`` (the layout before the fingerprint set: the URL rows are the seen
set, finished ones kept), AOPIC on or off.

Columns: the frontier's own stat ``frontier/redis_bytes_per_url`` (Redis
``used_memory_dataset`` added since the crawl began, over the URLs known) at
the end, the same from the sum of ``MEMORY USAGE`` over the crawl's keys (a
cross-check), and the enqueue and fetch rates through Redis on loopback.

    python -m bench.redis_memory                      # 100,000 URLs, 1,000 hosts
    python -m bench.redis_memory --urls 20000 --hosts 100

At 1 M and 10 M known URLs, by component (the content-seen sets too) and
per Cluster master: :mod:`bench.redis_scale` (the stores' batched APIs,
not the frontier's per-request path, which would take hours there).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from scrapy import Request

from extensions.frontier.page import PageVerdict

from extensions.aopic.ledger import AOPICLedger
from extensions.frontier.localdispatch import LocalDispatch
from extensions.frontier.politeness import Politeness
from extensions.frontier.scheduler import Frontier
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.bloom import BloomLayout
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.redis.tables import SeenLayout
from testweb.frontierargs import frontier_arguments
from testweb.redisserver import RedisServer


def crawl(url: str, prefix: str, bloom: SeenLayout | None, aopic: bool, urls: int, hosts: int) -> dict[str, Any]:
    """Enqueue and fetch ``urls`` URLs with one frontier; its stats and rates."""
    store = RedisStore(url, prefix, seen=bloom)
    clock = [0.0]
    frontier = Frontier(store, **frontier_arguments(
        dispatch=LocalDispatch(8, 64, queue_buffer=256), politeness=Politeness(),
        clock=lambda: clock[0], ledger=AOPICLedger(store) if aopic else None))
    frontier.open(None)
    addresses = [f"http://h{i % hosts}.example/section/page-{i}.html" for i in range(urls)]
    started = time.perf_counter()
    for address in addresses:
        frontier.enqueue_request(Request(address))
    enqueued = time.perf_counter()
    fetched = 0
    while (request := frontier.next_request()) is not None or frontier.has_pending_requests():
        if request is None:
            clock[0] += 1.0
            continue
        if aopic:
            frontier.page_done(PageVerdict(request.url, [addresses[(fetched * 3 + k) % urls] for k in range(3)]))
        frontier.fetch_finished(request)
        fetched += 1
    ended = time.perf_counter()
    frontier.checkpoint()
    stats = dict(frontier.stats.values)
    frontier.close("finished")
    return {"stats": stats, "enqueue/s": urls / (enqueued - started), "fetch/s": fetched / (ended - enqueued)}


def keys_bytes(server: RedisServer, prefix: str) -> int:
    """The sum of MEMORY USAGE over the crawl's keys."""
    import redis  # noqa: PLC0415

    client = redis.Redis.from_url(server.url)
    try:
        return sum(client.memory_usage(key, samples=0) or 0 for key in client.scan_iter(f"{prefix}:*", 1000))
    finally:
        client.close()


def run(seen: str, aopic: bool, urls: int, hosts: int, bloom: BloomLayout) -> dict[str, Any]:
    layout = {"bloom": bloom, "exact": FingerprintSetLayout(), "rows": None}[seen]
    with tempfile.TemporaryDirectory(prefix="redis-memory-") as directory:
        with RedisServer(Path(directory)) as server:
            crawl(server.url, "warm-up", layout, aopic, 200, 10)
            result = crawl(server.url, "web", layout, aopic, urls, hosts)
            result["keys_bytes"] = keys_bytes(server, "web")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--hosts", type=int, default=1_000)
    parser.add_argument("--capacity", type=int, default=1_000_000, help="FRONTIER_REDIS_BLOOM_CAPACITY")
    parser.add_argument("--error-rate", type=float, default=0.001, help="FRONTIER_REDIS_BLOOM_ERROR_RATE")
    args = parser.parse_args()
    bloom = BloomLayout(args.capacity, args.error_rate)
    print(f"{args.urls:,} URLs of {args.hosts:,} hosts; Bloom: capacity {args.capacity:,}, "
          f"error rate {args.error_rate}\n")
    print("| URL-seen | AOPIC | bytes/URL (stat) | bytes/URL (MEMORY USAGE) | URLs known | enqueue/s | fetch/s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for seen in ("exact", "bloom", "rows"):
        for aopic in (False, True):
            result = run(seen, aopic, args.urls, args.hosts, bloom)
            stats, known = result["stats"], result["stats"]["frontier/redis_known_urls"]
            print(f"| {seen} | {'on' if aopic else 'off'} | {stats['frontier/redis_bytes_per_url']:.1f} | "
                  f"{result['keys_bytes'] / known:.1f} | {known:,} | {result['enqueue/s']:,.0f} | "
                  f"{result['fetch/s']:,.0f} |", flush=True)


if __name__ == "__main__":
    main()
