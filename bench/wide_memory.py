"""Memory of a wide crawl: peak RSS at 3,000, 20,000 and 100,000 pages, and where it goes.

The synthetic web (:mod:`testweb`) with ``--hosts`` 2,000 hosts of
``--pages`` 1,000 pages and ``--links`` 40 links a page (a URL space far
larger than the crawl, so known URLs and hosts keep growing) is crawled by
``scrapy crawl web`` with default settings except ``CONCURRENT_REQUESTS=64``,
``JOBDIR`` and what the loopback test web needs (``DNS_HOSTS``,
``ALLOW_PRIVATE_ADDRESSES``). ``--backend redis`` crawls with one process on
the Redis store instead (``FRONTIER_BACKEND=redis`` on a ``redis-server``
this script starts on loopback; content-seen follows the frontier's backend).
The probe extension (:mod:`bench.memprobe`) records, when the crawl has
scraped each of ``--marks`` items (one item per fetched document), the
kernel's peak resident set so far (VmHWM) and SQLite's own heap
(``sqlite3_memory_used``: tracemalloc cannot see C allocations), and closes
the spider at the last mark.

Per checkout:

* the ``rss`` crawl, untraced: the peak RSS figures come from it, and at
  each mark a forked copy of the process takes a census of the Python
  objects each component reaches (:func:`bench.memprobe.census`, split by
  attribute, ``--sites`` largest shown), beside SQLite's heap and the rest
  of the resident set; the copy's walk does not touch the crawl's memory;
* optionally (``--components NAME``) the same crawl under tracemalloc
  (``--frames`` frames a trace), whose snapshots at each mark are grouped
  by component (the innermost frame in ``extensions/`` or ``crawler/``,
  else the innermost frame's package) and by allocation site. Tracing slows
  the crawl about fivefold and adds its own memory, so its RSS is not
  reported.

Each ``--checkout NAME=PATH`` (default: this one only; name another
checkout, for example a clone at an older commit, to compare) runs the
``rss`` crawl.

    python -m bench.wide_memory --out bench/results/wide_memory.txt
    python -m bench.wide_memory --backend redis
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path

from bench.page_memory import probe_path
from testweb import WebConfig, start_testweb
from testweb.redisserver import RedisServer, set_config

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
MB = 1024 * 1024
MARKS = (3000, 20000, 100000)
TOP_COMPONENTS = 14


def crawl(checkout: Path, web, probe_dir: Path, workdir: Path, marks: tuple[int, ...], concurrency: int,
          frames: int, census: bool, timeout: float, extra: list[str]) -> list[dict]:
    """One crawl to the last mark; the probe's mark records (with the
    census of each mark under ``census`` when asked for)."""
    workdir.mkdir(parents=True)
    probe_file = workdir / "probe.jsonl"
    command = [
        SCRAPY, "crawl", "web", "-a", f"seeds={web.seeds_file}", "-O", str(workdir / "items.jsonl"),
        "-s", 'EXTENSIONS={"memprobe.MemoryProbe": 0}', "-s", f"MEMPROBE_FILE={probe_file}",
        "-s", f"MEMPROBE_MARKS={','.join(map(str, marks))}", "-s", "MEMPROBE_CLOSE_AT_LAST_MARK=True",
        "-s", f"MEMPROBE_TRACEMALLOC_FRAMES={frames}", "-s", f"MEMPROBE_CENSUS={census}",
        "-s", f"CONCURRENT_REQUESTS={concurrency}", "-s", f"DNS_HOSTS={web.hosts_file}",
        "-s", "ALLOW_PRIVATE_ADDRESSES=True", "-s", f"JOBDIR={workdir / 'job'}",
        "-s", f"PROGRESS_REPORT_FILE={workdir / 'report.json'}",
        "-s", f"LOG_FILE={workdir / 'crawl.log'}", "-s", "LOG_LEVEL=INFO", *extra,
    ]
    env = {**os.environ, "PYTHONPATH": str(probe_dir)}
    subprocess.run(command, cwd=checkout, env=env, timeout=timeout, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    records = [json.loads(line) for line in probe_file.read_text().splitlines()] if probe_file.exists() else []
    if [record["pages"] for record in records] != list(marks):
        raise RuntimeError(f"crawl in {workdir} did not reach {marks} pages")
    for record in records if census else ():
        path = probe_file.with_name(f"{probe_file.name}.census{record['pages']}")
        record["census"] = json.loads(path.read_text())["census"] if path.exists() else {}
    return records


@contextlib.contextmanager
def backend_settings(backend: str, directory: Path,
                     config: Sequence[str] = ()) -> Iterator[tuple[list[str], RedisServer | None]]:
    """The ``-s`` arguments of the store under test and its ``redis-server``
    (a fresh one for redis, ``config`` NAME=VALUE items set in it; None for sqlite)."""
    if backend == "sqlite":
        yield [], None
        return
    with RedisServer(directory) as server:
        set_config(server.url, config)
        yield ["-s", "FRONTIER_BACKEND=redis", "-s", f"REDIS_URL={server.url}", "-s", "MEMPROBE_REDIS_KEYS=True"], server


def redis_tables(records: list[dict]) -> list[str]:
    """Redis memory per known URL at each mark (``used_memory_dataset``
    growth since the crawl began, from the crawl's own store), and at the end
    ``MEMORY USAGE`` summed by key family."""
    lines = ["", "Redis memory (used_memory_dataset growth since the crawl began, over the URLs known)",
             f"{'pages':>8} {'MB':>8} {'known URLs':>11} {'bytes/URL':>10}"]
    for record in records:
        used, known = record.get("store") or (0, 0)
        lines.append(f"{record['pages']:>8} {used / MB:>8.1f} {known:>11,} {used / max(known, 1):>10.1f}")
    last = records[-1]
    families = last.get("redis_keys", {})
    known = (last.get("store") or (0, 1))[1] or 1
    lines += ["", f"Redis keys at {last['pages']:,} pages, by family (MEMORY USAGE; bytes per URL over "
              f"{known:,} known URLs)", f"{'family':40} {'keys':>8} {'MB':>8} {'bytes/URL':>10}"]
    for family, (count, size) in sorted(families.items(), key=lambda item: -item[1][1])[:20]:
        lines.append(f"{family[-40:]:40} {count:>8,} {size / MB:>8.1f} {size / known:>10.1f}")
    total = sum(size for _, size in families.values())
    lines.append(f"{'(all keys)':40} {sum(c for c, _ in families.values()):>8,} {total / MB:>8.1f} "
                 f"{total / known:>10.1f}")
    return lines


def rss_row(name: str, marks: list[dict]) -> str:
    peaks = " ".join(f"{mark['peak'] / MB:>9.0f}" for mark in marks)
    sqlite = " ".join(f"{mark.get('sqlite', {}).get('used', 0) / MB:>9.1f}" for mark in marks)
    return f"{name:10} {peaks} {marks[-1]['peak'] / marks[0]['peak']:>7.2f}   {sqlite}"


def mb_table(title: str, key: str, marks: list[dict], top: int) -> list[str]:
    """Live MB per ``key`` entry (component or site) at each mark, largest
    first ("memory": in its own order)."""
    tables = [mark[key] for mark in marks]
    names = list(dict.fromkeys(name for table in tables for name in table))
    if key != "memory":
        names.sort(key=lambda c: -max(t.get(c, 0) for t in tables))
    head = " ".join(f"{mark['pages']:>8}" for mark in marks)
    label = {"components": "component", "sites": "site", "roots": "component", "census": "attribute"}.get(key, "")
    lines = [title, f"{label:56} {head} {'growth':>8}"]
    for name in names[:top]:
        values = [t.get(name, 0) / MB for t in tables]
        cells = " ".join(f"{v:>8.1f}" for v in values)
        lines.append(f"{name[-56:]:56} {cells} {values[-1] - values[0]:>+8.1f}")
    if key == "components":
        rest = [sum(t.get(c, 0) for c in names[top:]) / MB for t in tables]
        lines.append(f"{'(the rest)':56} {' '.join(f'{v:>8.1f}' for v in rest)} {rest[-1] - rest[0]:>+8.1f}")
        total = [mark["tracemalloc"] / MB for mark in marks]
        lines.append(f"{'total traced':56} {' '.join(f'{v:>8.1f}' for v in total)} {total[-1] - total[0]:>+8.1f}")
    return lines


def census_tables(name: str, marks: list[dict], top: int) -> list[str]:
    """Where the untraced crawl's memory is at each mark: RSS, SQLite's heap,
    the census per component (and its largest attributes), the rest."""
    for mark in marks:
        mark["roots"] = Counter()
        garbage = mark["census"].pop("(cyclic garbage not collected yet)", 0)
        for path, size in mark["census"].items():
            mark["roots"][path.split(".")[0]] += size
        mark["memory"] = {"VmRSS": mark["rss"], "SQLite heap": mark.get("sqlite", {}).get("used", 0),
                          "Python objects (census)": sum(mark["census"].values())}
        mark["memory"]["Python cyclic garbage, not collected yet"] = garbage
        mark["memory"]["rest: interpreter, C libraries, free lists"] = (
            mark["rss"] - sum(list(mark["memory"].values())[1:]))
        if mark.get("malloc"):
            mark["memory"]["  of all: malloc, in use"] = mark["malloc"]["in_use"]
            mark["memory"]["  of all: malloc, free (not given back)"] = mark["malloc"]["free"]
    lines = [""] + mb_table(f"where the memory is ({name}, untraced crawl, MB at each mark)", "memory",
                            marks, 7)
    lines += [""] + mb_table(f"Python objects by component ({name}, census: bytes its objects reach, "
                             "MB at each mark)", "roots", marks, TOP_COMPONENTS)
    lines += [""] + mb_table(f"largest attributes ({name}, census, MB at each mark)", "census", marks, top)
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--links", type=int, default=40)
    parser.add_argument("--marks", default=",".join(map(str, MARKS)), help="item counts, comma-separated")
    parser.add_argument("--backend", choices=("sqlite", "redis"), default="sqlite")
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--checkout", action="append", default=[], help="NAME=PATH (repeatable)")
    parser.add_argument("--components", action="append", default=None,
                        help="checkout NAME that also runs the traced crawl (repeatable; default: none)")
    parser.add_argument("--frames", type=int, default=6)
    parser.add_argument("--sites", type=int, default=20,
                        help="allocation sites (traced) and attributes (census) shown per crawl")
    parser.add_argument("--no-rss", action="store_true", help="only the traced crawls")
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("-s", dest="settings", action="append", default=[], help="NAME=VALUE for every crawl")
    parser.add_argument("--redis-config", action="append", default=[],
                        help="NAME=VALUE set in redis-server (CONFIG SET) before the crawl (repeatable)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    marks = tuple(int(mark) for mark in args.marks.split(","))
    checkouts = dict(item.split("=", 1) for item in args.checkout) or {"this": str(ROOT)}
    traced = [name for name in (args.components or []) if name in checkouts]
    extra = [part for item in args.settings for part in ("-s", item)]
    scratch = Path(tempfile.mkdtemp(prefix="wide-memory-"))
    probe_dir = probe_path()
    config = WebConfig(hosts=args.hosts, pages=args.pages, links=args.links)
    lines = [f"Wide crawl: {args.hosts} hosts x {args.pages} pages, {args.links} links a page, "
             f"{args.backend} store, CONCURRENT_REQUESTS={args.concurrency}, otherwise defaults"
             + (f" + {' '.join(args.settings)}" if args.settings else ""),
             f"{'checkout':10} " + " ".join(f"{'peak@' + str(m):>9}" for m in marks) + f" {'ratio':>7}   "
             + " ".join(f"{'sqlite@' + str(m):>9}" for m in marks)]
    detail: list[str] = []
    try:
        with start_testweb(config, scratch / "web") as web:
            runs = [(name, 0) for name in ({} if args.no_rss else checkouts)]
            runs += [(name, args.frames) for name in traced]
            for name, frames in runs:
                workdir = scratch / f"{name}-{'traced' if frames else 'rss'}"
                with backend_settings(args.backend, scratch / f"{workdir.name}-redis", args.redis_config) as (store, server):
                    records = crawl(Path(checkouts[name]), web, probe_dir, workdir, marks,
                                    args.concurrency, frames, not frames, args.timeout, extra + store)
                    if server is not None and not frames:
                        detail += ["", f"({name})"] + redis_tables(records)
                if frames:
                    detail += [""] + mb_table(f"where Python's memory goes ({name}, tracemalloc, live MB "
                                              "at each mark)", "components", records, TOP_COMPONENTS)
                    detail += [""] + mb_table(f"largest allocation sites ({name}, live MB at each mark)",
                                              "sites", records, args.sites)
                else:
                    lines.append(rss_row(name, records))
                    print(lines[-1], file=sys.stderr)
                    detail += census_tables(name, records, args.sites)
    except Exception:
        print(f"crawl failed; its files are in {scratch}", file=sys.stderr)
        raise
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)
    lines.append("peak: VmHWM (MB) when the crawl had scraped that many items; ratio: last mark's over "
                 "the first's; sqlite: SQLite's heap (sqlite3_memory_used, MB)")
    if traced:
        detail.append(f"(traced crawl: tracemalloc with {args.frames} frames; its own RSS is inflated by "
                      "tracing and not reported)")
    text = "\n".join(lines + detail)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
