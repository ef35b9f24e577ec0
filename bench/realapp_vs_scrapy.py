"""A real dynamic application: our crawler, which ends, versus stock Scrapy, which does not.

nginx serves Debian's cgit over generated git repositories beside
sphinx-doc's static site (:mod:`testweb.realapp`, the real-application
test's site). In the same run, alternating, ``--runs`` times:

* ours: ``scrapy crawl web`` with the project's settings (defaults; host
  yield on) and ``JOBDIR``, until it ends by itself;
* stock: a plain CrawlSpider on Scrapy's defaults (``bench/stock_spider.py``)
  with ``ROBOTSTXT_OBEY=True`` and the same ``allowed_domains``. It never
  ends on this site, so it is bounded: ``CLOSESPIDER_PAGECOUNT`` (``--stock-pages``)
  and ``CLOSESPIDER_TIMEOUT`` (``--stock-seconds``), whichever comes first.
  Stock Scrapy ignores ``Crawl-delay`` and fetches 8 pages of a host at
  once, so its wall time is not comparable page for page; the table says so.

Per crawl, from nginx's access log: requests to the application (robots.txt
left out), requests to the static site, wall time from the crawl's start to
its end, and the share of the application requests that brought text not
seen before. That share is judged the same way for both crawlers, after the
crawl: each logged URL is fetched again from nginx (cgit's pages are the
same for the same URL) in log order and run through the content-seen test
with the crawler's default parameters (exact fingerprint of the normalised
text, then simhash and estimated resemblance); a page counts as new when it
is a 200 that is neither an exact nor a near duplicate of an earlier one.
Medians over runs.

    python -m bench.realapp_vs_scrapy --runs 3

Writes bench/results/realapp_vs_scrapy.txt.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from extensions import defaults
from extensions.contentseen.exact import ContentSeen
from extensions.contentseen.nearindex import NearDuplicateIndex
from extensions.contentseen.features import content_features
from testweb.realapp import APP_HOST, RealApp, start_realapp
from testweb.realweb import LogEntry

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
RESULTS = Path(__file__).parent / "results"
FETCH_TIMEOUT = 30.0


@dataclass
class Run:
    name: str
    app_pages: int
    static_pages: int
    new_share: float
    seconds: float
    ended: bool
    finish_reason: str


def crawl_ours(app: RealApp, workdir: Path, timeout: float) -> tuple[str, bool]:
    command = [SCRAPY, "crawl", "web", "-a", f"seeds={','.join(app.seeds())}",
               "-a", f"allowed_domains={','.join(app.hosts)}",
               "-s", f"DNS_HOSTS={app.hosts_file}", "-s", "ALLOW_PRIVATE_ADDRESSES=True",
               "-s", "LOG_LEVEL=INFO", "-s", f"JOBDIR={workdir / 'job'}",
               "-s", f"PROGRESS_REPORT_FILE={workdir / 'report.json'}"]
    run(command, ROOT, dict(os.environ), timeout, workdir / "crawl.log")
    reason = json.loads((workdir / "report.json").read_text())["stats"].get("finish_reason", "")
    return reason, reason == "finished"


def crawl_stock(app: RealApp, workdir: Path, timeout: float, pages: int, seconds: float) -> tuple[str, bool]:
    spider = workdir / "stock_spider.py"
    shutil.copy(ROOT / "bench" / "stock_spider.py", spider)
    seeds = workdir / "seeds.txt"
    seeds.write_text("".join(f"{url}\n" for url in app.seeds()))
    command = [SCRAPY, "runspider", str(spider), "-a", f"seeds={seeds}", "-a", f"allowed_domains={','.join(app.hosts)}",
               "-s", "TWISTED_DNS_RESOLVER=testweb.hostsresolver.HostsFileResolver",
               "-s", f"DNS_HOSTS={app.hosts_file}", "-s", "ROBOTSTXT_OBEY=True", "-s", "LOG_LEVEL=INFO",
               "-s", f"CLOSESPIDER_PAGECOUNT={pages}", "-s", f"CLOSESPIDER_TIMEOUT={seconds}"]
    log = workdir / "crawl.log"
    run(command, workdir, dict(os.environ, PYTHONPATH=str(ROOT)), timeout, log)
    text = log.read_text(errors="replace")
    reason = text.rsplit("'finish_reason': '", 1)[-1].split("'", 1)[0] if "'finish_reason'" in text else ""
    return reason, reason == "finished"


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float, log: Path) -> None:
    with open(log, "wb") as out:
        done = subprocess.run(command, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                              timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"crawl failed ({done.returncode}): {command}\n{log.read_text(errors='replace')[-2000:]}")


class NewTextJudge:
    """The content-seen test with the crawler's default parameters, over pages in order."""

    def __init__(self, directory: Path) -> None:
        self.exact = ContentSeen.open(directory / "exact.sqlite3")
        self.near = NearDuplicateIndex.open(directory / "near.sqlite3", distance=defaults.CONTENTSEEN_NEAR_DISTANCE,
                                            min_resemblance=defaults.CONTENTSEEN_NEAR_MIN_RESEMBLANCE)

    def new(self, url: str, status: int, content_type: str, body: bytes) -> bool:
        if status != 200:
            return False
        mime = content_type.split(";", 1)[0].strip().lower()
        features = content_features(body, "utf-8", mime, max_text_bytes=defaults.CONTENTSEEN_MAX_TEXT_BYTES)
        if self.exact.duplicate_of(features.fingerprint, url) is not None:
            return False
        near = features.near
        if near is None or near.shingles < defaults.CONTENTSEEN_NEAR_MIN_SHINGLES:
            return True
        _, original = self.near.add_or_match(near.simhash, url, near.sketch)
        return original is None or original == url

    def close(self) -> None:
        self.exact.close()
        self.near.close()


def new_share(app: RealApp, pages: list[LogEntry], directory: Path) -> float:
    """Share of ``pages`` (in log order) that bring text not seen before (see the module docstring)."""
    if not pages:
        return 0.0
    judge = NewTextJudge(directory)
    new = 0
    try:
        connection = http.client.HTTPConnection("127.0.0.1", app.port, timeout=FETCH_TIMEOUT)
        for entry in sorted(pages, key=lambda e: e.end):
            connection.request("GET", entry.uri, headers={"Host": f"{entry.host}:{entry.port}"})
            answer = connection.getresponse()
            body = answer.read()
            url = f"http://{entry.host}:{entry.port}{entry.uri}"
            new += judge.new(url, answer.status, answer.getheader("Content-Type") or "", body)
        connection.close()
    finally:
        judge.close()
    return new / len(pages)


def measure(name: str, app: RealApp, workdir: Path, crawl: object) -> Run:
    before = len(app.entries())
    started = time.monotonic()
    reason, ended = crawl(app, workdir)  # type: ignore[operator]
    seconds = time.monotonic() - started
    entries = [e for e in app.entries()[before:] if e.path != "/robots.txt"]
    app_pages = [e for e in entries if e.host == APP_HOST]
    share = new_share(app, app_pages, Path(tempfile.mkdtemp(dir=workdir)))
    return Run(name, len(app_pages), len(entries) - len(app_pages), share, seconds, ended, reason)


def median(runs: list[Run]) -> Run:
    return Run(runs[0].name, int(statistics.median(r.app_pages for r in runs)),
               int(statistics.median(r.static_pages for r in runs)),
               statistics.median(r.new_share for r in runs), statistics.median(r.seconds for r in runs),
               all(r.ended for r in runs), ",".join(sorted({r.finish_reason for r in runs})))


def table(ours: Run, stock: Run, runs: int, stock_pages: int, stock_seconds: float) -> str:
    lines = [f"Real application (cgit over generated repositories, beside sphinx-doc's site): medians of {runs} runs",
             f"stock Scrapy bounded by CLOSESPIDER_PAGECOUNT={stock_pages} and CLOSESPIDER_TIMEOUT={stock_seconds:g} s "
             "(it never ends there); it ignores Crawl-delay and fetches 8 pages of a host at once",
             "",
             f"{'crawler':<12} {'app pages':>10} {'new text':>9} {'static pages':>13} {'wall s':>8}  ended by itself",
             f"{'-' * 12} {'-' * 10} {'-' * 9} {'-' * 13} {'-' * 8}  {'-' * 15}"]
    for run_ in (ours, stock):
        ended = "yes" if run_.ended else f"no (capped: {run_.finish_reason})"
        lines.append(f"{run_.name:<12} {run_.app_pages:>10} {run_.new_share:>9.0%} {run_.static_pages:>13} "
                     f"{run_.seconds:>8.0f}  {ended}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--stock-pages", type=int, default=3000, help="stock Scrapy's CLOSESPIDER_PAGECOUNT")
    parser.add_argument("--stock-seconds", type=float, default=600.0, help="stock Scrapy's CLOSESPIDER_TIMEOUT")
    parser.add_argument("--timeout", type=float, default=1800.0, help="last resort per crawl (seconds)")
    parser.add_argument("--output", type=Path, default=RESULTS / "realapp_vs_scrapy.txt")
    args = parser.parse_args()
    ours: list[Run] = []
    stock: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="bench-realapp-") as tmp:
        workdir = Path(tmp)
        with start_realapp(workdir / "realapp") as app:
            for index in range(args.runs):
                directory = workdir / f"ours{index}"
                directory.mkdir()
                ours.append(measure("webcrawler", app, directory, lambda a, d: crawl_ours(a, d, args.timeout)))
                print(ours[-1], flush=True)
                directory = workdir / f"stock{index}"
                directory.mkdir()
                stock.append(measure("stock", app, directory, lambda a, d: crawl_stock(
                    a, d, args.timeout, args.stock_pages, args.stock_seconds)))
                print(stock[-1], flush=True)
    text = table(median(ours), median(stock), args.runs, args.stock_pages, args.stock_seconds)
    print(text)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
