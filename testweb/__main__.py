"""``python -m testweb serve|hosts|truth``: the synthetic web's CLI."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from testweb.model import SiteModel, WebConfig
from testweb.server import hosts_file_text, serve
from testweb.truth import compute_truth


def config_arguments(parser: argparse.ArgumentParser) -> None:
    defaults = WebConfig()
    parser.add_argument("--web", choices=("default", "traps"), default="default",
                        help="traps: testweb.trapweb (--hosts ordinary sites, --seed)")
    parser.add_argument("--hosts", type=int, default=defaults.hosts)
    parser.add_argument("--pages", type=int, default=defaults.pages)
    parser.add_argument("--links", type=int, default=defaults.links)
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--slow-delay", type=float, default=defaults.slow_delay)
    parser.add_argument("--crawl-delay", type=float, default=defaults.crawl_delay)
    parser.add_argument("--big-page-mb", type=float, default=defaults.big_page_mb)
    parser.add_argument("--robots-flaky-failures", type=int, default=defaults.robots_flaky_failures)
    parser.add_argument("--powerlaw-pages", type=int, default=defaults.powerlaw_pages)
    parser.add_argument("--nav-sections", type=int, default=defaults.nav_sections,
                        help="section pages in each regular host's menu (0: no menu)")
    parser.add_argument("--weight", choices=("tiny", "real"), default=defaults.weight,
                        help="page weight: tiny (40-90 words) or real (sizes of real documentation pages)")


def config_from(args: argparse.Namespace) -> WebConfig:
    return WebConfig(hosts=args.hosts, pages=args.pages, links=args.links, seed=args.seed,
                     slow_delay=args.slow_delay, crawl_delay=args.crawl_delay,
                     big_page_mb=args.big_page_mb, robots_flaky_failures=args.robots_flaky_failures,
                     powerlaw_pages=args.powerlaw_pages, nav_sections=args.nav_sections,
                     weight=args.weight)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m testweb", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve_cmd = commands.add_parser("serve", help="run the server on 127.0.0.1")
    serve_cmd.add_argument("--port", type=int, default=0, help="0 picks a free port")
    serve_cmd.add_argument("--workdir", type=Path, required=True)
    hosts_cmd = commands.add_parser("hosts", help="print a hosts file for DNS_HOSTS")
    truth_cmd = commands.add_parser("truth", help="print the ground truth as JSON")
    truth_cmd.add_argument("--port", type=int, required=True)
    truth_cmd.add_argument("--depth", type=int, default=10)
    truth_cmd.add_argument("--robots-5xx", choices=("allow", "disallow"), default="allow")
    truth_cmd.add_argument("--follow-nofollow", action="store_true")
    for command in (serve_cmd, hosts_cmd, truth_cmd):
        config_arguments(command)
    args = parser.parse_args(argv)
    config = config_from(args)
    if args.web == "traps":
        from testweb.trapweb import TrapWeb, TrapWebConfig  # noqa: PLC0415

        trap_config = TrapWebConfig(sites=args.hosts, seed=args.seed)
        if args.command != "serve":
            parser.error("--web traps: only serve (its truth is TrapWeb.non_trap_pages())")
        asyncio.run(serve(trap_config, args.port, args.workdir, TrapWeb))  # type: ignore[arg-type]
        return 0
    if args.command == "serve":
        asyncio.run(serve(config, args.port, args.workdir))
    elif args.command == "hosts":
        sys.stdout.write(hosts_file_text(SiteModel(config, 80).hosts))
    else:
        truth = compute_truth(SiteModel(config, args.port), None, args.depth,
                              args.robots_5xx, args.follow_nofollow)
        json.dump(truth.summary(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
