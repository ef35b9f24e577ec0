"""``scrapy crawlstatus``: the status of a running or finished crawl, on one screen.

The crawl is named as for ``scrapy crawl``: ``-s JOBDIR=DIR`` (the SQLite
store in it), or ``-s FRONTIER_BACKEND=redis -s REDIS_URL=...`` (and
``FRONTIER_REDIS_PREFIX``). The store is only read (SQLite opened
``mode=ro``, Redis without writes), so a running crawl is not disturbed.

    scrapy crawlstatus -s JOBDIR=DIR                 the screen
    scrapy crawlstatus -s JOBDIR=DIR --json          the same as JSON
    scrapy crawlstatus ... --hosts 20 --errors 10    more of each

What is shown and where it comes from: :mod:`extensions.status`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from extensions.status import as_json, collect, render
from extensions.frontier.store import FrontierStoreError
from extensions.backends import read_only_store

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "[--json] [--hosts N] [--errors N]"

    def short_desc(self) -> str:
        return "Show the status of a crawl (-s JOBDIR=DIR, or the Redis settings)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--json", action="store_true", help="print the status as JSON")
        parser.add_argument("--hosts", type=int, default=10, help="how many of the busiest hosts (default 10)")
        parser.add_argument("--errors", type=int, default=5, help="how many of the last errors, and of the last refusals (default 5)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        if args:
            raise UsageError("crawlstatus takes no arguments: name the crawl with -s JOBDIR=DIR "
                             "or the Redis settings")
        for name in ("hosts", "errors"):
            if getattr(opts, name) < 0:
                raise UsageError(f"--{name} must be >= 0, got {getattr(opts, name)}")
        report = self.settings.get("PROGRESS_REPORT_FILE")
        try:
            store = read_only_store(self.settings)
        except (ValueError, FrontierStoreError) as err:
            self._fail(str(err))
            return
        try:
            status = collect(store, opts.hosts, opts.errors, Path(report) if report else None)
        except FrontierStoreError as err:  # a RedisLayerError too: it is one
            self._fail(str(err))
            return
        finally:
            store.close()
        sys.stdout.write(as_json(status) + "\n" if opts.json else render(status))

    def _fail(self, message: str) -> None:
        print(f"crawlstatus: {message}", file=sys.stderr)
        self.exitcode = 1
