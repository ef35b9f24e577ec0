"""``scrapy linkgraph``: the connectivity server's queries over a crawl's link graph.

The crawl is named as for ``scrapy crawl``: ``-s JOBDIR=DIR`` (the SQLite
store in it), or ``-s FRONTIER_BACKEND=redis -s REDIS_URL=...`` (and
``FRONTIER_REDIS_PREFIX``). The graph is built from the recorded edges when
there is no build yet or the crawl recorded more pages since (``--rebuild``
forces it), into ``JOBDIR/linkgraph`` or ``LINKGRAPH_DIR``; the store is
only read, so a running crawl can be queried.

    scrapy linkgraph stats                 JSON: nodes, arcs, bits per link, ...
    scrapy linkgraph out URL               the URLs URL links to, one per line
    scrapy linkgraph in URL                the URLs that link to URL
    scrapy linkgraph pagerank --top N      "score url" lines, best first
    scrapy linkgraph export FILE           "source target" URL pairs, one per line
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from extensions.frontier.fingerprint import use_project_fingerprinter
from extensions.linkgraph.graph import LinkGraph, UnknownURL
from extensions.linkgraph.service import up_to_date_graph
from extensions.frontier.store import FrontierStoreError

if TYPE_CHECKING:
    import argparse

ACTIONS = ("stats", "out", "in", "pagerank", "export")


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "stats | out URL | in URL | pagerank [--top N] | export FILE"

    def short_desc(self) -> str:
        return "Query the link graph of a crawl (-s JOBDIR=DIR, or the Redis settings)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--top", type=int, default=20, help="pagerank: how many pages (default 20)")
        parser.add_argument("--rebuild", action="store_true", help="build the graph again first")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if not args or args[0] not in ACTIONS:
            raise UsageError(f"say what to do: {', '.join(ACTIONS)}")
        action, rest = args[0], args[1:]
        wanted = {"stats": 0, "pagerank": 0, "out": 1, "in": 1, "export": 1}[action]
        if len(rest) != wanted:
            raise UsageError(f"linkgraph {action} takes {wanted or 'no'} argument{'s' if wanted != 1 else ''}")
        if opts.top < 1:
            raise UsageError(f"--top must be >= 1, got {opts.top}")
        use_project_fingerprinter(self.settings)  # URLs are looked up by the crawl's fingerprints
        try:
            graph = up_to_date_graph(self.settings, rebuild=opts.rebuild)
        except (FileNotFoundError, ValueError, FrontierStoreError) as err:
            self._fail(str(err))
            return
        try:
            getattr(self, f"_{action}")(graph, rest, opts)
        except UnknownURL as err:
            self._fail(str(err))
        finally:
            graph.close()

    def _fail(self, message: str) -> None:
        print(f"linkgraph: {message}", file=sys.stderr)
        self.exitcode = 1

    def _stats(self, graph: LinkGraph, args: list[str], opts: argparse.Namespace) -> None:
        report = {**asdict(graph.report), "directory": str(graph.directory)}
        print(json.dumps(report, indent=1))

    def _out(self, graph: LinkGraph, args: list[str], opts: argparse.Namespace) -> None:
        _lines(graph.out_links(args[0]))

    def _in(self, graph: LinkGraph, args: list[str], opts: argparse.Namespace) -> None:
        _lines(graph.in_links(args[0]))

    def _pagerank(self, graph: LinkGraph, args: list[str], opts: argparse.Namespace) -> None:
        scores = graph.pagerank()
        top = np.argsort(-scores, kind="stable")[:opts.top]
        _lines(f"{scores[node]:.6g} {graph.url_of(int(node))}" for node in top)
        rho, pages = graph.report.aopic_spearman, graph.report.aopic_pages
        if pages:
            print(f"# Spearman rho, AOPIC history vs PageRank, over {pages} fetched pages: {rho:.3f}",
                  file=sys.stderr)

    def _export(self, graph: LinkGraph, args: list[str], opts: argparse.Namespace) -> None:
        count = 0
        with open(args[0], "w", encoding="utf-8") as file:
            for source, target in graph.edges():
                file.write(f"{source} {target}\n")
                count += 1
        print(f"linkgraph: {count} edges written to {args[0]}", file=sys.stderr)


def _lines(lines: Any) -> None:
    sys.stdout.writelines(f"{line}\n" for line in lines)
