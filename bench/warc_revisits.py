"""WARC bytes with revisit records versus without, on real documentation.

nginx (Debian's) serves Debian's documentation packages under their real
host names over http and https (:mod:`testweb.realweb`). Each scenario is
crawled with ``WARC_REVISITS`` on and off, alternating, ``--runs`` times;
the table shows the medians: WARC bytes (every file), CDXJ bytes, the
records by kind, and the ratio of the WARC bytes.

* ``real web``: ``scrapy crawl web`` with the project's settings, seeded with
  every site's http and https root (as ``tests/test_realweb_e2e.py``); the
  content-seen test follows only the first copy's links, so the copies are
  the roots and the ``/`` and ``/index.html`` pairs;
* ``real web, every copy``: the same with ``CONTENTSEEN_ENABLED=False``, so
  both schemes of every site served over https are crawled in full (an
  archive crawl without a content-seen test: every copy reaches the WARC
  writer);
* ``continuous, 304s``: debian-reference re-visited every few seconds
  (``REVISIT_ENABLED``), the conditional GET answered 304, until
  ``--responses`` responses (``CLOSESPIDER_PAGECOUNT``);
* ``continuous, no validators``: the same without conditional GET
  (``ConditionalGetMiddleware`` off): every re-visit fetches the page in
  full, as with servers that send no validators.

Stock Scrapy writes no WARC files, so there is nothing to put beside it.

``--cost``: the writer's CPU time per download instead (no crawl, no
network): ``WarcWriter.response_downloaded`` on real responses built from
the documentation files (under 1 MB), each under an http and an https URL
(half of them copies), with revisits and the CDXJ index on and off; medians of ``--runs``
passes (process time, so the shared machine's load counts less).

    python -m bench.warc_revisits --runs 1
    python -m bench.warc_revisits --cost --runs 5

Writes bench/results/warc_revisits.txt (``--cost``: warc_cost.txt).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from testweb.crawlrun import run_web_crawl
from testweb.realweb import SITES, RealWeb, start_realweb

RESULTS = Path(__file__).parent / "results"
DEBIAN = "www.debian.org"
MAX_FILE = 1 << 20  # --cost: bytes of a file at most


@dataclass
class Archive:
    warc_bytes: int
    cdxj_bytes: int
    records: Counter[str]  # response, revisit/identical, revisit/not-modified, request, ...


def measure(directory: Path) -> Archive:
    records: Counter[str] = Counter()
    for path in sorted(directory.glob("*.warc.gz")):
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                kind = record.rec_type
                if kind == "revisit":
                    kind += "/" + record.rec_headers.get_header("WARC-Profile").rsplit("/", 1)[-1]
                records[kind] += 1
    return Archive(sum(p.stat().st_size for p in directory.glob("*.warc.gz")),
                   sum(p.stat().st_size for p in directory.glob("*.cdxj")), records)


def scenarios(web: RealWeb, responses: int) -> dict[str, tuple[str, dict[str, Any], dict[str, str]]]:
    """name -> (seeds, settings, spider arguments)."""
    everything = {"allowed_domains": ",".join(site.host for site in web.sites)}
    debian = {"allowed_domains": DEBIAN}
    base = {"DNS_HOSTS": web.hosts_file, "FRONTIER_IDLE_CLOSE": 5}
    continuous = {**base, "REVISIT_ENABLED": True, "REVISIT_INITIAL_INTERVAL": 2, "REVISIT_MIN_INTERVAL": 1,
                  "REVISIT_MAX_INTERVAL": 4, "CLOSESPIDER_PAGECOUNT": responses}
    no_validators = json.dumps({"extensions.revisit.conditional.ConditionalGetMiddleware": None})
    return {
        "real web": (",".join(web.seeds()), base, everything),
        "real web, every copy": (",".join(web.seeds()), {**base, "CONTENTSEEN_ENABLED": False}, everything),
        "continuous, 304s": (f"{web.origin(DEBIAN)}/", continuous, debian),
        "continuous, no validators": (f"{web.origin(DEBIAN)}/",
                                      {**continuous, "DOWNLOADER_MIDDLEWARES": no_validators}, debian),
    }


def crawl(workdir: Path, seeds: str, settings: dict[str, Any], spider_args: dict[str, str],
          revisits: bool, timeout: float) -> Archive:
    result = run_web_crawl(workdir, seeds, {**settings, "JOBDIR": workdir / "job", "WARC_DIR": workdir / "warcs",
                                            "WARC_REVISITS": revisits},
                           spider_args, timeout=timeout, robots_overrides=False)
    if result.returncode != 0:
        raise RuntimeError(f"crawl in {workdir} failed ({result.returncode}):\n{result.log[-3000:]}")
    return measure(workdir / "warcs")


def median_archive(archives: list[Archive]) -> Archive:
    middle = sorted(archives, key=lambda a: a.warc_bytes)[len(archives) // 2]
    return Archive(int(statistics.median(a.warc_bytes for a in archives)),
                   int(statistics.median(a.cdxj_bytes for a in archives)), middle.records)


def table(results: dict[str, dict[bool, Archive]], header: str) -> str:
    lines = [header, (f"{'scenario':<28}{'revisits':>9}{'WARC bytes':>13}{'CDXJ bytes':>12}"
                      f"{'responses':>11}{'identical':>11}{'not-mod.':>10}{'with/without':>14}")]
    for name, pair in results.items():
        for revisits in (True, False):
            archive = pair[revisits]
            ratio = f"{pair[True].warc_bytes / pair[False].warc_bytes:.3f}" if revisits else ""
            lines.append(f"{name:<28}{'on' if revisits else 'off':>9}{archive.warc_bytes:>13,}"
                         f"{archive.cdxj_bytes:>12,}{archive.records['response']:>11}"
                         f"{archive.records['revisit/identical-payload-digest']:>11}"
                         f"{archive.records['revisit/server-not-modified']:>10}{ratio:>14}")
    return "\n".join(lines)


def cost_responses(limit: int) -> list[Any]:
    """Real responses: documentation files, each as http and https."""
    from scrapy import Request  # noqa: PLC0415
    from scrapy.http import HtmlResponse  # noqa: PLC0415

    responses = []
    for site in SITES:
        # robots.txt keeps the crawls off nodejs' 5.6 MB one-page copy; so does this
        files = [path for path in sorted(site.document_root.glob("*.html")) if path.stat().st_size < MAX_FILE]
        for path in files[:limit]:
            body = path.read_bytes()
            for scheme in ("http", "https"):
                url = f"{scheme}://{site.host}/{path.name}"
                headers = {"Content-Type": "text/html", "Server": "nginx"}
                responses.append(HtmlResponse(url, body=body, headers=headers, request=Request(url)))
    return responses


def cost(runs: int, limit: int) -> str:
    """µs of CPU per download of ``WarcWriter.response_downloaded``."""
    import time  # noqa: PLC0415

    from scrapy.utils.test import get_crawler  # noqa: PLC0415

    from extensions.output.archive import SqliteArchiveIndex  # noqa: PLC0415
    from extensions.output.warc import WarcWriter  # noqa: PLC0415

    responses = cost_responses(limit)
    rows = []
    for revisits, cdxj in ((False, False), (False, True), (True, False), (True, True)):
        seconds = []
        for _ in range(runs):
            with tempfile.TemporaryDirectory(prefix="bench-warc-cost-") as tmp:
                archive = SqliteArchiveIndex(Path(tmp) / "archive.sqlite3") if revisits else None
                writer = WarcWriter(Path(tmp), "bench", 1 << 30, cdxj, get_crawler().stats, archive, recover=False)
                started = time.process_time()
                for response in responses:
                    writer.response_downloaded(response, response.request)
                writer.spider_closed()
                seconds.append(time.process_time() - started)
                size = sum(p.stat().st_size for p in Path(tmp).glob("*.warc.gz"))
        rows.append((revisits, cdxj, statistics.median(seconds) / len(responses) * 1e6, size))
    lines = [(f"WarcWriter.response_downloaded, CPU per download: {len(responses)} responses "
              f"({len(responses) // 2} documentation files as http and https), medians of {runs} passes"),
             f"{'revisits':>9}{'CDXJ':>6}{'µs/download':>13}{'WARC bytes':>13}"]
    lines += [f"{'on' if r else 'off':>9}{'on' if c else 'off':>6}{us:>13.0f}{size:>13,}" for r, c, us, size in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--cost", action="store_true", help="the writer's CPU per download (no crawl)")
    parser.add_argument("--files", type=int, default=40, help="--cost: files per site at most (default 40)")
    parser.add_argument("--responses", type=int, default=200, help="continuous crawls: responses (default 200)")
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--output", type=Path, default=RESULTS / "warc_revisits.txt")
    args = parser.parse_args(argv)
    if args.cost:
        text = cost(args.runs, args.files)
        print(text)
        output = args.output if args.output != RESULTS / "warc_revisits.txt" else RESULTS / "warc_cost.txt"
        output.write_text(text + "\n")
        return
    runs: dict[str, dict[bool, list[Archive]]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-warc-") as tmp:
        workdir = Path(tmp)
        with start_realweb(workdir / "realweb", SITES) as web:
            plan = scenarios(web, args.responses)
            for run in range(args.runs):
                for number, (name, (seeds, settings, spider_args)) in enumerate(plan.items()):
                    for revisits in (True, False):
                        rundir = workdir / f"{number}-{run}-{'on' if revisits else 'off'}"
                        archive = crawl(rundir, seeds, settings, spider_args, revisits, args.timeout)
                        runs.setdefault(name, {True: [], False: []})[revisits].append(archive)
                        print(f"{name}, revisits {'on' if revisits else 'off'}: {archive.warc_bytes:,} bytes",
                              flush=True)
    results = {name: {flag: median_archive(archives) for flag, archives in pair.items()}
               for name, pair in runs.items()}
    header = (f"WARC bytes with revisit records (WARC_REVISITS) versus without; real documentation on nginx "
              f"({', '.join(s.host for s in SITES)}), http + https; continuous: {DEBIAN}, "
              f"{args.responses} responses; medians of {args.runs} run(s), {os.cpu_count()} cores")
    text = table(results, header)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
