"""``make demo``: crawl the bundled synthetic web for real and print a report.

Starts the synthetic test web on loopback, runs ``scrapy crawl web`` on it as
a user would (hosts file for the made-up names, items to JSON lines, WARC
files), then prints the crawl's own report and how much of the ground truth
it reached. Output stays in ``out/demo/``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from bench.testweb import WebConfig, start_testweb

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))


def crawl_command(web, out: Path, depth: int) -> list[str]:
    return [
        SCRAPY, "crawl", "web",
        "-a", f"seeds={web.seeds_file}",
        "-O", str(out / "pages.jsonl"),
        "-s", f"DNS_HOSTS={web.hosts_file}",
        "-s", f"DEPTH_LIMIT={depth}",
        "-s", "CONCURRENT_REQUESTS=32",
        "-s", "ALLOW_PRIVATE_ADDRESSES=True",
        "-s", f"WARC_DIR={out / 'warc'}",
        "-s", f"PROGRESS_REPORT_FILE={out / 'report.json'}",
        "-s", "PROGRESS_INTERVAL=2",
        "-s", f"JOBDIR={out / 'job'}",
        "-s", f"LOG_FILE={out / 'crawl.log'}",
    ]


def print_report(out: Path, truth_urls: set[str]) -> None:
    report = json.loads((out / "report.json").read_text())
    items = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines() if line]
    fetched = {item["url"] for item in items}
    reached = len(truth_urls & fetched)
    print("\nwebcrawler demo report")
    for key in ("pages", "hosts", "errors", "duplicates", "elapsed", "pages_per_second"):
        value = report.get(key)
        print(f"  {key.replace('_', ' '):<18} {value:.2f}" if isinstance(value, float)
              else f"  {key.replace('_', ' '):<18} {value}")
    print(f"  {'ground truth':<18} {reached}/{len(truth_urls)} reachable allowed pages fetched")
    print(f"  output             {out}/pages.jsonl, {out}/warc/, {out}/crawl.log")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=30)
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument("--depth", type=int, default=10)
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "demo")
    args = parser.parse_args(argv)

    shutil.rmtree(args.out, ignore_errors=True)
    args.out.mkdir(parents=True)
    config = WebConfig(hosts=args.hosts, pages=args.pages)
    with start_testweb(config, args.out / "web") as web:
        print(f"synthetic web: {args.hosts} hosts on {web.url('h0000.test', '/')}")
        command = crawl_command(web, args.out, args.depth)
        print("crawling:", " ".join(command[1:]))
        result = subprocess.run(command, cwd=ROOT)
        if result.returncode != 0:
            print(f"crawl failed with exit code {result.returncode}; see {args.out}/crawl.log")
            return result.returncode
        truth = web.truth(depth_limit=args.depth, robots_5xx="allow")
    print_report(args.out, set(truth.fetched))
    return 0


if __name__ == "__main__":
    sys.exit(main())
