"""``make demo``: crawl the bundled synthetic web for real and print a report.

Starts the synthetic test web on loopback, runs ``scrapy crawl web`` on it as
a user would (hosts file for the made-up names, items to JSON lines, WARC
files, the HTML report with plots), then prints the crawl's own report, how
much of the ground truth it reached and the path of ``report/index.html``.
Output stays in ``out/demo/``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

from extensions import defaults
from extensions.urls.filters import UrlFilter
from testweb import TestWeb, WebConfig, start_testweb
from testweb.crawlrun import ROOT, crawl_command, run_web_crawl
from testweb.model import canonical_url


def demo_settings(web: TestWeb, out: Path, depth: int) -> dict[str, Any]:
    """Settings on top of the runner's (items, report and log in ``out``,
    loopback allowed). One host's robots.txt answers 503: its origin is held,
    retried, and deferred when nothing else is left (the defaults: the
    runner's shortcuts for tests are off)."""
    return {"DNS_HOSTS": web.hosts_file, "DEPTH_LIMIT": depth, "CONCURRENT_REQUESTS": 32,
            "WARC_DIR": out / "warc", "PROGRESS_INTERVAL": 2, "JOBDIR": out / "job",
            "REPORT_DIR": out / "report", "REPORT_INTERVAL": 2}


LABELS = {
    "pages": "pages fetched", "hosts": "hosts", "errors": "errors (failures, 5xx)",
    "duplicates": "duplicate URLs", "elapsed": "time (s)", "pages_per_second": "pages/s",
}


def print_report(out: Path, truth: Any, fetched: set[str]) -> None:
    """The crawl's own report, then how it compares with the ground truth."""
    report = json.loads((out / "report.json").read_text())
    items = sum(1 for line in (out / "items.jsonl").read_text().splitlines() if line)
    print("\nwebcrawler demo report")
    for key, label in LABELS.items():
        value = report.get(key)
        print(f"  {label:<24} {value:.2f}" if isinstance(value, float) else f"  {label:<24} {value}")
    # the ground truth knows robots.txt and the depth limit, not the URL
    # filter's trap defences (repeated path segments, too many arguments)
    url_filter = UrlFilter(["http", "https"], [], 2083, 0, None,
                           defaults.URL_FILTER_MAX_SEGMENT_REPEATS, defaults.URL_FILTER_MAX_QUERY_PARAMS)
    # ... nor content-seen: the links of a copy (the mirror host) are not followed
    expected = {url for url in truth.fetched
                if url_filter.reason(url, 0) is None and url not in truth.duplicates}
    reached = len(expected & fetched)
    lines = (out / "items.jsonl").read_text().splitlines()
    marked = sum(1 for line in lines if line and json.loads(line).get("duplicate_of"))
    near = sum(1 for line in lines if line and json.loads(line).get("near_duplicate_of"))
    outcomes = report.get("outcomes", {})
    print(f"  {'not errors':<24} {outcomes.get('excluded', 0)} URLs excluded by robots.txt, "
          f"{outcomes.get('refused', 0)} refused (URL filter, traps), {outcomes.get('deferred', 0)} deferred, "
          f"{outcomes.get('pushback', 0)} pushbacks (429/503) obeyed")
    print(f"  {'items written':<24} {items}")
    print(f"  {'ground truth':<24} {reached}/{len(expected)} reachable allowed URLs fetched "
          f"({len(set(truth.fetched) - expected)} more are trap URLs the URL filter cuts or copies "
          f"whose links are not followed), {len(fetched - set(truth.fetched))} outside it")
    print(f"  {'content-seen':<24} {marked} copies of earlier pages (links not followed), "
          f"{near} near-duplicates")
    deferred = report.get("stats", {}).get("frontier/deferred_reasons", {})
    for origin, reason in sorted(deferred.items()):
        print(f"  {'deferred':<24} {origin}: {reason}")
    print(f"  {'output':<24} {out}/items.jsonl, {out}/warc/, {out}/crawl.log")
    print(f"\nreport (open in a browser): {(out / 'report' / 'index.html').resolve()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=30)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "demo")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds the crawl may take")
    args = parser.parse_args(argv)

    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    config = WebConfig(hosts=args.hosts, pages=args.pages)
    with start_testweb(config, args.out / "web") as web:
        print(f"synthetic web: {args.hosts} hosts on {web.url('h0000.test', '/')}")
        seeds, settings = str(web.seeds_file), demo_settings(web, args.out, args.depth)
        command = crawl_command(args.out, seeds, settings, robots_overrides=False)
        print("crawling:", " ".join(command[1:]))
        result = run_web_crawl(args.out, seeds, settings, timeout=args.timeout, robots_overrides=False)
        if result.returncode != 0:
            print(f"crawl failed with exit code {result.returncode}; see {args.out}/crawl.log")
            return result.returncode
        truth = web.truth(depth_limit=args.depth, robots_5xx="disallow")
        fetched = {canonical_url(f"http://{e.host}:{web.port}{e.path}")
                   for e in web.entries() if e.path != "/robots.txt"}
    print_report(args.out, truth, fetched)
    return 0


if __name__ == "__main__":
    sys.exit(main())
