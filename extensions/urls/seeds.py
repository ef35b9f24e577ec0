"""Reading the crawl's seeds from ``-a seeds=FILE_OR_URLS``."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator


class SeedsError(ValueError):
    """The seeds argument names nothing we can read."""


# a scheme, then ":" and no port number: "mailto:x" has a scheme, "h.test:8080" is a host and port
_SCHEME = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]*:(?!\d*(?:[/?#]|$))")
# a comment starts at a "#" after whitespace; "#x" glued to a URL is its fragment
_COMMENT = re.compile(r"\s#.*")
# suffixes that make a bare argument a (missing) file name, not a domain
_FILE_SUFFIXES = frozenset({"cfg", "conf", "csv", "gz", "json", "jsonl", "list", "lst",
                            "seeds", "text", "tsv", "txt", "urls"})


def with_scheme(seed: str) -> str:
    """``seed`` with ``http://`` added when it has no scheme, as browsers do."""
    if "://" in seed or _SCHEME.match(seed):
        return seed
    return "http:" + seed if seed.startswith("//") else "http://" + seed


def seed_of_line(line: str) -> str | None:
    """The seed on one line of a seeds file, None for a blank or comment line."""
    line = _COMMENT.sub("", line).strip()
    if not line or line.startswith("#"):
        return None
    return with_scheme(line)


def _looks_like_path(argument: str) -> bool:
    """Whether a bare argument (no ``://``) names a file rather than hosts."""
    if argument.startswith(("/", ".", "~")):
        return True
    first = argument.split(",", 1)[0].strip()
    host = first.split("/", 1)[0].split(":", 1)[0]
    return "." not in host or host.rsplit(".", 1)[1].lower() in _FILE_SUFFIXES


def iter_seed_lines(argument: str) -> Iterator[str]:
    """The seed URLs of a seeds file or a comma-separated list."""
    argument = argument.strip()
    if not argument:
        raise SeedsError("seeds: empty argument; give a file or comma-separated URLs")
    if os.path.isfile(argument):
        try:
            with open(argument, encoding="utf-8", errors="replace") as handle:
                for line in handle:
                    seed = seed_of_line(line)
                    if seed is not None:
                        yield seed
        except OSError as err:
            raise SeedsError(f"seeds: cannot read file {argument!r}: {err}") from err
        return
    if "://" not in argument and _looks_like_path(argument):
        raise SeedsError(f"seeds: file not found: {argument!r}")
    for part in argument.split(","):
        part = part.strip()
        if part:
            yield with_scheme(part)
