"""The content-seen sets in local SQLite files: ``contentseen.sqlite3`` and
``contentseen.near.sqlite3`` in the crawl's directory (``JOBDIR``, or a
temporary directory removed at close). Each process has its own."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from extensions.contentseen.exact import ContentSeen
from extensions.contentseen.nearindex import NearDuplicateIndex
from extensions.contentseen.sets import ContentOptions, ContentSets

DATABASE = "contentseen.sqlite3"


def local_content_sets(directory: Path | None, options: ContentOptions) -> ContentSets:
    """The sets in ``directory`` (None: a temporary one), opened by ``open``."""
    temporary = None if directory else Path(tempfile.mkdtemp(prefix="webcrawler-contentseen-"))
    path = (directory or temporary) / DATABASE  # type: ignore[operator]

    def opener(sets: ContentSets) -> None:
        sets.exact = ContentSeen.open(path, memory_entries=options.memory_entries, cache_kib=options.cache_kib)
        if options.near_enabled:
            sets.near = NearDuplicateIndex.open(path.with_suffix(".near.sqlite3"), distance=options.distance,
                                                cache_kib=options.cache_kib,
                                                min_resemblance=options.min_resemblance)

    cleanup = (lambda: shutil.rmtree(temporary, ignore_errors=True)) if temporary else None
    return ContentSets(exact=None, opener=opener, cleanup=cleanup)  # type: ignore[arg-type]
