"""Profile one whole crawl of the synthetic test web under cProfile.

Runs ``scrapy crawl web`` exactly as ``bench/crawl_vs_scrapy.py`` runs ours
(same settings: DNS_HOSTS, DEPTH_LIMIT, CONCURRENT_REQUESTS, JOBDIR,
ROBOTSTXT_UNREACHABLE_PERIOD=0, every component on, WARC off) but as
``python -m cProfile -o crawl.prof scrapy crawl web ...``, then prints the top
functions by tottime and by cumtime and the total own time by package.

    python -m bench.profile_crawl --hosts 200 --pages 20
    python -m bench.profile_crawl --hosts 100 --pages 25 --weight real --out bench/results/profile_crawl_real.txt

The table also goes to ``bench/results/profile_crawl.txt`` (``--out``).
cProfile slows the crawl (every Python call is traced), so its pages/s is
lower than an unprofiled crawl's and C-heavy code looks cheaper than it is
relative to Python-heavy code.
"""

from __future__ import annotations

import argparse
import io
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

from bench.crawl_vs_scrapy import pages_and_seconds, run_measured
from testweb import WebConfig, start_testweb
from testweb.crawlrun import ROOT, SCRAPY

# Package buckets for own time, first match wins (matched on the file path).
PACKAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ours (extensions/, crawler/)", (f"{ROOT}/extensions/", f"{ROOT}/crawler/")),
    ("scrapy", ("/scrapy/",)),
    ("twisted", ("/twisted/",)),
    ("lxml/parsel/w3lib", ("/lxml/", "/parsel/", "/w3lib/", "/cssselect/")),
    ("sqlite3", ("/sqlite3/", "sqlite3.Connection", "sqlite3.Cursor")),
)


#: A page's work by component: (label, [(file path suffix, function)]); the
#: functions' cumulative time (their callees included) summed, per page.
#: Indented labels are inside the entry above them.
COMPONENTS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("spider: a page's processing (parse callback)", (("crawler/spiders/web.py", "parse"),)),
    ("  parse: decode + libxml2 tree (text_tree)", (("extensions/contentseen/text.py", "text_tree"),)),
    ("  parse: tree walk (link elements, tag counts)", (("extensions/processors/parsedpage.py", "parse_page"),)),
    ("  text: visible text of the tree (text_of)", (("extensions/contentseen/text.py", "text_of"),)),
    ("  features: fingerprint, shingles, simhash", (("extensions/contentseen/features.py", "content_features"),)),
    ("  links: link extractor (replay, resolve, canonicalise)", (("extensions/processors/html_links.py", "process"),)),
    ("  tags: tag counter", (("extensions/processors/tag_counter.py", "process"),)),
    ("pipelines: every item pipeline (process_item)", (("extensions/pipelines/contentseen.py", "process_item"),
                                                       ("extensions/pipelines/hostyield.py", "process_item"),
                                                       ("extensions/pipelines/internal.py", "process_item"),
                                                       ("extensions/pipelines/links.py", "process_item"))),
    ("  content-seen test", (("extensions/pipelines/contentseen.py", "process_item"),)),
    ("  links to the frontier (LinkScheduler)", (("extensions/pipelines/links.py", "process_item"),)),
    ("frontier: page_done + enqueue_request + next_request", (("extensions/frontier/scheduler.py", "page_done"),
                                                             ("extensions/frontier/scheduler.py", "enqueue_request"),
                                                             ("extensions/frontier/scheduler.py", "next_request"))),
    ("robots.txt middleware (requests)", (("extensions/robots/middleware.py", "process_request"),)),
)
#: Rows shown net of the rows they contain: label -> labels subtracted.
NET_OF = {"  parse: tree walk (link elements, tag counts)": ("  parse: decode + libxml2 tree (text_tree)",
                                                            "  text: visible text of the tree (text_of)")}


def components(stats: pstats.Stats, pages: int) -> list[tuple[str, float | None]]:
    """(label, microseconds per page or None when no function of it is in the profile)."""
    found: dict[str, float | None] = {}
    for label, functions in COMPONENTS:
        total = [ct for (filename, _line, name), (_cc, _nc, _tt, ct, _callers) in stats.stats.items()  # type: ignore[attr-defined]
                 if any(name == function and filename.endswith(suffix) for suffix, function in functions)]
        found[label] = 1e6 * sum(total) / pages if total and pages else None
    for label, minus in NET_OF.items():
        if found[label] is not None:
            found[label] -= sum(found[other] or 0.0 for other in minus)  # type: ignore[operator]
    return list(found.items())


def by_module(stats: pstats.Stats) -> list[tuple[str, float]]:
    """(our module, own seconds), largest first."""
    totals: dict[str, float] = {}
    for (filename, _line, _name), (_cc, _nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        for root in (f"{ROOT}/extensions/", f"{ROOT}/crawler/"):
            if filename.startswith(root):
                module = filename[len(str(ROOT)) + 1:]
                totals[module] = totals.get(module, 0.0) + tt
    return sorted(totals.items(), key=lambda item: -item[1])


def bucket(filename: str, funcname: str) -> str:
    """The package bucket of one pstats entry (``~`` is a builtin)."""
    key = f"{filename} {funcname}"
    for name, needles in PACKAGES:
        if any(needle in key for needle in needles):
            return name
    if filename == "~":
        # builtins: C functions called from anywhere ("<method 'execute' of
        # 'sqlite3.Cursor' objects>" caught above)
        return "builtins (C, unattributed)"
    if "site-packages" in filename or "dist-packages" in filename:
        return "other"
    if filename.startswith(sys.base_prefix) or "/lib/python3" in filename:
        return "stdlib"
    return "other"


def by_package(stats: pstats.Stats) -> list[tuple[str, float, int]]:
    """(bucket, own seconds, calls), largest first."""
    totals: dict[str, list[float]] = {}
    for (filename, _line, funcname), (_cc, nc, tt, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        entry = totals.setdefault(bucket(filename, funcname), [0.0, 0])
        entry[0] += tt
        entry[1] += nc
    return sorted(((name, t, int(n)) for name, (t, n) in totals.items()), key=lambda x: -x[1])


def top(stats: pstats.Stats, key: str, count: int) -> str:
    buffer = io.StringIO()
    stats.stream = buffer  # type: ignore[attr-defined]
    stats.sort_stats(key).print_stats(count)
    lines = buffer.getvalue().splitlines()
    # drop pstats' preamble (file name, totals) up to the column header
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    return "\n".join(lines[start:]).rstrip()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--links", type=int, default=8)
    parser.add_argument("--weight", choices=("tiny", "real"), default="tiny", help="page weight of the test web")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--timeout", type=float, default=1200.0)
    parser.add_argument("--keep", type=Path, default=None, help="also copy the .prof file here")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "profile_crawl.txt")
    parser.add_argument("-s", dest="settings", action="append", default=[], help="NAME=VALUE for the crawl")
    args = parser.parse_args(argv)
    extra = [part for item in args.settings for part in ("-s", item)]

    config = WebConfig(hosts=args.hosts, pages=args.pages, links=args.links, weight=args.weight)
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        workdir = Path(tmp)
        prof = workdir / "crawl.prof"
        with start_testweb(config, workdir / "web") as web:
            since = time.time()
            cmd = [
                sys.executable, "-m", "cProfile", "-o", str(prof), SCRAPY,
                "crawl", "web", "-a", f"seeds={web.seeds_file}",
                "-s", f"DNS_HOSTS={web.hosts_file}", "-s", f"DEPTH_LIMIT={args.depth}",
                "-s", f"CONCURRENT_REQUESTS={args.concurrency}", "-s", "LOG_LEVEL=INFO",
                "-s", f"JOBDIR={workdir / 'job'}", "-s", "ALLOW_PRIVATE_ADDRESSES=True", *extra,
                "-s", "ROBOTSTXT_UNREACHABLE_PERIOD=0",
            ]
            started = time.monotonic()
            rss, _cpu = run_measured(cmd, ROOT, dict(os.environ), args.timeout, workdir / "crawl.log")
            wall = time.monotonic() - started
            pages, seconds = pages_and_seconds(web.access_log, since)
        if args.keep:
            args.keep.write_bytes(prof.read_bytes())
        stats = pstats.Stats(str(prof))
        total = stats.total_tt  # type: ignore[attr-defined]
        packages = by_package(stats)
        report = io.StringIO()
        w = report.write
        w(f"profiled whole crawl (cProfile): {args.hosts} hosts x {args.pages} pages ({args.weight}), "
          f"depth {args.depth}, "
          f"CONCURRENT_REQUESTS={args.concurrency}, every component on, WARC off"
          + (f"; {' '.join(args.settings)}" if args.settings else "") + "\n")
        w(f"pages {pages}, crawl seconds {seconds:.2f}, pages/s {pages / seconds if seconds else 0:.1f} "
          f"(UNDER cProfile: slower than an unprofiled crawl); process wall {wall:.1f} s, "
          f"profiled CPU {total:.1f} s, peak RSS {rss:.0f} MB\n\n")
        w("own time (tottime) by package\n")
        w(f"{'package':<32}{'seconds':>10}{'share':>8}{'calls':>12}\n")
        for name, seconds_, calls in packages:
            w(f"{name:<32}{seconds_:>10.2f}{seconds_ / total:>8.1%}{calls:>12}\n")
        w(f"\na page's work by component (cumulative time, callees included; UNDER cProfile), "
          f"microseconds per page\n")
        for label, micros in components(stats, pages):
            w(f"{label:<58}{'-' if micros is None else f'{micros:.0f}':>10}\n")
        w("\nown time (tottime) of our modules, microseconds per page (the C code they call is not in it)\n")
        for module, seconds_ in by_module(stats)[:args.top]:
            w(f"{module:<50}{1e6 * seconds_ / max(pages, 1):>10.0f}\n")
        w(f"\ntop {args.top} by tottime\n{top(stats, 'tottime', args.top)}\n")
        w(f"\ntop {args.top} by cumtime\n{top(stats, 'cumulative', args.top)}\n")
    text = report.getvalue()
    print(text, end="")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
