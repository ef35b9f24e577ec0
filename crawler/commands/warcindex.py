"""``scrapy warcindex``: CDXJ index files for WARC files, as a crawl with
``WARC_CDXJ`` writes them (:mod:`extensions.output.cdxj`).

    scrapy warcindex -s WARC_DIR=DIR            index the files of DIR without a .cdxj
    scrapy warcindex FILE.warc.gz ...           index these files
    scrapy warcindex ... --all                  index again even where a .cdxj exists
    scrapy warcindex ... --recover              first close the files a killed crawl left
                                                open (as the next crawl's start would)
    scrapy warcindex ... -o all.cdxj            also one merged, sorted index of them
                                                ("-" for stdout: curl --data-binary to OutbackCDX)

Files still ``.open`` belong to a running crawl, or to a killed one that
``--recover`` (or the next crawl on the directory) closes; they are skipped.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from extensions.output.cdxj import index_path, index_warc, merged, write_index
from extensions.output.warcfiles import recover_open_files

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_LEVEL": "WARNING"}

    def syntax(self) -> str:
        return "[FILE.warc.gz ...] [--all] [--recover] [-o FILE]"

    def short_desc(self) -> str:
        return "Write CDXJ indexes (pywb, OutbackCDX) for WARC files (-s WARC_DIR=DIR, or files)"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--all", action="store_true", help="index files that have an index too")
        parser.add_argument("--recover", action="store_true",
                            help="close the .open files no running crawl holds (WARC_DIR) first")
        parser.add_argument("-o", "--output", help="write one merged, sorted index of the files here ('-': stdout)")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        assert self.settings is not None
        directory = self.settings.get("WARC_DIR")
        if not args and not directory:
            raise UsageError("name WARC files, or their directory with -s WARC_DIR=DIR")
        if opts.recover:
            if not directory:
                raise UsageError("--recover needs -s WARC_DIR=DIR")
            for file in recover_open_files(Path(directory), self.settings.get("WARC_PREFIX") or "webcrawler", True):
                print(f"closed {file.path.name}: {file.kept} bytes kept, {file.cut} cut", file=sys.stderr)
        files = [Path(arg) for arg in args] or sorted(Path(directory).glob("*.warc.gz"))
        missing = [str(path) for path in files if not path.is_file() or not path.name.endswith(".warc.gz")]
        if missing:
            raise UsageError(f"not WARC files (name.warc.gz): {', '.join(missing)}")
        lines = indexed = 0
        for path in files:
            if opts.all or not index_path(path).exists():
                found = index_warc(path)
                write_index(index_path(path), found)
                indexed, lines = indexed + 1, lines + len(found)
        print(f"indexed {indexed} of {len(files)} files: {lines} lines", file=sys.stderr)
        if opts.output:
            self._merge([index_path(path) for path in files], opts.output)

    @staticmethod
    def _merge(indexes: list[Path], output: str) -> None:
        if output == "-":
            sys.stdout.buffer.writelines(merged(indexes))
            sys.stdout.flush()
            return
        with open(output, "wb") as out:
            out.writelines(merged(indexes))
