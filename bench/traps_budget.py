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
import statistics
import sys
import tempfile
from pathlib import Path

from testweb.traps_budget import measure
from testweb.trapweb import TrapWebConfig


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
