"""Traps under a page budget: ``scrapy crawl web`` on the trap web
(:mod:`testweb.trapweb`) with ``CLOSESPIDER_PAGECOUNT`` = 1.25 x its
non-duplicate non-trap pages and no depth limit, as a user would run it.

Prints, per run and as medians: fetches (every response the server sent,
robots.txt included), the share that went to traps (calendar views, the
soft-404 archive, and a session host's page fetched again under another
session id) by kind, and the non-trap coverage (non-duplicate non-trap
documents fetched under some URL / all of them).

    python -m bench.traps_budget --runs 3
    python -m bench.traps_budget --runs 1 -s URL_FILTER_TRAPS_ENABLED=False   # without the defences
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from testweb import TestWeb, canonical_url, start_testweb
from testweb.trapweb import EVENTS_HOST, WIKI_HOST, TrapWeb, TrapWebConfig

ROOT = Path(__file__).resolve().parent.parent
SCRAPY = str(Path(sys.executable).with_name("scrapy"))
BUDGET_FACTOR = 1.25


@dataclass
class Outcome:
    """What one budgeted crawl fetched, judged by the trap web's truth."""

    fetches: int
    traps: Counter[str] = field(default_factory=Counter)
    covered: int = 0
    pages: int = 0
    missed: list[str] = field(default_factory=list)
    returncode: int = 0
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def trap_share(self) -> float:
        return sum(self.traps.values()) / max(self.fetches, 1)

    @property
    def coverage(self) -> float:
        return self.covered / max(self.pages, 1)


def budget_of(model: TrapWeb) -> tuple[int, set[str]]:
    """(the page budget, the non-duplicate non-trap documents)."""
    documents = {url for url, duplicate in model.non_trap_pages().items() if not duplicate}
    return math.ceil(BUDGET_FACTOR * len(documents)), documents


def judge(web: TestWeb, documents: set[str]) -> Outcome:
    """Read the access log: every response is a fetch; trap kinds counted."""
    model: TrapWeb = web.model  # type: ignore[assignment]
    outcome = Outcome(fetches=0, pages=len(documents))
    fetched_documents: set[str] = set()
    for entry in web.entries():
        outcome.fetches += 1
        if entry.path == "/robots.txt":
            continue
        url = canonical_url(f"http://{entry.host}:{web.port}{entry.path}")
        document = model.document(url)
        if model.is_trap(url):
            outcome.traps["calendar" if entry.host == EVENTS_HOST else
                          "deep paths" if entry.host == WIKI_HOST else "other"] += 1
        elif document in fetched_documents and document != url:
            outcome.traps[f"session ids ({urlsplit(url).hostname})"] += 1
        fetched_documents.add(document)
    outcome.covered = len(documents & fetched_documents)
    outcome.missed = sorted(documents - fetched_documents)
    return outcome


def crawl(web: TestWeb, workdir: Path, budget: int, settings: dict[str, Any] | None = None,
          timeout: float = 600) -> int:
    """One ``scrapy crawl web`` from the trap web's seeds; its exit code."""
    workdir.mkdir(parents=True, exist_ok=True)
    merged = {"DNS_HOSTS": web.hosts_file, "ALLOW_PRIVATE_ADDRESSES": True, "DEPTH_LIMIT": 0,
              "CLOSESPIDER_PAGECOUNT": budget, "LOG_FILE": workdir / "crawl.log",
              "LOG_LEVEL": "INFO", "PROGRESS_REPORT_FILE": workdir / "report.json",
              **(settings or {})}
    command = [SCRAPY, "crawl", "web", "-a", f"seeds={web.seeds_file}"]
    for name, value in merged.items():
        command += ["-s", f"{name}={value}"]
    return subprocess.run(command, cwd=ROOT, env=dict(os.environ), timeout=timeout,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode


def measure(workdir: Path, config: TrapWebConfig, settings: dict[str, Any] | None = None) -> Outcome:
    """Start the trap web, crawl it under the budget, judge the access log."""
    import json  # noqa: PLC0415

    with start_testweb(config, workdir / "web") as web:
        budget, documents = budget_of(web.model)  # type: ignore[arg-type]
        code = crawl(web, workdir / "crawl", budget, settings)
        outcome = judge(web, documents)
    outcome.returncode = code
    report = workdir / "crawl" / "report.json"
    if report.exists():
        outcome.stats = json.loads(report.read_text()).get("stats", {})
    return outcome


def parse_settings(pairs: list[str]) -> dict[str, str]:
    return dict(pair.split("=", 1) for pair in pairs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.traps_budget", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sites", type=int, default=TrapWebConfig.sites)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("-s", dest="settings", action="append", default=[], metavar="NAME=VALUE")
    args = parser.parse_args(argv)
    config = TrapWebConfig(sites=args.sites, seed=args.seed)
    settings = parse_settings(args.settings)
    outcomes = []
    print(f"trap web: {config}; settings {settings or 'defaults'}")
    print(f"{'run':>4} {'fetches':>8} {'traps':>6} {'share':>7} {'coverage':>10}  by kind")
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="traps-budget-") as tmp:
            outcome = measure(Path(tmp), config, settings)
        outcomes.append(outcome)
        kinds = ", ".join(f"{kind} {count}" for kind, count in sorted(outcome.traps.items()))
        print(f"{run + 1:>4} {outcome.fetches:>8} {sum(outcome.traps.values()):>6} "
              f"{outcome.trap_share:>7.2%} {outcome.covered:>5}/{outcome.pages:<4}  {kinds or '-'}"
              + (f"  (exit {outcome.returncode})" if outcome.returncode else ""))
        if outcome.missed:
            print(f"      missed e.g. {outcome.missed[:3]}")
    print(f"median trap share {statistics.median(o.trap_share for o in outcomes):.2%}, "
          f"median coverage {statistics.median(o.coverage for o in outcomes):.2%} "
          f"over {len(outcomes)} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
