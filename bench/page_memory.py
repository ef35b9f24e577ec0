"""Peak memory of processing one huge HTML page, measured inside a real crawl.

A 16 MiB page (``DOWNLOAD_MAXSIZE``) with 400,000 distinct links (``<a
href="/l/N.html">``, ``<meta charset=utf-8>`` in its head) is served by
Python's ``http.server`` on loopback; ``scrapy crawl web`` (default settings
but ``CLOSESPIDER_ITEMCOUNT=1``, ``JOBDIR``, loopback allowed) is seeded with
that page only, so the crawl ends after its item. The probe extension
(:mod:`bench.memprobe`) records the process's resident set when the
response arrives, before the spider sees it (``RSS before``: the crawl's
baseline, the downloaded body included), and the kernel's peak resident set
(VmHWM) when the item has passed every pipeline: link extraction, tag
counting, content-seen, AOPIC's credit and the scheduling of the outlinks.
``processing cost`` is that peak minus the baseline.

Each checkout named by ``--checkout NAME=PATH`` (default: this one only;
name another checkout, for example a clone at an older commit, to compare)
runs the same crawl with the same probe ``--runs`` times; the table shows
medians.

    python -m bench.page_memory --out bench/results/page_memory.txt
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
MB = 1024 * 1024
PAGE_BYTES = 16 * MB
PAGE_LINKS = 400_000
HOST = "big.test"
SERVER_WAIT = 100  # polls of 0.05 s for the server's port


def big_page(size: int = PAGE_BYTES, links: int = PAGE_LINKS) -> bytes:
    """``size`` bytes of HTML holding ``links`` distinct same-site links."""
    head = b'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>big</title></head><body>\n'
    tail = b"</body></html>\n"
    anchors = b"".join(b'<a href="/l/%d.html">link %d</a>\n' % (i, i) for i in range(links))
    room = size - len(head) - len(tail) - len(anchors)
    if room < 0:
        raise ValueError(f"{links} links do not fit in {size} bytes")
    filler = (b"<p>" + b"frontier politeness " * 50 + b"</p>\n") * (room // 1008 + 1)
    return head + anchors + filler[:room] + tail


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_server(directory: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", str(directory), str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(SERVER_WAIT):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return server, port
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise RuntimeError("http.server did not start")


def probe_path() -> Path:
    """A directory holding the probe as ``memprobe``, importable by any checkout."""
    directory = Path(tempfile.mkdtemp(prefix="memprobe-"))
    shutil.copy(ROOT / "bench" / "memprobe.py", directory / "memprobe.py")
    return directory


def run_crawl(checkout: Path, url: str, probe_dir: Path, workdir: Path, hosts_file: Path,
              timeout: float) -> dict[str, float]:
    """One crawl of the big page; MB figures and the link counters."""
    workdir.mkdir(parents=True)
    probe_file = workdir / "probe.jsonl"
    command = [
        SCRAPY, "crawl", "web", "-a", f"seeds={url}", "-O", str(workdir / "items.jsonl"),
        "-s", 'EXTENSIONS={"memprobe.MemoryProbe": 0}', "-s", f"MEMPROBE_FILE={probe_file}",
        "-s", "MEMPROBE_URL_SUFFIX=/big.html", "-s", "CLOSESPIDER_ITEMCOUNT=1",
        "-s", "ALLOW_PRIVATE_ADDRESSES=True", "-s", f"DNS_HOSTS={hosts_file}", "-s", f"JOBDIR={workdir / 'job'}",
        "-s", f"PROGRESS_REPORT_FILE={workdir / 'report.json'}",
        "-s", f"LOG_FILE={workdir / 'crawl.log'}", "-s", "LOG_LEVEL=INFO",
    ]
    env = {**os.environ, "PYTHONPATH": str(probe_dir)}
    subprocess.run(command, cwd=checkout, env=env, timeout=timeout, check=False,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    events = {record["event"]: record for record in map(json.loads, probe_file.read_text().splitlines())}
    stats = json.loads((workdir / "report.json").read_text()).get("stats", {})
    items = [json.loads(line) for line in (workdir / "items.jsonl").read_text().splitlines() if line]
    before, after = events["before"], events["after"]
    return {
        "RSS before (baseline) MB": before["rss"] / MB,
        "peak before MB": before["peak"] / MB,
        "peak after processing MB": after["peak"] / MB,
        "processing cost MB": (after["peak"] - before["rss"]) / MB,
        "links kept": float(items[0].get("outlinks", 0)) if items else 0.0,
        "links/capped": float(stats.get("links/capped", 0)),
        "frontier/enqueued": float(stats.get("frontier/enqueued", 0)),
    }


def table(results: dict[str, list[dict[str, float]]], runs: int) -> str:
    names = list(results)
    rows = list(next(iter(results.values()))[0])
    width = max(12, *(len(name) for name in names))
    lines = [f"Processing one {PAGE_BYTES // MB} MiB HTML page with {PAGE_LINKS:,} links inside "
             f"`scrapy crawl web` (defaults), medians of {runs} run(s)",
             f"{'':28}" + "".join(f"{name:>{width + 2}}" for name in names)]
    for row in rows:
        cells = "".join(f"{statistics.median(run[row] for run in results[name]):>{width + 2}.0f}" for name in names)
        lines.append(f"{row:28}{cells}")
    lines.append("processing cost: peak RSS (VmHWM) once the item passed the pipelines minus RSS "
                 "when the response arrived; links kept: the item's outlinks")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkout", action="append", default=[],
                        help="NAME=PATH of a crawler checkout (repeatable)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    checkouts = dict(item.split("=", 1) for item in args.checkout) or {"this": str(ROOT)}
    scratch = Path(tempfile.mkdtemp(prefix="page-memory-"))
    site = scratch / "site"
    site.mkdir()
    (site / "big.html").write_bytes(big_page())
    (site / "robots.txt").write_bytes(b"User-agent: *\nAllow: /\n")
    hosts_file = scratch / "hosts"
    hosts_file.write_text(f"127.0.0.1 {HOST}\n")  # the crawler's resolver wants a name
    probe_dir = probe_path()
    server, port = start_server(site)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in checkouts}
    try:
        for run in range(args.runs):
            for name, path in checkouts.items():
                workdir = scratch / f"{name}-{run}"
                results[name].append(run_crawl(Path(path), f"http://{HOST}:{port}/big.html",
                                               probe_dir, workdir, hosts_file, args.timeout))
                print(f"{name} run {run}: {results[name][-1]}", file=sys.stderr)
    except Exception:
        print(f"crawl failed; its files are in {scratch}", file=sys.stderr)
        raise
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(probe_dir, ignore_errors=True)
    text = table(results, args.runs)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
