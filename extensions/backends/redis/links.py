"""The recorded link graph of a Redis crawl: link segments on disk, not Redis keys.

Each process appends its pages' outlink records to its own compressed
segment files (:class:`~extensions.linkgraph.segmentlinks.SegmentLinkTable`)
in ``LINKGRAPH_SEGMENTS_DIR`` (default ``.scrapy/linksegments/<prefix>`` in
the project: shared by the processes started there; name a shared path for
processes on several machines). The store flushes them at its checkpoints,
closes them with itself and deletes them with the crawl's keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scrapy.utils.project import data_path

from extensions.backends.settings import number_setting, setting
from extensions.linkgraph.segmentlinks import SegmentLinkTable


def segments_directory(prefix: str, directory: str | Path | None = None) -> Path:
    """``directory``, or the project's default for the crawl of ``prefix``."""
    return Path(directory) if directory else Path(data_path(f"linksegments/{prefix}"))


def link_segments(settings: Any, prefix: str) -> SegmentLinkTable:
    """The crawl's link table from the settings (``LINKGRAPH_SEGMENTS_DIR``,
    ``LINKGRAPH_SEGMENT_BYTES``, ``LINKGRAPH_SEGMENT_BLOCK_BYTES``)."""
    return SegmentLinkTable(segments_directory(prefix, setting(settings, "LINKGRAPH_SEGMENTS_DIR")),
                            segment_bytes=number_setting(settings, "LINKGRAPH_SEGMENT_BYTES", 1, int),
                            block_bytes=number_setting(settings, "LINKGRAPH_SEGMENT_BLOCK_BYTES", 1, int))
