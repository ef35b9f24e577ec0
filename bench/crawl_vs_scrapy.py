"""Whole-crawl benchmark: our ``web`` spider versus a plain Scrapy CrawlSpider.

Both crawl the same synthetic web in the same run, alternating, ``--runs``
times; the table gives medians of pages/s (from the test web's access log:
responses served between the first request start and the last response end)
peak RSS and CPU seconds (``wait4`` rusage of the crawl process: user +
system), and their ratios. Pages per CPU second is the per-core figure: it
does not depend on what else the shared machine runs as much as wall time.
"scrapy floor" (``bench/floor_spider.py``) fetches the same pages from a
fixed list and does nothing else: ours/floor is the fraction of what Scrapy's
own engine allows on this machine.

    python -m bench.crawl_vs_scrapy --hosts 200 --pages 20 --runs 3
    python -m bench.crawl_vs_scrapy --weight real --runs 3   # pages of real weight (testweb.heavy)
    python -m bench.crawl_vs_scrapy --weight docs --runs 3   # the real documentation sites on nginx

``--weight docs`` crawls the real documentation sites (Debian's packages on
nginx, :mod:`testweb.realweb`, the sites without a Crawl-delay) as
``bench/realweb_vs_scrapy.py`` does: ours and stock Scrapy from the same
seeds and ``allowed_domains``, the floor fetching the pages our first run
fetched; pages are the responses nginx logged (robots.txt excluded), so
each crawler is counted on the pages it fetched and processed.

``--checkout NAME=PATH`` adds our crawler as another checkout has it (a
clone with its own ``.venv`` or a symlink to ours), run in the same loop:
before/after comparisons on one machine state.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from testweb import WebConfig, read_access_log, start_testweb
from testweb.crawlrun import ROOT, SCRAPY  # the measured crawls below need wait4, not the runner


def compile_bytecode(root: Path) -> None:
    """Write ``__pycache__`` for a checkout's packages, as ``pip install``
    does for site-packages: with PYTHONDONTWRITEBYTECODE set (as here) our
    modules would otherwise be compiled from source on every run while
    Scrapy's are not, a fixed cost a deployed crawler does not pay."""
    for package in ("crawler", "extensions", "testweb", "bench"):
        if (root / package).is_dir():
            compileall.compile_dir(root / package, quiet=1)


@dataclass
class CrawlRun:
    name: str
    pages: int
    seconds: float
    peak_rss_mb: float
    cpu_seconds: float = 0.0

    @property
    def pages_per_second(self) -> float:
        return self.pages / self.seconds if self.seconds > 0 else 0.0

    @property
    def pages_per_cpu_second(self) -> float:
        return self.pages / self.cpu_seconds if self.cpu_seconds > 0 else 0.0


def run_measured(cmd: list[str], cwd: Path, env: dict[str, str], timeout: float,
                 log_path: Path | None = None) -> tuple[float, float]:
    """Run ``cmd`` to completion; return its peak RSS in MB and its CPU
    seconds, user + system (from wait4).
    Its output goes to ``log_path`` (default ``cwd/crawl.log``)."""
    log_path = log_path or cwd / "crawl.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                os.wait4(proc.pid, 0)
                raise TimeoutError(f"crawl exceeded {timeout}s: {cmd}")
            time.sleep(0.05)  # polling a child process, not synchronising a test
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = log_path.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"crawl failed ({proc.returncode}): {cmd}\n{tail}")
    return usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def pages_and_seconds(access_log: Path, since: float) -> tuple[int, float]:
    entries = [e for e in read_access_log(access_log) if e.start >= since]
    entries = [e for e in entries if not e.path.startswith("/robots.txt")]
    if not entries:
        return 0, 0.0
    return len(entries), max(e.end for e in entries) - min(e.start for e in entries)


def crawl_ours(web, workdir: Path, depth: int, concurrency: int, timeout: float,
               extra: tuple[str, ...] = (), name: str = "webcrawler", root: Path = ROOT) -> CrawlRun:
    since = time.time()
    cmd = [
        SCRAPY, "crawl", "web", "-a", f"seeds={web.seeds_file}",
        "-s", f"DNS_HOSTS={web.hosts_file}", "-s", f"DEPTH_LIMIT={depth}",
        "-s", f"CONCURRENT_REQUESTS={concurrency}", "-s", "LOG_LEVEL=INFO",
        "-s", f"JOBDIR={workdir / 'job'}", "-s", "ALLOW_PRIVATE_ADDRESSES=True", *extra,
        # the 503 robots.txt host: no restrictions at once, as stock Scrapy
        # does (RFC 9309's wait would add a tail that measures the period);
        # likewise special.test's page that always answers 503: its pushback
        # pauses (10 s, doubling) would be the crawl's tail
        "-s", "ROBOTSTXT_UNREACHABLE_PERIOD=0", "-s", "PUSHBACK_BACKOFF_DELAY=0.2",
    ]
    rss, cpu = run_measured(cmd, root, dict(os.environ), timeout, workdir / "crawl.log")
    pages, seconds = pages_and_seconds(web.access_log, since)
    return CrawlRun(name, pages, seconds, rss, cpu)


def crawl_stock_scheduler(web, workdir: Path, depth: int, concurrency: int, timeout: float,
                          extra: tuple[str, ...] = ()) -> CrawlRun:
    """Our spider and settings with Scrapy's own scheduler (and JOBDIR
    disk queues): isolates what the frontier costs or gains."""
    return crawl_ours(web, workdir, depth, concurrency, timeout,
                      (*extra, "-s", "SCHEDULER=scrapy.core.scheduler.Scheduler"), "stock scheduler")


#: Our collector tuning (extensions.collector) on a stock crawl, at our defaults.
STOCK_GC = ("-s", 'EXTENSIONS={"extensions.collector.CollectorTuning": 500}', "-s", "GC_TUNING_ENABLED=True",
            "-s", "GC_FREEZE=True", "-s", "GC_THRESHOLD=10000,10,10")


def crawl_stock(web, workdir: Path, depth: int, concurrency: int, timeout: float,
                extra: tuple[str, ...] = (), name: str = "stock scrapy") -> CrawlRun:
    since = time.time()
    spider = workdir / "stock_spider.py"
    shutil.copy(ROOT / "bench" / "stock_spider.py", spider)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [
        SCRAPY, "runspider", str(spider), "-a", f"seeds={web.seeds_file}",
        "-s", "TWISTED_DNS_RESOLVER=testweb.hostsresolver.HostsFileResolver",
        "-s", f"DNS_HOSTS={web.hosts_file}", "-s", f"DEPTH_LIMIT={depth}",
        "-s", f"CONCURRENT_REQUESTS={concurrency}", "-s", "LOG_LEVEL=INFO", *extra,
    ]
    rss, cpu = run_measured(cmd, workdir, env, timeout)
    pages, seconds = pages_and_seconds(web.access_log, since)
    return CrawlRun(name, pages, seconds, rss, cpu)


def crawl_floor(web, workdir: Path, depth: int, concurrency: int, timeout: float) -> CrawlRun:
    """Scrapy's floor: ``bench/floor_spider.py`` fetching the ground truth's
    pages (what a correct crawl to ``depth`` fetches) and nothing else."""
    since = time.time()
    spider = workdir / "floor_spider.py"
    shutil.copy(ROOT / "bench" / "floor_spider.py", spider)
    urls = workdir / "urls.txt"
    urls.write_text("".join(f"{url}\n" for url in sorted(web.truth(depth_limit=depth).fetched)))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [
        SCRAPY, "runspider", str(spider), "-a", f"urls={urls}",
        "-s", "TWISTED_DNS_RESOLVER=testweb.hostsresolver.HostsFileResolver",
        "-s", f"DNS_HOSTS={web.hosts_file}",
        "-s", f"CONCURRENT_REQUESTS={concurrency}", "-s", "LOG_LEVEL=INFO",
    ]
    rss, cpu = run_measured(cmd, workdir, env, timeout)
    pages, seconds = pages_and_seconds(web.access_log, since)
    return CrawlRun("scrapy floor", pages, seconds, rss, cpu)


def median_run(runs: list[CrawlRun]) -> CrawlRun:
    return CrawlRun(
        runs[0].name,
        int(statistics.median(r.pages for r in runs)),
        statistics.median(r.seconds for r in runs),
        statistics.median(r.peak_rss_mb for r in runs),
        statistics.median(r.cpu_seconds for r in runs),
    )


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--links", type=int, default=8, help="links a page (tiny pages)")
    parser.add_argument("--weight", choices=("tiny", "real", "docs"), default="tiny",
                        help="page weight of the test web: tiny (40-90 words) or real (testweb.heavy: sizes and "
                             "structure of real documentation pages, 20-100 links); docs: not the test web but "
                             "the real documentation sites on nginx (testweb.realweb)")
    parser.add_argument("--depth", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("-s", dest="settings", action="append", default=[],
                        help="NAME=VALUE for our spider's crawls (both our variants), e.g. "
                             "CONTENTSEEN_ENABLED=False to compare the frontier alone")
    parser.add_argument("--checkout", action="append", default=[],
                        help="NAME=PATH: also crawl with the webcrawler checkout at PATH (repeatable)")
    parser.add_argument("--no-stock-scheduler", action="store_true",
                        help="leave out the 'stock scheduler' variant (our spider on Scrapy's scheduler)")
    parser.add_argument("--stock-gc", action="store_true",
                        help="also crawl stock Scrapy with our garbage-collector tuning "
                             "(extensions.collector at our defaults): what of the ratio is that setting")
    args = parser.parse_args(argv)
    extra = tuple(part for item in args.settings for part in ("-s", item))
    checkouts = [(name, Path(path).resolve()) for name, _, path in
                 (item.partition("=") for item in args.checkout)]
    others: dict[str, list[CrawlRun]] = {name: [] for name, _ in checkouts}
    for root in (ROOT, *(path for _, path in checkouts)):
        compile_bytecode(root)

    if args.weight == "docs":
        docs(args.runs, args.concurrency, args.timeout)
        return
    config = WebConfig(hosts=args.hosts, pages=args.pages, links=args.links, weight=args.weight)
    with tempfile.TemporaryDirectory(prefix="bench-crawl-") as tmp:
        workdir = Path(tmp)
        with start_testweb(config, workdir / "web") as web:
            ours, stock, stock_scheduler, floor = [], [], [], []
            for run in range(args.runs):
                variants = [("ours", crawl_ours, ours), ("stock", crawl_stock, stock),
                            ("stocksched", crawl_stock_scheduler, stock_scheduler), ("floor", crawl_floor, floor)]
                if args.no_stock_scheduler:
                    del variants[2]
                for name, crawl, sink in variants:
                    rundir = workdir / f"{name}-{run}"
                    rundir.mkdir()
                    if crawl in (crawl_stock, crawl_floor):
                        sink.append(crawl(web, rundir, args.depth, args.concurrency, args.timeout))
                    else:
                        sink.append(crawl(web, rundir, args.depth, args.concurrency, args.timeout, extra))
                if args.stock_gc:
                    rundir = workdir / f"stockgc-{run}"
                    rundir.mkdir()
                    others.setdefault("stock + gc", []).append(crawl_stock(
                        web, rundir, args.depth, args.concurrency, args.timeout, STOCK_GC, "stock + gc"))
                for name, path in checkouts:
                    rundir = workdir / f"checkout-{name}-{run}"
                    rundir.mkdir()
                    others[name].append(crawl_ours(web, rundir, args.depth, args.concurrency, args.timeout,
                                                   extra, f"ours@{name}", path))
    a, b, f = median_run(ours), median_run(stock), median_run(floor)
    c = median_run(stock_scheduler) if stock_scheduler else None
    other_medians = [median_run(runs) for runs in others.values()]
    print(f"whole crawl: {args.hosts} hosts x {args.pages} pages ({args.weight} pages), depth {args.depth}, "
          f"CONCURRENT_REQUESTS={args.concurrency}, medians of {args.runs} runs"
          + (f"; ours with {' '.join(args.settings)}" if args.settings else ""))
    print(f"{'crawler':<16}{'pages':>8}{'seconds':>10}{'pages/s':>10}{'CPU s':>8}{'pages/CPU-s':>13}"
          f"{'peak RSS MB':>13}")
    for r in (a, b, *([c] if c else []), f, *other_medians):
        print(f"{r.name:<16}{r.pages:>8}{r.seconds:>10.2f}{r.pages_per_second:>10.1f}{r.cpu_seconds:>8.2f}"
              f"{r.pages_per_cpu_second:>13.1f}{r.peak_rss_mb:>13.1f}")
    for label, o in (("ours/stock", b), *([("ours/stock sched", c)] if c else []), ("ours/floor", f),
                     *((f"ours/{o.name.removeprefix('ours@')}", o) for o in other_medians)):
        print(f"{label:<16}{'':>8}{'':>10}{_ratio(a.pages_per_second, o.pages_per_second):>10.2f}{'':>8}"
              f"{_ratio(a.pages_per_cpu_second, o.pages_per_cpu_second):>13.2f}"
              f"{_ratio(a.peak_rss_mb, o.peak_rss_mb):>13.2f}")
    print("webcrawler: our spider + frontier (1 request per host, politeness);"
          " stock scrapy: a plain CrawlSpider on Scrapy's defaults;"
          " stock scheduler: our spider with Scrapy's own scheduler;"
          " scrapy floor: a spider fetching the ground truth's URLs, nothing else"
          + ("; stock + gc: stock scrapy with our collector tuning (GC_* defaults)" if args.stock_gc else ""))


def docs(runs: int, concurrency: int, timeout: float) -> None:
    """The real documentation sites on nginx: ours, stock Scrapy and the
    floor alternating, ``runs`` times; prints the medians' table."""
    from bench import realweb_vs_scrapy as realweb  # it imports this module
    from testweb.realweb import SITES, start_realweb

    sites = tuple(site for site in SITES if "crawl-delay" not in site.robots.lower())
    compile_bytecode(ROOT)
    results: dict[str, list[CrawlRun]] = {"ours": [], "stock": [], "floor": []}
    with tempfile.TemporaryDirectory(prefix="bench-crawl-docs-") as tmp:
        workdir = Path(tmp)
        with start_realweb(workdir / "realweb", sites) as web:
            floor_urls: list[str] = []
            for run in range(runs):
                for name, sink in results.items():
                    rundir = workdir / f"{name}-{run}"
                    rundir.mkdir()
                    if name == "ours":
                        result, urls = realweb.crawl_ours(web, rundir, concurrency, timeout)
                        floor_urls = floor_urls or urls
                    elif name == "stock":
                        result = realweb.crawl_stock(web, rundir, concurrency, timeout)
                    else:
                        result = realweb.crawl_floor(web, rundir, concurrency, timeout, floor_urls)
                    sink.append(result)
    print(realweb.table(results, f"whole crawl: real documentation sites on nginx "
                                 f"({', '.join(site.host for site in sites)}), http + https, "
                                 f"CONCURRENT_REQUESTS={concurrency}, medians of {runs} runs; pages: "
                                 f"responses nginx logged (robots.txt excluded)"))


if __name__ == "__main__":
    main()
