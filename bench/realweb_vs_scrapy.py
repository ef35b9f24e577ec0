"""Real documentation sites: our crawler versus stock Scrapy and Scrapy's floor.

nginx (Debian's) serves Debian's documentation packages under their real
host names over http and https (:mod:`testweb.realweb`); by default the
sites without a ``Crawl-delay`` (issue 17 compares throughput, which a
Crawl-delay host bounds by design; ``--all-sites`` adds www.debian.org).
In the same run, alternating, ``--runs`` times:

* ours: ``scrapy crawl web`` with the project's settings (every component
  on, WARC off) and ``JOBDIR``;
* stock: a plain CrawlSpider on Scrapy's defaults (``bench/stock_spider.py``)
  with ``ROBOTSTXT_OBEY=True`` and the same ``allowed_domains``, so both
  fetch the same pages;
* floor: ``bench/floor_spider.py`` fetching, from a fixed list, the pages
  our first run fetched (nginx's access log), nothing else.

pages/s: responses nginx logged (robots.txt excluded) between the first
request's start and the last response's end; CPU seconds: the crawl
process's user + system time (``wait4``), so pages per CPU second is the
per-core figure. Medians over runs.

    python -m bench.realweb_vs_scrapy --runs 3

Writes bench/results/realweb_vs_scrapy.txt.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from bench.crawl_vs_scrapy import ROOT, SCRAPY, CrawlRun, _ratio, compile_bytecode, median_run, run_measured
from testweb.realweb import SITES, RealWeb, start_realweb

RESULTS = Path(__file__).parent / "results"


def window(web: RealWeb, since: float) -> tuple[int, float, list[str]]:
    """Pages logged since ``since`` (robots.txt excluded), their span in
    seconds, and their URLs."""
    entries = [e for e in web.entries() if e.start >= since and e.path != "/robots.txt"]
    if not entries:
        return 0, 0.0, []
    urls = [f"{e.scheme}://{e.host}:{e.port}{e.uri}" for e in entries]
    return len(entries), max(e.end for e in entries) - min(e.start for e in entries), urls


def crawl_ours(web: RealWeb, workdir: Path, concurrency: int, timeout: float) -> tuple[CrawlRun, list[str]]:
    since = time.time()
    cmd = [
        SCRAPY, "crawl", "web", "-a", f"seeds={','.join(web.seeds())}",
        "-a", f"allowed_domains={','.join(site.host for site in web.sites)}",
        "-s", f"DNS_HOSTS={web.hosts_file}", "-s", "ALLOW_PRIVATE_ADDRESSES=True",
        "-s", f"CONCURRENT_REQUESTS={concurrency}", "-s", "LOG_LEVEL=INFO",
        "-s", f"JOBDIR={workdir / 'job'}",
    ]
    rss, cpu = run_measured(cmd, ROOT, dict(os.environ), timeout, workdir / "crawl.log")
    pages, seconds, urls = window(web, since)
    return CrawlRun("webcrawler", pages, seconds, rss, cpu), urls


def crawl_stock(web: RealWeb, workdir: Path, concurrency: int, timeout: float) -> CrawlRun:
    since = time.time()
    spider = workdir / "stock_spider.py"
    shutil.copy(ROOT / "bench" / "stock_spider.py", spider)
    seeds = workdir / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in web.seeds()))
    cmd = [
        SCRAPY, "runspider", str(spider), "-a", f"seeds={seeds}",
        "-a", f"allowed_domains={','.join(site.host for site in web.sites)}",
        "-s", "TWISTED_DNS_RESOLVER=testweb.hostsresolver.HostsFileResolver",
        "-s", f"DNS_HOSTS={web.hosts_file}", "-s", "ROBOTSTXT_OBEY=True",
        "-s", f"CONCURRENT_REQUESTS={concurrency}", "-s", "LOG_LEVEL=INFO",
    ]
    rss, cpu = run_measured(cmd, workdir, dict(os.environ, PYTHONPATH=str(ROOT)), timeout)
    pages, seconds, _ = window(web, since)
    return CrawlRun("stock scrapy", pages, seconds, rss, cpu)


def crawl_floor(web: RealWeb, workdir: Path, concurrency: int, timeout: float, urls: list[str]) -> CrawlRun:
    since = time.time()
    spider = workdir / "floor_spider.py"
    shutil.copy(ROOT / "bench" / "floor_spider.py", spider)
    listing = workdir / "urls.txt"
    listing.write_text("".join(f"{url}\n" for url in urls))
    cmd = [
        SCRAPY, "runspider", str(spider), "-a", f"urls={listing}",
        "-s", "TWISTED_DNS_RESOLVER=testweb.hostsresolver.HostsFileResolver",
        "-s", f"DNS_HOSTS={web.hosts_file}",
        "-s", f"CONCURRENT_REQUESTS={concurrency}", "-s", "LOG_LEVEL=INFO",
    ]
    rss, cpu = run_measured(cmd, workdir, dict(os.environ, PYTHONPATH=str(ROOT)), timeout)
    pages, seconds, _ = window(web, since)
    return CrawlRun("scrapy floor", pages, seconds, rss, cpu)


def table(runs: dict[str, list[CrawlRun]], header: str) -> str:
    medians = [median_run(r) for r in runs.values() if r]
    lines = [header,
             f"{'crawler':<16}{'pages':>8}{'seconds':>10}{'pages/s':>10}{'CPU s':>8}{'pages/CPU-s':>13}"
             f"{'peak RSS MB':>13}"]
    for r in medians:
        lines.append(f"{r.name:<16}{r.pages:>8}{r.seconds:>10.2f}{r.pages_per_second:>10.1f}"
                     f"{r.cpu_seconds:>8.2f}{r.pages_per_cpu_second:>13.1f}{r.peak_rss_mb:>13.1f}")
    ours = medians[0]
    for other in medians[1:]:
        label = f"ours/{other.name.split()[-1]}"
        lines.append(f"{label:<16}{'':>8}{'':>10}{_ratio(ours.pages_per_second, other.pages_per_second):>10.2f}"
                     f"{'':>8}{_ratio(ours.pages_per_cpu_second, other.pages_per_cpu_second):>13.2f}"
                     f"{_ratio(ours.peak_rss_mb, other.peak_rss_mb):>13.2f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--timeout", type=float, default=900.0)
    parser.add_argument("--all-sites", action="store_true",
                        help="include the Crawl-delay site (www.debian.org)")
    parser.add_argument("--output", type=Path, default=RESULTS / "realweb_vs_scrapy.txt")
    args = parser.parse_args(argv)
    sites = SITES if args.all_sites else tuple(s for s in SITES if "crawl-delay" not in s.robots.lower())
    runs: dict[str, list[CrawlRun]] = {"ours": [], "stock": [], "floor": []}
    compile_bytecode(ROOT)
    with tempfile.TemporaryDirectory(prefix="bench-realweb-") as tmp:
        workdir = Path(tmp)
        with start_realweb(workdir / "realweb", sites) as web:
            floor_urls: list[str] = []
            for run in range(args.runs):
                for name in runs:
                    rundir = workdir / f"{name}-{run}"
                    rundir.mkdir()
                    if name == "ours":
                        result, urls = crawl_ours(web, rundir, args.concurrency, args.timeout)
                        floor_urls = floor_urls or urls
                    elif name == "stock":
                        result = crawl_stock(web, rundir, args.concurrency, args.timeout)
                    else:
                        result = crawl_floor(web, rundir, args.concurrency, args.timeout, floor_urls)
                    runs[name].append(result)
    header = (f"real documentation sites on nginx ({', '.join(s.host for s in sites)}), http + https, "
              f"CONCURRENT_REQUESTS={args.concurrency}, medians of {args.runs} runs, {os.cpu_count()} cores")
    text = table(runs, header)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
