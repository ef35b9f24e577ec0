"""How host yield's defaults were chosen: the yield of real sites, replayed.

Two crawls with every default except ``HOST_YIELD_ENABLED=False``:

* the real-web test's sites (:mod:`testweb.realweb`: four documentation
  sites from Debian's doc packages, over http and https), to the end;
* the real-application test's site (:mod:`testweb.realapp`: cgit over
  generated repositories beside sphinx-doc's site), which never ends without
  host yield: bounded by ``CLOSESPIDER_PAGECOUNT`` (``--app-pages``).

Each host's pages, in the order the crawl judged them (its items: status and
content-seen verdict), are then replayed through
:class:`extensions.pipelines.hostyield.HostYield` for each window and
threshold of the grid. Per host the table gives its pages, its share of new
content, and per (window, threshold) either ``-`` (never stopped) or where
it would stop: ``page@share`` (the page that stops it, the share of new
content among its pages until then). A default must stop no documentation
site, and stop the application early enough for most of its requests to
have brought new text. Last, the URLs each host had in the URL database at
the end (for ``FRONTIER_HOST_BUDGET``).

    python -m bench.host_yield

Writes bench/results/host_yield.txt.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from extensions.pipelines.hostyield import HostYield, PageKind
from extensions.pipelines.hostyield import page_kind
from testweb.realapp import start_realapp
from testweb.realweb import start_realweb

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
RESULTS = Path(__file__).parent / "results"
WINDOWS = (50, 100, 200)
THRESHOLDS = (0.3, 0.4, 0.5, 0.6)


def crawl(workdir: Path, seeds: list[str], hosts: list[str], hosts_file: Path, timeout: float,
          extra: dict[str, Any]) -> list[dict[str, Any]]:
    """One ``scrapy crawl web`` without host yield; its items, in order."""
    command = [SCRAPY, "crawl", "web", "-a", f"seeds={','.join(seeds)}", "-a", f"allowed_domains={','.join(hosts)}",
               "-O", str(workdir / "items.jsonl")]
    settings = {"DNS_HOSTS": hosts_file, "ALLOW_PRIVATE_ADDRESSES": True, "LOG_LEVEL": "INFO",
                "JOBDIR": workdir / "job", "HOST_YIELD_ENABLED": False, **extra}
    for name, value in settings.items():
        command += ["-s", f"{name}={value}"]
    with open(workdir / "crawl.log", "wb") as log:
        subprocess.run(command, cwd=ROOT, env=dict(os.environ), stdout=log, stderr=subprocess.STDOUT,
                       timeout=timeout, check=True)
    return [json.loads(line) for line in (workdir / "items.jsonl").read_text().splitlines() if line.strip()]


def kinds_by_host(items: list[dict[str, Any]]) -> dict[str, list[PageKind]]:
    by_host: dict[str, list[PageKind]] = defaultdict(list)
    for item in items:
        kind = page_kind(item)
        url = item.get("final_url") or item.get("url")
        if kind is not None and url:
            by_host[(urlsplit(url).hostname or "").lower()].append(kind)
    return by_host


def stop_point(kinds: list[PageKind], window: int, threshold: float) -> str:
    """``-`` or ``page@share``: where the host would stop (see the module docstring)."""
    tracker = HostYield(window, threshold)
    for index, kind in enumerate(kinds):
        if tracker.record("host", kind).stopped_now:
            pages = [k for k in kinds[:index + 1] if k is not PageKind.ERROR]
            share = sum(k is PageKind.NEW for k in pages) / max(1, len(pages))
            return f"{index + 1}@{share:.2f}"
    return "-"


def lowest_yield(kinds: list[PageKind], window: int) -> float:
    """The lowest yield the host had over the crawl (no stop)."""
    tracker = HostYield(window, 0.0)
    return min((tracker.record("host", kind).share for kind in kinds), default=1.0)


def known_urls(job: Path) -> dict[str, int]:
    connection = sqlite3.connect(job / "frontier.sqlite3")
    try:
        return dict(connection.execute("SELECT host, count(*) FROM urls GROUP BY host"))
    finally:
        connection.close()


def report(by_host: dict[str, list[PageKind]], known: dict[str, int]) -> list[str]:
    grid = [(w, t) for w in WINDOWS for t in THRESHOLDS]
    lines = [f"{'host':<22} {'pages':>6} {'new':>5} {'errors':>6} {'URLs':>6} {'low W100':>8}  "
             + " ".join(f"{f'W{w} T{t}':>12}" for w, t in grid)]
    for host in sorted(by_host):
        kinds = by_host[host]
        pages = [k for k in kinds if k is not PageKind.ERROR]
        share = sum(k is PageKind.NEW for k in pages) / max(1, len(pages))
        lines.append(f"{host:<22} {len(kinds):>6} {share:>5.2f} {len(kinds) - len(pages):>6} "
                     f"{known.get(host, 0):>6} {lowest_yield(kinds, 100):>8.2f}  "
                     + " ".join(f"{stop_point(kinds, w, t):>12}" for w, t in grid))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--app-pages", type=int, default=3000, help="CLOSESPIDER_PAGECOUNT of the application crawl")
    parser.add_argument("--timeout", type=float, default=1800.0, help="last resort per crawl (seconds)")
    parser.add_argument("--output", type=Path, default=RESULTS / "host_yield.txt")
    args = parser.parse_args()
    lines = ["Host yield replayed on crawls without it (new: share of new content among 2xx pages; URLs: rows",
             "in the URL database at the end; low W100: the lowest yield over a window of 100 pages; W window,",
             "T threshold: '-' never stopped, else page@share of new content among its pages until the stop)", ""]
    with tempfile.TemporaryDirectory(prefix="bench-hostyield-") as tmp:
        workdir = Path(tmp)
        with start_realweb(workdir / "realweb") as web:
            (workdir / "web").mkdir()
            items = crawl(workdir / "web", web.seeds(), [s.host for s in web.sites], web.hosts_file, args.timeout, {})
            lines += ["Real documentation sites (the real-web test), to the end:",
                      *report(kinds_by_host(items), known_urls(workdir / "web" / "job")), ""]
        with start_realapp(workdir / "realapp") as app:
            (workdir / "app").mkdir()
            items = crawl(workdir / "app", app.seeds(), list(app.hosts), app.hosts_file, args.timeout,
                          {"CLOSESPIDER_PAGECOUNT": args.app_pages})
            lines += [f"Real application (the real-application test), first {args.app_pages} pages:",
                      *report(kinds_by_host(items), known_urls(workdir / "app" / "job"))]
    text = "\n".join(lines)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
