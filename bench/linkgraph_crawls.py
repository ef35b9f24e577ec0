"""The link graph of real crawls: bits per link, build time, query latency.

Crawls (``scrapy crawl web`` with ``JOBDIR``, default settings) the bundled
test web (``make demo``'s, 30 hosts x 30 pages) and the real web on
loopback (nginx serving four Debian documentation sites under their real
names, :mod:`testweb.realweb`), then builds each crawl's graph as ``scrapy
linkgraph`` does and queries it by URL (:class:`~extensions.linkgraph.graph.LinkGraph`,
out and in for every node, in-process: the command's own start-up is
Scrapy's, not the graph's).

    python -m bench.linkgraph_crawls                 # both crawls
    python -m bench.linkgraph_crawls --crawls testweb

Writes bench/results/linkgraph_crawls.txt.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from extensions.linkgraph.build import build_link_graph
from extensions.linkgraph.graph import LinkGraph
from extensions.backends import read_only_store
from testweb import WebConfig, start_testweb
from testweb.crawlrun import run_web_crawl
from testweb.realweb import start_realweb

RESULTS = Path(__file__).parent / "results"


def crawl_testweb(workdir: Path) -> Path:
    with start_testweb(WebConfig(hosts=30, pages=30), workdir / "web") as web:
        job = workdir / "job"
        result = run_web_crawl(workdir / "crawl", str(web.seeds_file),
                               {"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": 10, "JOBDIR": job}, timeout=1800)
        if result.returncode != 0:
            raise RuntimeError(result.log[-3000:])
    return job


def crawl_realweb(workdir: Path) -> Path:
    with start_realweb(workdir / "realweb") as web:
        job = workdir / "job"
        result = run_web_crawl(
            workdir / "crawl", ",".join(web.seeds()),
            {"DNS_HOSTS": web.hosts_file, "ALLOW_PRIVATE_ADDRESSES": True, "JOBDIR": job},
            spider_args={"allowed_domains": ",".join(site.host for site in web.sites)},
            robots_overrides=False, timeout=1800)
        if result.returncode != 0:
            raise RuntimeError(result.log[-3000:])
    return job


def measure(job: Path) -> dict[str, Any]:
    store = read_only_store({"JOBDIR": str(job)})
    try:
        report = build_link_graph(store, job / "linkgraph")
    finally:
        store.close()
    graph = LinkGraph(job / "linkgraph")
    try:
        urls = [graph.url_of(node) for node in range(graph.num_nodes)]
        timings: dict[str, list[float]] = {"out": [], "in": []}
        for url in urls:
            for name, query in (("out", graph.out_links), ("in", graph.in_links)):
                started = time.perf_counter()
                query(url)
                timings[name].append(time.perf_counter() - started)
    finally:
        graph.close()
    figures = {name: (np.median(values) * 1e6, np.percentile(values, 99) * 1e6) for name, values in timings.items()}
    return {"report": report, "latency": figures}


def table(rows: dict[str, dict[str, Any]]) -> str:
    lines = ["| crawl | pages | nodes | arcs | bits/link | bits/link (transposed) | compressed | "
             "uncompressed (32-bit lists) | build s | out median / p99 µs | in median / p99 µs |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, row in rows.items():
        r, lat = row["report"], row["latency"]
        lines.append(
            f"| {name} | {r.pages:,} | {r.nodes:,} | {r.arcs:,} | {r.bits_per_link:.2f} | "
            f"{r.bits_per_link_transposed:.2f} | {r.graph_bytes / 1024:.1f} KiB | "
            f"{r.uncompressed_bytes / 1024:.1f} KiB | {r.build_seconds:.2f} | "
            f"{lat['out'][0]:.0f} / {lat['out'][1]:.0f} | {lat['in'][0]:.0f} / {lat['in'][1]:.0f} |")
    rho = "; ".join(f"{name}: {row['report'].aopic_spearman} over {row['report'].aopic_pages} pages"
                    for name, row in rows.items())
    return "\n".join(lines) + f"\n\nSpearman rho, AOPIC history vs PageRank: {rho}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crawls", default="testweb,realweb", help="comma-separated: testweb, realweb")
    parser.add_argument("--out", type=Path, default=RESULTS / "linkgraph_crawls.txt")
    args = parser.parse_args()
    crawls = {"testweb": crawl_testweb, "realweb": crawl_realweb}
    rows = {}
    with tempfile.TemporaryDirectory(prefix="bench-linkgraph-") as tmp:
        for name in args.crawls.split(","):
            workdir = Path(tmp) / name
            rows[name] = measure(crawls[name](workdir))
    text = ("Link graphs of real crawls (default settings, JOBDIR); build = scrapy linkgraph's "
            "(read, order, compress both graphs, PageRank)\n\n" + table(rows))
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
