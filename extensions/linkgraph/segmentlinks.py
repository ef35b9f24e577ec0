"""The link table over link segments: a store's ``links`` kept in files, not in its memory.

:class:`SegmentLinkTable` answers the frontier's
:class:`~extensions.frontier.store.LinkTable` protocol from a segments
directory (:mod:`.segments`): :meth:`record` appends to this process's own
files; the reads (:meth:`scan`, :meth:`sources`, :meth:`targets_of`) see
every process's records in the directory, a source's latest record winning,
and this process's pending ones (they are flushed first). The owner flushes
at its checkpoints and closes it with the store. Records carry their
source's and their targets' URLs, so :meth:`node_urls` names every node of
the graph without the URL database.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from extensions.linkgraph.segments import (
    SegmentRecord,
    SegmentScan,
    SegmentWriter,
    delete_segments,
    latest_records,
    read_segment,
    segment_files,
    unique_targets,
)
from extensions.urls.canonical import canonicalize

#: seconds a file's mtime may trail the wall time of a record it holds (a coarse kernel clock)
MTIME_SLACK = 1.0


class SegmentLinkTable:
    """A link table in ``directory``, written by a :class:`SegmentWriter`
    (made at the first record, so a reader writes nothing)."""

    def __init__(self, directory: Path, *, segment_bytes: int = 64 << 20, block_bytes: int = 256 << 10,
                 clock: Callable[[], float] = time.time) -> None:
        self.directory = Path(directory)
        self.segment_bytes, self.block_bytes, self.clock = segment_bytes, block_bytes, clock
        self.writer: SegmentWriter | None = None
        self.last_scan = SegmentScan()  # what the latest full read met
        self._read: tuple[tuple[tuple[str, int, int], ...], dict[int, SegmentRecord]] | None = None

    def record(self, source: int, targets: Sequence[int], url: str = "", target_urls: Sequence[str] = ()) -> None:
        if self.writer is None:
            self.writer = SegmentWriter(self.directory, segment_bytes=self.segment_bytes,
                                        block_bytes=self.block_bytes)
        self.writer.append(source, self.clock(), url, *unique_targets(targets, target_urls))

    def targets_of(self, source: int) -> list[int] | None:
        self.flush()
        best = None
        scan = SegmentScan()
        for path in sorted(segment_files(self.directory), key=_mtime, reverse=True):
            if best is not None and _mtime(path) + MTIME_SLACK < best.when:
                break  # last written before the best record: holds none later
            for record in read_segment(path, scan):
                if record.source == source and (best is None or record.when >= best.when):
                    best = record
        return None if best is None else best.targets.tolist()

    def sources(self) -> int:
        return len(self._latest())

    def scan(self, batch: int = 10_000) -> Iterator[list[tuple[int, list[int]]]]:
        rows = [(source, record.targets.tolist()) for source, record in self._latest().items()]
        for start in range(0, len(rows), max(1, batch)):
            yield rows[start:start + batch]

    def node_urls(self) -> dict[int, str]:
        """The URL of every node of the recorded graph: each target by the
        canonical URL it was recorded with, a source not named so by its own
        (canonicalised); nodes recorded without a URL are left out."""
        latest = self._latest()
        names: dict[int, str] = {}
        for record in latest.values():
            names.update(zip(record.targets.tolist(), record.target_urls))
        for source, record in latest.items():
            if source not in names and record.url:
                try:
                    names[source] = canonicalize(record.url)
                except ValueError:
                    names[source] = record.url
        return names

    def flush(self) -> None:
        """Write this process's pending records."""
        if self.writer is not None:
            self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.writer = None

    def abandon(self) -> None:
        """Drop pending records and close (a simulated crash)."""
        if self.writer is not None:
            self.writer.abandon()
            self.writer = None

    def delete(self) -> int:
        """Delete every process's segment files (the crawl's end without persistence)."""
        self.abandon()
        return delete_segments(self.directory)

    def _latest(self) -> dict[int, SegmentRecord]:
        """Every source's latest record; the previous read's while no file changed."""
        self.flush()
        state = _directory_state(self.directory)
        if self._read is None or self._read[0] != state:
            self.last_scan = SegmentScan()
            self._read = state, latest_records(self.directory, self.last_scan)
        return self._read[1]


def _directory_state(directory: Path) -> tuple[tuple[str, int, int], ...]:
    """Name, size and modification time of every segment file."""
    state = []
    for path in segment_files(directory):
        try:
            stat = path.stat()
        except FileNotFoundError:
            continue
        state.append((path.name, stat.st_size, stat.st_mtime_ns))
    return tuple(state)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return float("-inf")
