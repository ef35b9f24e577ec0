"""Redis bytes per known URL at scale (1 M, 10 M known URLs), by component.

Synthetic URLs (``--hosts`` hosts) go through the real store code on a
``redis-server`` of its own per variant (nothing else in its memory), by the
stores' public APIs in batches (pipelined):

* ``urlseen``: the exact URL-seen set alone (``RedisFingerprintSet.add_if_new``);
* ``frontier``: every URL filed in its host's shared back queue as a crawl
  files it (the enqueue script of ``HostLeases.enqueue``: row, URL-seen set,
  back queue), one in ``--known-per-page`` fetched (lease, take, finish as
  done: its row trimmed, release), as a crawl leaves them;
* ``aopic``: the frontier plus every URL's AOPIC cash row, written as a
  crawl's shared ledger writes it (its cash script: each batch's URLs given
  cash, each fetched page's cash taken);
* ``exact``: the exact content-seen set, one page per ``--known-per-page`` URLs;
* ``near``: the near-duplicate index, the same pages (random simhashes,
  sketches of the default size, as of a page of 500 distinct shingles);
* ``all``: every one of them in one Redis.

The figure is Redis ``used_memory`` growth (``INFO memory``, after a warm-up
of each command under another prefix) over the known URLs; ``aopic`` and
``all`` also show where it goes (``MEMORY USAGE`` summed by key kind). With ``--cluster``
the ``all`` variant also runs on a 3-master cluster and prints each master's
``used_memory`` growth and the largest over the smallest.

    python -m bench.redis_scale --urls 1000000
    python -m bench.redis_scale --urls 10000000 --variants urlseen,all
"""

from __future__ import annotations

import argparse
import random
import struct
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

import redis
from redis.cluster import RedisCluster

from extensions import defaults
from extensions.backends.redis.contentseen import RedisContentSeen, RedisContentStore
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.redis.leases import HostLeases
from extensions.backends.redis.ledger import SharedLedger
from extensions.backends.redis.nearindex import RedisNearDuplicateIndex
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.tail import STRING_BYTES
from extensions.contentseen.nearindex import BlockLayout
from extensions.contentseen.resemblance import SKETCH_SIZE
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.store import Entry, Status
from testweb.redisseen import RedisFingerprintSet
from testweb.redisserver import RedisClusterServers, RedisServer, set_config

VARIANTS = ("urlseen", "frontier", "aopic", "exact", "near", "all")
BATCH = 5_000  # URLs per pipelined batch
EXACT_BATCH = 500  # pages per exact content-seen round trip


def urls(count: int, hosts: int, start: int = 0) -> Iterator[list[tuple[int, str, str]]]:
    """``(fingerprint, url, host)`` of URLs ``start`` .. ``start + count``, in batches."""
    for first in range(start, start + count, BATCH):
        batch = []
        for number in range(first, min(first + BATCH, start + count)):
            url, host = address_of(number, hosts)
            batch.append((url_fingerprint(url)[0], url, host))
        yield batch


def address_of(number: int, hosts: int) -> tuple[str, str]:
    """URL ``number`` and its host."""
    host = f"h{number % hosts}.example"
    return f"http://{host}/section-{number % 97}/page-{number}.html", host


def used_memory(clients: list[redis.Redis]) -> list[int]:
    return [int(client.info("memory")["used_memory"]) for client in clients]


def run_frontier(url: str, prefix: str, count: int, hosts: int, per_page: int, cash: bool) -> None:
    """File ``count`` URLs in their hosts' shared back queues as a crawl does
    (the multi-process frontier's enqueue script, pipelined per batch), fetch
    one in ``per_page`` (lease, take, finish as done, release), cash rows if ``cash``."""
    store = RedisStore(url, prefix, seen=FingerprintSetLayout())
    store.open()
    leases = HostLeases(store, "bench", ttl=600.0, shards=4, window=defaults.FRONTIER_REDIS_QUEUE_WINDOW)
    store.urls.tails = True
    ledger = SharedLedger(store) if cash else None
    if ledger is not None:
        ledger.load()
    now = 1_000.0
    for batch in urls(count, hosts):
        by_host: dict[str, list[Entry]] = {}
        for fp, address, host in batch:
            by_host.setdefault(host, []).append(Entry(fp, address, host))
        # the enqueue script of HostLeases.enqueue, one round trip for the batch
        answers = store.call(*[leases._enqueue_command(host, entries, False) for host, entries in by_host.items()])
        for answer in answers:
            leases._enqueued(answer)
        # as the enqueuer does: a host's tail records past STRING_BYTES into its newest block
        full = [host for host, answer in zip(by_host, answers) if answer[7] >= STRING_BYTES]
        reads = store.call(*[("GET", store.keys.tail(host)) for host in full]) if full else []
        rewrites = [command for host, read in zip(full, reads)
                    if (command := leases.compact_command(host, read)) is not None]
        if rewrites:
            store.call(*rewrites)
        if ledger is not None:  # the batch's URLs get cash (one cash script, as a page's outlinks)
            ledger._run(None, [fp for fp, _, _ in batch], 0, 1.0, "put")
        fetches = len(batch) // per_page
        for host in list(by_host)[:fetches]:
            if not leases.acquire([(host, b"0")]):
                continue
            taken = leases.take(host)
            if taken.entry is not None:
                leases.finish(host, taken.entry.fingerprint, Status.DONE, now)
                if ledger is not None:  # its cash to its history (the long row) and Lambda
                    ledger.take(taken.entry.fingerprint)
            leases.release(host, 0.0, False, None)
        store.checkpoint()
        now += 1.0
    store.close()


def run_urlseen(url: str, prefix: str, count: int, hosts: int) -> None:
    store = RedisStore(url, prefix, seen=FingerprintSetLayout())
    store.open()
    seen = RedisFingerprintSet(store, FingerprintSetLayout())
    for batch in urls(count, hosts):
        seen.add_if_new([fp for fp, _, _ in batch])
    store.close()


def pages(count: int, hosts: int, per_page: int) -> Iterator[tuple[int, str]]:
    """``(content fingerprint, url)`` of one page per ``per_page`` URLs."""
    rng = random.Random(7)
    for number in range(0, count, per_page):
        yield rng.getrandbits(64), address_of(number, hosts)[0]


def run_exact(url: str, prefix: str, count: int, hosts: int, per_page: int) -> None:
    exact = RedisContentSeen(RedisContentStore(url, prefix))
    chunk: list[tuple[int, str]] = []

    def send() -> None:
        commands = [command for fp, address in chunk for command in exact.add_commands(fp, address)]
        answers = exact.store.call(*commands)
        for answer, (_, address) in zip(answers, chunk):
            exact.first_url([answer], address)
        chunk.clear()

    for page in pages(count, hosts, per_page):
        chunk.append(page)
        if len(chunk) == EXACT_BATCH:
            send()
    if chunk:
        send()
    exact.close()


def run_near(url: str, prefix: str, count: int, hosts: int, per_page: int) -> None:
    index = RedisNearDuplicateIndex(RedisContentStore(url, prefix), BlockLayout())
    rng = random.Random(11)
    shape = struct.Struct(f">{SKETCH_SIZE}I")
    for fingerprint, address in pages(count, hosts, per_page):
        # the bottom 64 of a page of 500 distinct shingle hashes lie in the lowest 64/500 of their range
        sketch = shape.pack(*sorted(rng.randrange(2**32 * SKETCH_SIZE // 500) for _ in range(SKETCH_SIZE)))
        # as the crawl's worker thread: the record keeps the content fingerprint (the exact set has the URL)
        index.run(index.add_or_match_steps(rng.getrandbits(64), address, sketch, None, fingerprint))
    index.close()


def run_variant(variant: str, url: str, prefix: str, count: int, hosts: int, per_page: int) -> None:
    if variant == "urlseen":
        run_urlseen(url, prefix, count, hosts)
    if variant in ("frontier", "aopic", "all"):
        run_frontier(url, prefix, count, hosts, per_page, cash=variant != "frontier")
    if variant in ("exact", "all"):
        run_exact(url, prefix, count, hosts, per_page)
    if variant in ("near", "all"):
        run_near(url, prefix, count, hosts, per_page)


def kind_of(key: bytes) -> str:
    """A key's kind: ``contentseen/near_table``, ``urls``, ``queue`` ..."""
    text = key.decode(errors="replace")
    if ":contentseen:" in text:  # a map's or set's buckets (key:d:p) go with it
        return "contentseen/" + (text.split("}:", 1)[1].split(":", 1)[0] if "}:" in text else text.rsplit(":", 1)[1])
    if "}:" in text:
        return text.split("}:", 1)[1].split(":", 1)[0]
    return text.split(":", 2)[1] if text.count(":") else text


def by_kind(clients: list[redis.Redis], prefix: str) -> list[Counter[str]]:
    """Per master, MEMORY USAGE summed by key kind."""
    sizes: list[Counter[str]] = []
    for client in clients:
        sizes.append(Counter())
        for key in client.scan_iter(match=f"{prefix}:*", count=2_000):
            sizes[-1][kind_of(key)] += client.memory_usage(key, samples=0) or 0
    return sizes


def measure(variant: str, url: str, clients: list[redis.Redis], count: int, hosts: int,
            per_page: int) -> tuple[list[int], float, list[Counter[str]]]:
    """Per-master memory growth, seconds, and (``all``) bytes by key kind per master."""
    run_variant(variant, url, "warm-up", 2_000, 20, per_page)  # each command's first-use statistics
    before = used_memory(clients)
    started = time.perf_counter()
    run_variant(variant, url, "web", count, hosts, per_page)
    seconds = time.perf_counter() - started
    grown = [after - base for after, base in zip(used_memory(clients), before)]
    return grown, seconds, by_kind(clients, "web") if variant in ("aopic", "all") else []


def single(variant: str, count: int, hosts: int, per_page: int,
           config: Sequence[str] = ()) -> tuple[list[int], float, list[Counter[str]]]:
    with tempfile.TemporaryDirectory(prefix="redis-scale-") as directory, RedisServer(Path(directory)) as server:
        set_config(server.url, config)
        client = redis.Redis.from_url(server.url)
        try:
            return measure(variant, server.url, [client], count, hosts, per_page)
        finally:
            client.close()


def cluster(count: int, hosts: int, per_page: int) -> tuple[list[int], float, list[Counter[str]]]:
    with tempfile.TemporaryDirectory(prefix="redis-scale-") as directory, \
            RedisClusterServers(Path(directory)) as servers:
        probe = RedisCluster.from_url(servers.url)
        clients = [redis.Redis(host=node.host, port=node.port) for node in probe.get_primaries()]
        probe.close()
        try:
            return measure("all", servers.url, clients, count, hosts, per_page)
        finally:
            for client in clients:
                client.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--urls", type=int, default=1_000_000, help="known URLs")
    parser.add_argument("--hosts", type=int, default=0, help="hosts (default: one per 1,000 URLs, 100 at least)")
    parser.add_argument("--known-per-page", type=int, default=10,
                        help="known URLs per fetched page (the wide web's crawls: 9 to 11)")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--cluster", action="store_true", help="also 'all' on a 3-master cluster")
    parser.add_argument("--redis-config", action="append", default=[],
                        help="NAME=VALUE set in redis-server (CONFIG SET) before the run (repeatable; not the cluster's)")
    args = parser.parse_args(argv)
    hosts = args.hosts or max(100, args.urls // 1_000)
    chosen = [variant for variant in args.variants.split(",") if variant]
    unknown = set(chosen) - set(VARIANTS)
    if unknown or args.urls < 1 or args.known_per_page < 1:
        parser.error(f"variants are {', '.join(VARIANTS)}; --urls and --known-per-page must be >= 1")
    print(f"python -m bench.redis_scale {' '.join(sys.argv[1:] if argv is None else argv)}")
    print(f"{args.urls:,} known URLs of {hosts:,} hosts, one page fetched per {args.known_per_page} "
          f"({args.urls // args.known_per_page:,} pages)\n")
    print("| variant | Redis bytes / known URL | bytes / page | seconds |")
    print("|---|---:|---:|---:|")
    kinds: dict[str, Counter[str]] = {}
    for variant in chosen:
        grown, seconds, sizes = single(variant, args.urls, hosts, args.known_per_page, args.redis_config)
        if sizes:
            kinds[variant] = sum(sizes, Counter())
        pages_count = max(args.urls // args.known_per_page, 1)
        print(f"| {variant} | {sum(grown) / args.urls:.1f} | {sum(grown) / pages_count:.0f} | {seconds:.0f} |",
              flush=True)
    for variant, sizes in kinds.items():
        print(f"\n'{variant}', MEMORY USAGE by key kind (bytes / known URL):\n")
        print("| keys | bytes / known URL |")
        print("|---|---:|")
        for kind, size in sizes.most_common():
            print(f"| {kind} | {size / args.urls:.1f} |")
    if args.cluster:
        grown, seconds, sizes = cluster(args.urls, hosts, args.known_per_page)
        print("\n'all' on a 3-master Redis Cluster: used_memory growth per master\n")
        print("| master | MB | bytes / known URL |")
        print("|---|---:|---:|")
        for number, size in enumerate(grown):
            print(f"| {number} | {size / 1e6:.1f} | {size / args.urls:.1f} |")
        print(f"\nlargest / smallest master: {max(grown) / max(min(grown), 1):.2f}; total "
              f"{sum(grown) / args.urls:.1f} bytes / known URL; {seconds:.0f} s")
        print("\nMEMORY USAGE by key kind on each master (MB):\n")
        names = sorted({kind for counter in sizes for kind in counter}, key=lambda kind: -sum(c[kind] for c in sizes))
        print("| keys | " + " | ".join(f"master {number}" for number in range(len(sizes))) + " |")
        print("|---|" + "---:|" * len(sizes))
        for kind in names:
            print(f"| {kind} | " + " | ".join(f"{counter[kind] / 1e6:.2f}" for counter in sizes) + " |")


if __name__ == "__main__":
    main()
