"""Reading the crawl's seeds from ``-a seeds=FILE_OR_URLS``."""

from __future__ import annotations

import os
from collections.abc import Iterator


class SeedsError(ValueError):
    """The seeds argument names nothing we can read."""


def iter_seed_lines(argument: str) -> Iterator[str]:
    """Yield the raw seed strings of a seeds file or a comma-separated list.

    A file holds one URL per line; blank lines and ``#`` comments are
    skipped. An argument that is not an existing file must contain ``://``
    (a comma-separated list of URLs); anything else is a missing file, which
    is an error rather than a silently empty crawl.
    """
    argument = argument.strip()
    if not argument:
        raise SeedsError("seeds: empty argument; give a file or comma-separated URLs")
    if os.path.isfile(argument):
        try:
            with open(argument, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    line = line.strip()
                    if line and not line.startswith("#"):
                        yield line
        except OSError as err:
            raise SeedsError(f"seeds: cannot read file {argument!r}: {err}") from err
        return
    if "://" not in argument:
        raise SeedsError(f"seeds: file not found: {argument!r}")
    for part in argument.split(","):
        part = part.strip()
        if part:
            yield part
