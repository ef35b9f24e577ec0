"""Memory of a wide crawl: peak RSS after 3,000 and 20,000 pages, and where it goes.

The synthetic web (:mod:`testweb`) with ``--hosts`` 2,000 hosts of
``--pages`` pages and ``--links`` 40 links a page is crawled by ``scrapy
crawl web`` with default settings except ``CONCURRENT_REQUESTS=64``,
``JOBDIR`` and what the loopback test web needs (``DNS_HOSTS``,
``ALLOW_PRIVATE_ADDRESSES``). The probe extension (:mod:`bench.memprobe`)
records, when the crawl has scraped 3,000 and then 20,000 items (one item
per fetched document), the kernel's peak resident set so far (VmHWM) and
SQLite's own heap (``sqlite3_memory_used``: tracemalloc cannot see C
allocations), and closes the spider at the last mark.

Two crawls per checkout:

* ``rss``: no tracing; the peak RSS figures come from this one;
* ``components`` (``--components``): the same crawl under tracemalloc
  (``--frames`` frames a trace), whose snapshots at both marks are grouped
  by component (the innermost frame in ``extensions/`` or ``crawler/``,
  else the innermost frame's package). Tracing slows the crawl and adds
  its own memory, so its RSS is not reported.

Each ``--checkout NAME=PATH`` (default: this one only; name another
checkout, for example a clone at an older commit, to compare) runs the
``rss`` crawl; ``--components`` names the checkouts that also run the traced
one (default: this one).

    python -m bench.wide_memory --out bench/results/wide_memory.txt
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.page_memory import probe_path
from testweb import WebConfig, start_testweb

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
MB = 1024 * 1024
MARKS = (3000, 20000)
TOP_COMPONENTS = 14


def crawl(checkout: Path, web, probe_dir: Path, workdir: Path, concurrency: int, frames: int,
          timeout: float, extra: list[str]) -> list[dict]:
    """One crawl to the last mark; the probe's mark records."""
    workdir.mkdir(parents=True)
    probe_file = workdir / "probe.jsonl"
    command = [
        SCRAPY, "crawl", "web", "-a", f"seeds={web.seeds_file}", "-O", str(workdir / "items.jsonl"),
        "-s", 'EXTENSIONS={"memprobe.MemoryProbe": 0}', "-s", f"MEMPROBE_FILE={probe_file}",
        "-s", f"MEMPROBE_MARKS={','.join(map(str, MARKS))}", "-s", "MEMPROBE_CLOSE_AT_LAST_MARK=True",
        "-s", f"MEMPROBE_TRACEMALLOC_FRAMES={frames}",
        "-s", f"CONCURRENT_REQUESTS={concurrency}", "-s", f"DNS_HOSTS={web.hosts_file}",
        "-s", "ALLOW_PRIVATE_ADDRESSES=True", "-s", f"JOBDIR={workdir / 'job'}",
        "-s", f"PROGRESS_REPORT_FILE={workdir / 'report.json'}",
        "-s", f"LOG_FILE={workdir / 'crawl.log'}", "-s", "LOG_LEVEL=INFO", *extra,
    ]
    env = {**os.environ, "PYTHONPATH": str(probe_dir)}
    subprocess.run(command, cwd=checkout, env=env, timeout=timeout, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    marks = [json.loads(line) for line in probe_file.read_text().splitlines()] if probe_file.exists() else []
    if [mark["pages"] for mark in marks] != list(MARKS):
        raise RuntimeError(f"crawl in {workdir} did not reach {MARKS} pages")
    return marks


def rss_rows(name: str, marks: list[dict]) -> list[str]:
    first, last = marks
    sqlite = [mark.get("sqlite", {}) for mark in marks]
    return [
        f"{name:10} {first['peak'] / MB:>10.0f} {last['peak'] / MB:>10.0f} "
        f"{last['peak'] / first['peak']:>7.2f} "
        f"{sqlite[0].get('used', 0) / MB:>10.1f} {sqlite[1].get('used', 0) / MB:>10.1f} "
        f"{sqlite[1].get('highwater', 0) / MB:>9.1f}",
    ]


def component_rows(name: str, marks: list[dict]) -> list[str]:
    first, last = (mark["components"] for mark in marks)
    names = sorted(set(first) | set(last), key=lambda c: -max(first.get(c, 0), last.get(c, 0)))
    lines = [f"where Python's memory goes ({name}, tracemalloc, live MB at each mark)",
             f"{'component':32} {'3000':>8} {'20000':>8} {'growth':>8}"]
    for component in names[:TOP_COMPONENTS]:
        a, b = first.get(component, 0) / MB, last.get(component, 0) / MB
        lines.append(f"{component:32} {a:>8.1f} {b:>8.1f} {b - a:>+8.1f}")
    rest = names[TOP_COMPONENTS:]
    a = sum(first.get(c, 0) for c in rest) / MB
    b = sum(last.get(c, 0) for c in rest) / MB
    lines.append(f"{'(the rest)':32} {a:>8.1f} {b:>8.1f} {b - a:>+8.1f}")
    a, b = (mark["tracemalloc"] / MB for mark in marks)
    lines.append(f"{'total traced':32} {a:>8.1f} {b:>8.1f} {b - a:>+8.1f}")
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--links", type=int, default=40)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--checkout", action="append", default=[], help="NAME=PATH (repeatable)")
    parser.add_argument("--components", action="append", default=None,
                        help="checkout NAME that also runs the traced crawl (repeatable; 'none': none)")
    parser.add_argument("--frames", type=int, default=6)
    parser.add_argument("--no-rss", action="store_true", help="only the traced crawls")
    parser.add_argument("--timeout", type=float, default=1800.0)
    parser.add_argument("-s", dest="settings", action="append", default=[], help="NAME=VALUE for every crawl")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    checkouts = dict(item.split("=", 1) for item in args.checkout) or {"this": str(ROOT)}
    traced = [name for name in (args.components or ["this"]) if name in checkouts]
    extra = [part for item in args.settings for part in ("-s", item)]
    scratch = Path(tempfile.mkdtemp(prefix="wide-memory-"))
    probe_dir = probe_path()
    config = WebConfig(hosts=args.hosts, pages=args.pages, links=args.links)
    lines = [f"Wide crawl: {args.hosts} hosts x {args.pages} pages, {args.links} links a page, "
             f"CONCURRENT_REQUESTS={args.concurrency}, otherwise defaults"
             + (f" + {' '.join(args.settings)}" if args.settings else ""),
             f"{'checkout':10} {'peak@3000':>10} {'peak@20000':>10} {'ratio':>7} "
             f"{'sqlite@3k':>10} {'sqlite@20k':>10} {'sqlite hw':>9}"]
    component_lines: list[str] = []
    try:
        with start_testweb(config, scratch / "web") as web:
            for name, path in ({} if args.no_rss else checkouts).items():
                marks = crawl(Path(path), web, probe_dir, scratch / f"{name}-rss", args.concurrency, 0,
                              args.timeout, extra)
                lines += rss_rows(name, marks)
                print(lines[-1], file=sys.stderr)
            for name in traced:
                marks = crawl(Path(checkouts[name]), web, probe_dir, scratch / f"{name}-traced",
                              args.concurrency, args.frames, args.timeout, extra)
                component_lines += [""] + component_rows(name, marks)
    except Exception:
        print(f"crawl failed; its files are in {scratch}", file=sys.stderr)
        raise
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)
    lines.append("peak: VmHWM (MB) when the crawl had scraped that many items; sqlite: SQLite's heap "
                 "(sqlite3_memory_used, MB), hw: its high-water mark")
    text = "\n".join(lines + component_lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
