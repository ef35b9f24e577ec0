"""A rotating series of WARC files
(``{prefix}-{YYYYmmddHHMMSS}-{serial:05d}-{pid}.warc.gz``, one gzip member a
record, ``.open`` while written under a ``flock``), each with its ``.cdxj``,
and recovery of those a killed process left open."""

from __future__ import annotations

import fcntl
import logging
import os
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any, BinaryIO

from warcio.warcwriter import WARCWriter

from extensions.output.cdxj import index_line, index_path, index_warc, write_index

logger = logging.getLogger(__name__)

OPEN_SUFFIX = ".open"
READ_CHUNK = 1 << 20

#: ``build(filename)`` -> the records to write (warcio records)
Build = Callable[[str], list[Any]]


class WarcFiles:
    """The rotating files; a failed :meth:`write` is undone and re-raised."""

    def __init__(self, directory: Path, prefix: str, max_size: int, warcinfo: Build, stats: Any,
                 cdxj: bool = False, clock: Callable[[], float] = time.time) -> None:
        self.directory, self.prefix, self.max_size = directory, prefix, max_size
        self.warcinfo, self.stats, self.cdxj, self.clock = warcinfo, stats, cdxj, clock
        self.serial = 0
        self.current: BinaryIO | None = None
        self.current_path: Path | None = None
        self.current_name = ""
        self.index_lines: list[bytes] = []  # the open file's index (written when it closes)

    def write(self, build: Build) -> int:
        """Write ``build(filename)``'s records, opening a file first if needed."""
        written = 0
        if self.current is None:
            written += self._open()
        written += self._append(build)
        if self.current is not None and self.current.tell() > self.max_size:
            self.close()
        return written

    def close(self) -> None:
        """Close the current file: its index first, then the ``.open`` suffix off."""
        if self.current is None or self.current_path is None:
            return
        path, lines = self.current_path, self.index_lines
        self.current.close()  # the lock goes with it
        self.current, self.current_path, self.index_lines = None, None, []
        if self.cdxj:
            write_index(index_path(path), lines)
        os.replace(path, path.with_name(path.name.removesuffix(OPEN_SUFFIX)))

    def _open(self) -> int:
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime(self.clock()))
        while True:
            name = f"{self.prefix}-{stamp}-{self.serial:05d}-{os.getpid()}.warc.gz"
            self.serial += 1
            path = self.directory / (name + OPEN_SUFFIX)
            if not path.exists() and not (self.directory / name).exists():
                break
        self.current, self.current_path = _create_locked(path), path
        self.current_name, self.index_lines = name, []
        self.stats.inc_value("warc/files")
        try:
            return self._append(lambda filename: [self.warcinfo(filename)])
        except OSError:
            if self.current is not None:
                self.current.close()
            path.unlink(missing_ok=True)  # nothing in it worth keeping
            self.current, self.current_path = None, None
            raise

    def _append(self, build: Build) -> int:
        assert self.current is not None
        buffer = BytesIO()
        writer = WARCWriter(buffer, gzip=True)
        records = build(self.current_name)
        spans = []
        for record in records:
            begin = buffer.tell()
            writer.write_record(record)
            spans.append((begin, buffer.tell() - begin))
        data = buffer.getvalue()
        start = self.current.tell()
        try:
            view = memoryview(data)
            while view:
                view = view[self.current.write(view):]
        except OSError:  # cut the partly written record off; failing that, leave the file to recovery
            try:
                self.current.truncate(start)
                self.current.seek(start)
            except OSError:
                self.current.close()
                self.current, self.current_path = None, None
            raise
        self.stats.inc_value("warc/records", len(records))
        if self.cdxj:
            lines = [index_line(record, start + begin, length, self.current_name)
                     for record, (begin, length) in zip(records, spans)]
            self.index_lines += [line for line in lines if line is not None]
            if any(lines):
                self.stats.inc_value("warc/cdxj_lines", sum(line is not None for line in lines))
        return len(data)


def _create_locked(path: Path) -> BinaryIO:
    """A new file at ``path``, locked before it carries its name."""
    partial = path.with_name(path.name + ".tmp")
    stream = open(partial, "xb", buffering=0)  # noqa: SIM115 - the caller closes it
    try:
        fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.replace(partial, path)
    except OSError:
        stream.close()
        partial.unlink(missing_ok=True)
        raise
    return stream


def complete_length(path: Path) -> int:
    """Bytes of ``path`` up to the end of its last complete gzip member."""
    complete = position = 0
    decompressor = zlib.decompressobj(31)
    with open(path, "rb") as stream:
        while chunk := stream.read(READ_CHUNK):
            data = chunk
            while data:
                try:
                    decompressor.decompress(data)
                except zlib.error:
                    return complete
                if not decompressor.eof:
                    position += len(data)
                    break
                position += len(data) - len(decompressor.unused_data)
                complete = position
                data = decompressor.unused_data
                decompressor = zlib.decompressobj(31)
    return complete


@dataclass(frozen=True)
class Recovered:
    """A file closed by :func:`recover_open_files`."""

    path: Path  # the closed file (the name it would have had, if deleted)
    kept: int  # bytes kept
    cut: int  # bytes cut off
    deleted: bool


def recover_open_files(directory: Path, prefix: str, cdxj: bool) -> list[Recovered]:
    """Close every orphaned ``.open`` file of ``directory``; one without a whole record is deleted."""
    recovered = []
    for path in sorted(directory.glob(f"{prefix}-*.warc.gz{OPEN_SUFFIX}")):
        try:
            stream = open(path, "r+b")  # noqa: SIM115 - closed below
        except FileNotFoundError:  # closed by its writer meanwhile
            continue
        with stream:
            try:
                fcntl.flock(stream.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live writer's
            recovered.append(_recover(path, stream, cdxj))
    return recovered


def _recover(path: Path, stream: BinaryIO, cdxj: bool) -> Recovered:
    size = os.fstat(stream.fileno()).st_size
    kept = complete_length(path)
    final = path.with_name(path.name.removesuffix(OPEN_SUFFIX))
    if kept == 0:
        path.unlink()
        logger.warning("WARC file %s held no complete record (%d bytes): deleted", path, size)
        return Recovered(final, 0, size, True)
    stream.truncate(kept)
    stream.flush()
    os.fsync(stream.fileno())
    if cdxj:
        write_index(index_path(final), index_warc(path, final.name))
    os.replace(path, final)
    logger.info("WARC file %s left open by a killed crawl: closed, %d bytes kept, %d cut", final, kept, size - kept)
    return Recovered(final, kept, size - kept, False)
