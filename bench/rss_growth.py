"""Memory versus crawl size: our ``web`` spider against stock Scrapy.

Three crawlers crawl the same synthetic web, one subprocess each, alternating
``--runs`` times, each bounded by ``--max-pages`` pages fetched (see below)
and a wall-clock ``--timeout``, all with the same ``CONCURRENT_REQUESTS`` and
no depth limit so the frontier keeps growing:

* ours: ``scrapy crawl web`` with JOBDIR (the frontier's queues are on disk
  either way);
* stock: a plain CrawlSpider (``bench/stock_spider.py``) on Scrapy's memory
  queues;
* stock+JOBDIR: the same spider with ``JOBDIR``, so Scrapy's disk queues.

Each crawl is stopped (SIGINT: Scrapy's graceful shutdown) once the test web
has served ``--max-pages`` pages to it, so all three stop at the same size
although only ours fetches robots.txt; ``CLOSESPIDER_PAGECOUNT`` (which
counts robots.txt) is set above that, with room for every host's robots.txt,
as a backstop.

Every 0.5 s the crawl process's RSS is sampled (psutil) together with the
pages fetched so far (lines the test web appended to its access log since the
crawl started, robots.txt excluded; the log is flushed at each sample). Peak
RSS is the larger of the samples' maximum and ``ru_maxrss`` from ``wait4``.
URLs discovered come from the final stats: ``frontier/enqueued`` for ours,
``scheduler/enqueued`` for stock (requests that passed the duplicate filter).

The table (medians over runs) is printed and written next to the plot with
the suffix ``.txt``; the plot (PNG) shows RSS against pages fetched, one line
per crawler and run, with each run's peak RSS as a marker at its end.

    python -m bench.rss_growth --hosts 4000 --pages 60 --max-pages 40000 \\
        --runs 1 --out out/rss_growth.png
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from bench.crawl_vs_scrapy import ROOT, SCRAPY
from testweb import WebConfig, start_testweb

CRAWLERS = ("ours", "stock", "stock+JOBDIR")
SAMPLE_INTERVAL = 0.5  # seconds between RSS samples
POLL_INTERVAL = 0.05  # seconds between wait4 polls of the crawl process
ROBOTS_ALLOWANCE = 100  # CLOSESPIDER_PAGECOUNT room beyond one robots.txt per host
STATUS_INTERVAL = 15.0  # seconds between progress lines on stderr
CHECKPOINT_FRACTIONS = (1 / 8, 1 / 4, 1 / 2, 3 / 4)
ENQUEUED_STAT = {"ours": "frontier/enqueued", "stock": "scheduler/enqueued",
                 "stock+JOBDIR": "scheduler/enqueued"}


@dataclass
class Sample:
    seconds: float
    pages: int
    rss_mb: float


@dataclass
class CrawlResult:
    """One crawl: its RSS curve and what it had done when it ended."""

    name: str
    status: str = "ok"  # "ok", "timeout" or "exit N"; "+stopped": by the harness
    samples: list[Sample] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    pages: int = 0
    urls: int | None = None
    seconds: float = 0.0

    def rss_at(self, pages: int) -> float | None:
        """RSS at the first sample with at least ``pages`` pages fetched."""
        return next((s.rss_mb for s in self.samples if s.pages >= pages), None)


class PageCounter:
    """Pages the test web served since this counter was made: access-log
    lines appended since then, robots.txt fetches excluded."""

    def __init__(self, web) -> None:
        self.web = web
        web.flush()
        self.log = open(web.access_log, "rb")  # noqa: SIM115 - closed in close()
        self.log.seek(0, os.SEEK_END)
        self.partial = b""
        self.pages = 0

    def update(self) -> int:
        self.web.flush()
        data = self.partial + self.log.read()
        complete, _, self.partial = data.rpartition(b"\n")
        for line in complete.splitlines():
            fields = line.split(b"\t")
            if len(fields) == 6 and not fields[3].startswith(b"/robots.txt"):
                self.pages += 1
        return self.pages

    def close(self) -> None:
        self.log.close()


def current_rss_mb(process: psutil.Process) -> float | None:
    try:
        return process.memory_info().rss / 2**20
    except psutil.Error:  # exited (or a zombie) between two polls
        return None


def run_sampled(name: str, cmd: list[str], cwd: Path, env: dict[str, str],
                log_path: Path, web, stop_at: int, timeout: float) -> CrawlResult:
    """Run ``cmd`` to completion (or ``timeout``), sampling RSS and pages;
    SIGINT it once it has fetched ``stop_at`` pages.

    A single polling loop: ``wait4(WNOHANG)`` every POLL_INTERVAL so the
    exit status and ``ru_maxrss`` are caught as soon as the crawl ends, and
    a sample every SAMPLE_INTERVAL in between.
    """
    result, counter = CrawlResult(name), PageCounter(web)
    started = time.monotonic()
    next_sample = next_status = started
    stopped = False
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    process = psutil.Process(proc.pid)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        now = time.monotonic()
        if now - started > timeout:
            proc.kill()
            _, status, usage = os.wait4(proc.pid, 0)
            result.status = "timeout"
            break
        if now >= next_sample:
            next_sample += SAMPLE_INTERVAL
            rss = current_rss_mb(process)
            if rss is not None:
                result.samples.append(Sample(now - started, counter.update(), rss))
            if counter.pages >= stop_at and not stopped:
                proc.send_signal(signal.SIGINT)
                stopped = True
        if now >= next_status:
            next_status += STATUS_INTERVAL
            print_status(result, now - started)
        time.sleep(POLL_INTERVAL)  # polling a child process, not synchronising
    result.seconds = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    if result.status == "ok" and code != 0:
        result.status = f"exit {code}"
    if stopped:
        result.status += "+stopped"
    result.pages = counter.update()
    counter.close()
    result.peak_rss_mb = max([usage.ru_maxrss / 1024.0] + [s.rss_mb for s in result.samples])
    return result


def print_status(result: CrawlResult, elapsed: float) -> None:
    if result.samples:
        last = result.samples[-1]
        print(f"  {result.name}: {elapsed:6.0f} s, {last.pages} pages, {last.rss_mb:.0f} MB RSS",
              file=sys.stderr, flush=True)


def crawl_command(name: str, web, rundir: Path, args: argparse.Namespace
                  ) -> tuple[list[str], Path, dict[str, str]]:
    """The command line, working directory and environment of one crawl."""
    common = [
        "-a", f"seeds={web.seeds_file}", "-s", f"DNS_HOSTS={web.hosts_file}",
        "-s", "DEPTH_LIMIT=0", "-s", f"CONCURRENT_REQUESTS={args.concurrency}",
        "-s", f"CLOSESPIDER_PAGECOUNT={args.max_pages + args.hosts + ROBOTS_ALLOWANCE}",
        "-s", "LOG_LEVEL=INFO",
        # ours: the 503 robots.txt host is retried, then allowed after 2 s
        "-s", "ROBOTSTXT_RETRY_DELAY=0.5", "-s", "ROBOTSTXT_UNREACHABLE_PERIOD=2",
    ]
    if name == "ours":
        cmd = [SCRAPY, "crawl", "web", *common, "-s", f"JOBDIR={rundir / 'job'}",
               "-s", "ALLOW_PRIVATE_ADDRESSES=True",  # the test web is on loopback
               "-s", f"PROGRESS_REPORT_FILE={rundir / 'report.json'}"]
        return cmd, ROOT, dict(os.environ)
    # Outside the project (no scrapy.cfg) so none of our settings apply;
    # only the hosts-file resolver, without which the names do not resolve.
    spider = rundir / "stock_spider.py"
    shutil.copy(ROOT / "bench" / "stock_spider.py", spider)
    cmd = [SCRAPY, "runspider", str(spider), *common,
           "-s", "TWISTED_DNS_RESOLVER=testweb.hostsresolver.HostsFileResolver"]
    if name == "stock+JOBDIR":
        cmd += ["-s", f"JOBDIR={rundir / 'job'}"]
    return cmd, rundir, dict(os.environ, PYTHONPATH=str(ROOT))


def urls_discovered(name: str, rundir: Path) -> int | None:
    """The crawl's final enqueued count: our JSON report, else the stats
    dump Scrapy logs at close (the last one in the log)."""
    key = ENQUEUED_STAT[name]
    report = rundir / "report.json"
    if report.exists():
        value = json.loads(report.read_text()).get("stats", {}).get(key)
        if value is not None:
            return int(value)
    matches = re.findall(rf"'{re.escape(key)}': (\d+)", (rundir / "crawl.log").read_text(errors="replace"))
    return int(matches[-1]) if matches else None


def crawl(name: str, web, rundir: Path, args: argparse.Namespace) -> CrawlResult:
    rundir.mkdir(parents=True)
    cmd, cwd, env = crawl_command(name, web, rundir, args)
    print(f"{name}: starting in {rundir}", file=sys.stderr, flush=True)
    result = run_sampled(name, cmd, cwd, env, rundir / "crawl.log", web, args.max_pages, args.timeout)
    result.urls = urls_discovered(name, rundir)
    print(f"{name}: {result.status}, {result.pages} pages, peak {result.peak_rss_mb:.0f} MB, "
          f"{result.seconds:.0f} s", file=sys.stderr, flush=True)
    if not result.status.startswith("ok"):
        tail = (rundir / "crawl.log").read_text(errors="replace")[-1500:]
        print(f"{name}: crawl log tail:\n{tail}", file=sys.stderr, flush=True)
    shutil.rmtree(rundir / "job", ignore_errors=True)  # disk queues can be large
    return result


def median_or_none(values: list[float | int | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def fmt(value: float | None, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


def ratio(a: float | None, b: float | None) -> str:
    return fmt(a / b, ".2f") if a is not None and b else "-"


def table(results: dict[str, list[CrawlResult]], checkpoints: list[int],
          args: argparse.Namespace) -> str:
    """Medians over runs: RSS at each checkpoint, then the final numbers."""
    rows: list[tuple[str, dict[str, float | None], str]] = []
    for pages in checkpoints:
        rows.append((f"RSS MB at {pages} pages",
                     {n: median_or_none([r.rss_at(pages) for r in rs]) for n, rs in results.items()}, ".0f"))
    for label, attr, spec in (("peak RSS MB", "peak_rss_mb", ".0f"), ("pages fetched", "pages", ".0f"),
                              ("URLs discovered", "urls", ".0f"), ("seconds", "seconds", ".1f")):
        rows.append((label, {n: median_or_none([getattr(r, attr) for r in rs])
                             for n, rs in results.items()}, spec))
    header = f"{'':<24}" + "".join(f"{n:>14}" for n in CRAWLERS) + f"{'ours/stock':>12}{'ours/s+JOBDIR':>15}"
    lines = [
        f"RSS growth: {args.hosts} hosts x {args.pages} pages, links {args.links}, "
        f"CONCURRENT_REQUESTS={args.concurrency}, stopped at {args.max_pages} pages, "
        f"DEPTH_LIMIT=0, medians of {args.runs} run(s)", header,
    ]
    for label, values, spec in rows:
        lines.append(f"{label:<24}" + "".join(f"{fmt(values[n], spec):>14}" for n in CRAWLERS)
                     + f"{ratio(values['ours'], values['stock']):>12}"
                     + f"{ratio(values['ours'], values['stock+JOBDIR']):>15}")
    lines.append(f"{'status':<24}" + "".join(
        f"{','.join(sorted({r.status for r in results[n]})):>14}" for n in CRAWLERS))
    lines.append("pages: responses the test web served (robots.txt excluded); URLs discovered: "
                 "frontier/enqueued (ours), scheduler/enqueued (stock)")
    return "\n".join(lines)


def plot(results: dict[str, list[CrawlResult]], path: Path, args: argparse.Namespace) -> None:
    import matplotlib  # noqa: PLC0415 - only the plot needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    figure, axes = plt.subplots(figsize=(8, 5), dpi=120)
    for (name, runs), colour in zip(results.items(), ("tab:blue", "tab:orange", "tab:green")):
        for index, run in enumerate(runs):
            label = name if index == 0 else None
            axes.plot([s.pages for s in run.samples], [s.rss_mb for s in run.samples],
                      color=colour, linewidth=1.5, alpha=0.9 if len(runs) == 1 else 0.6, label=label)
            axes.plot([run.pages], [run.peak_rss_mb], marker="o", color=colour)
    axes.set_xlabel("pages fetched")
    axes.set_ylabel("RSS (MB)")
    axes.set_title(f"Crawler RSS vs pages fetched ({args.hosts} hosts x {args.pages} pages, "
                   f"CONCURRENT_REQUESTS={args.concurrency})", fontsize=10)
    axes.set_xlim(left=0)
    axes.set_ylim(bottom=0)
    axes.grid(True, alpha=0.3)
    axes.legend(title="crawler (dot: peak RSS)", loc="upper left")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    plt.close(figure)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=4000)
    parser.add_argument("--pages", type=int, default=60)
    parser.add_argument("--links", type=int, default=8)
    parser.add_argument("--max-pages", type=int, default=40000, help="pages at which each crawl is stopped")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per crawl")
    parser.add_argument("--out", type=Path, default=Path("out/rss_growth.png"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    checkpoints = [int(args.max_pages * f) for f in CHECKPOINT_FRACTIONS]
    config = WebConfig(hosts=args.hosts, pages=args.pages, links=args.links, seed=1)
    results: dict[str, list[CrawlResult]] = {name: [] for name in CRAWLERS}
    with tempfile.TemporaryDirectory(prefix="bench-rss-") as tmp:
        workdir = Path(tmp)
        with start_testweb(config, workdir / "web") as web:
            for run in range(args.runs):
                for name in CRAWLERS:
                    rundir = workdir / f"{name.replace('+', '-')}-{run}"
                    results[name].append(crawl(name, web, rundir, args))
    text = table(results, checkpoints, args)
    print(text)
    plot(results, args.out, args)
    args.out.with_suffix(".txt").write_text(text + "\n")
    print(f"plot: {args.out}; table: {args.out.with_suffix('.txt')}")


if __name__ == "__main__":
    main()
