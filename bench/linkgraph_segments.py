"""The link graph's share of Redis memory per known URL, before and after link segments.

One ``scrapy crawl web`` on Redis (a ``redis-server`` of its own) of the
synthetic web, stopped after ``--pages`` pages, ``SCHEDULER_PERSIST`` on.
After it:

* **after** (this layout): the crawl's link records (each with its
  source's and its targets' URLs) are in its segment files
  (``LINKGRAPH_SEGMENTS_DIR``); the table counts the Redis keys holding
  links (none) and the segments' bytes on disk per recorded page and per link;
* **before** (the Redis link table this replaced: per host tag ``{T}`` a hash
  ``P:{T}:links``, fingerprint -> packed int64 targets): the same records,
  read back from the segments, written in that layout under another prefix
  of the same server, and Redis ``used_memory`` growth measured over them
  (``INFO memory``, not a formula).

Per known URL: those bytes over the URLs the crawl knows (its URL rows and
the finished URLs' trimmed ones, counted by status), as
``frontier/redis_bytes_per_url`` divides. Also the segments' bytes against
the same lists uncompressed (8 bytes a link), and the crawl's Redis
``used_memory`` growth per known URL for scale.

    python -m bench.linkgraph_segments --hosts 300 --pages 60 --links 20 --crawl 3000
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import redis

from extensions.backends.redis.rows import tag_of
from extensions.backends.redis.store import RedisStore
from extensions.backends.sqlite.tables import pack_targets
from extensions.linkgraph.segmentlinks import SegmentLinkTable
from extensions.linkgraph.segmentlinks import (
    RECORD,
    SegmentScan,
    SegmentWriter,
    latest_records,
)
from testweb import WebConfig, start_testweb
from testweb.crawlrun import run_web_crawl
from testweb.redisserver import RedisServer


def used_memory(client: redis.Redis) -> int:
    return int(client.info("memory")["used_memory"])


def link_keys(client: redis.Redis, prefix: str) -> int:
    return sum(1 for _ in client.scan_iter(match=f"{prefix}:*links*", count=1000))


def known_urls(url: str, prefix: str, segments: Path) -> int:
    """URLs the crawl knows: its URL rows and the finished ones' trimmed rows, by status."""
    store = RedisStore(url, prefix, links=SegmentLinkTable(segments))
    store.open_read_only()
    try:
        return sum(store.urls.count_by_status().values())
    finally:
        store.close()


def replay_old_layout(client: redis.Redis, prefix: str, records: dict[int, Any]) -> int:
    """Write ``records`` as the old Redis link table did; the used_memory growth."""
    before = used_memory(client)
    pipe = client.pipeline(transaction=False)
    for count, (source, record) in enumerate(records.items(), 1):
        pipe.hset(f"{prefix}:{{{tag_of(source)}}}:links", str(source), pack_targets(record.targets.tolist()))
        if count % 1000 == 0:
            pipe.execute()
    pipe.execute()
    return used_memory(client) - before


def rewrite_unnamed(records: dict[int, Any], directory: Path) -> int:
    """Bytes of the same records written without their targets' URLs (the
    content of format 1, which the graph could not name targets from)."""
    writer = SegmentWriter(directory, identity="unnamed")
    for source, record in records.items():
        writer.append(source, record.when, record.url, record.targets.tolist())
    writer.close()
    return writer.bytes_written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=300)
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--links", type=int, default=20)
    parser.add_argument("--crawl", type=int, default=3000, help="pages to crawl (CLOSESPIDER_PAGECOUNT)")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-linksegments-") as tmp:
        workdir = Path(tmp)
        with RedisServer(workdir / "redis") as server, \
                start_testweb(WebConfig(hosts=args.hosts, pages=args.pages, links=args.links), workdir / "web") as web:
            client = redis.Redis.from_url(server.url)
            base = used_memory(client)
            segments = workdir / "segments"
            settings = {"DNS_HOSTS": web.hosts_file, "CONCURRENT_REQUESTS": 32, "FRONTIER_BACKEND": "redis",
                        "REDIS_URL": server.url, "FRONTIER_REDIS_PREFIX": "web", "SCHEDULER_PERSIST": True,
                        "LINKGRAPH_SEGMENTS_DIR": segments, "CLOSESPIDER_PAGECOUNT": args.crawl}
            result = run_web_crawl(workdir / "crawl", str(web.seeds_file), settings, timeout=args.timeout)
            if result.returncode != 0:
                raise SystemExit(f"the crawl failed:\n{result.log[-3000:]}")
            crawl_bytes = used_memory(client) - base
            known, keys_after = known_urls(server.url, "web", segments), link_keys(client, "web")
            scan = SegmentScan()
            records = latest_records(segments, scan)
            before = replay_old_layout(client, "before", records)
            unnamed = rewrite_unnamed(records, workdir / "unnamed")
            keys_before = link_keys(client, "before")
            client.close()
    pages, links = len(records), sum(len(record.targets) for record in records.values())
    on_disk = scan.bytes
    raw = sum(RECORD.size + len(record.url.encode()) + 8 * len(record.targets)
              + len("\n".join(record.target_urls).encode()) for record in records.values())
    print(f"Link graph of one Redis crawl: {args.hosts} hosts x {args.pages} pages, {args.links} links a page; "
          f"{result.stats.get('response_received_count', 0):,} pages fetched, {pages:,} lists recorded "
          f"({links:,} links), {known:,} URLs known, {scan.files} segment file(s)\n")
    print("| layout | Redis keys with links | Redis bytes (links) | per known URL | per recorded page | "
          "disk bytes per page | disk bytes per link |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    print(f"| before: P:{{T}}:links hashes | {keys_before:,} | {before:,} | {before / known:.1f} | "
          f"{before / pages:.1f} | - | - |")
    print(f"| after: link segments, targets unnamed (format 1's content, rewritten) | 0 | 0 | 0.0 | 0.0 | "
          f"{unnamed / pages:.1f} | {unnamed / max(links, 1):.2f} |")
    print(f"| after: link segments, targets named (format 2, as the crawl wrote them) | {keys_after:,} | 0 | 0.0 | "
          f"0.0 | {on_disk / pages:.1f} | {on_disk / max(links, 1):.2f} |")
    print(f"\nsegments: {on_disk:,} bytes on disk for {raw:,} bytes of records uncompressed "
          f"({on_disk / raw:.2f}); {links * 8 / pages:.1f} bytes a page as packed targets alone; "
          f"torn files {scan.torn_files}")
    print(f"the whole crawl's Redis used_memory growth: {crawl_bytes:,} bytes, {crawl_bytes / known:.1f} per known URL "
          f"(links no longer in it)")


if __name__ == "__main__":
    main()
