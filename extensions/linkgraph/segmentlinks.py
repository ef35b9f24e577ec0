"""Link segments: each process's outlink records, appended to compressed files of its own
(format: docs/reference/formats.md)."""

from __future__ import annotations

import logging
import os
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from extensions.urls.canonical import canonicalize

MAGIC = b"LGSEG2\n\0"
FRAME = struct.Struct("<4sIII")
FRAME_MAGIC = b"LGF1"
RECORD = struct.Struct("<qdIII")
SUFFIX = ".seg"
_TARGETS = np.dtype("<i8")

logger = logging.getLogger(__name__)


class SegmentRecord(NamedTuple):
    """One page's outlinks as a process recorded them."""

    source: int  # the page's URL fingerprint
    when: float  # wall time of the record
    url: str  # the page's URL ("" when the recorder had none)
    targets: np.ndarray  # outlink fingerprints, int64, in the order found
    target_urls: tuple[str, ...]  # their URLs, one per target (empty when not recorded)


def unique_targets(targets: Sequence[int], urls: Sequence[str] = ()) -> tuple[list[int], list[str]]:
    """``targets`` each once (the first kept) and, if given, their ``urls`` alike."""
    if not urls:
        return list(dict.fromkeys(targets)), []
    if len(urls) != len(targets):
        raise ValueError(f"{len(targets)} targets but {len(urls)} target URLs")
    first: dict[int, str] = {}
    for target, url in zip(targets, urls):
        first.setdefault(target, url)
    return list(first), list(first.values())


def encode_record(source: int, when: float, url: str, targets: Sequence[int],
                  target_urls: Sequence[str] = ()) -> bytes:
    """One record as it goes into the stream (``target_urls``: one per target, or none)."""
    if target_urls and len(target_urls) != len(targets):
        raise ValueError(f"{len(targets)} targets but {len(target_urls)} target URLs")
    raw_url = url.encode("utf-8")
    packed = np.asarray(targets, dtype=_TARGETS).tobytes()
    names = "\n".join(target_urls)
    if names.count("\n") != max(len(target_urls) - 1, 0):  # a URL with a raw newline: escape it
        names = "\n".join(name.replace("\n", "%0A") for name in target_urls)
    raw_names = names.encode("utf-8")
    return RECORD.pack(source, when, len(raw_url), len(targets), len(raw_names)) + raw_url + packed + raw_names


class SegmentWriter:
    """Appends records to this process's segment files (thread-safe)."""

    def __init__(self, directory: Path, *, identity: str | None = None, segment_bytes: int = 64 << 20,
                 block_bytes: int = 256 << 10, level: int = 6) -> None:
        if segment_bytes <= 0 or block_bytes <= 0:
            raise ValueError(f"segment and block sizes must be positive, got {segment_bytes} and {block_bytes}")
        if identity is None:  # <host>-<pid>-<start>: unique per process, also across machines
            host = "".join(c if c.isalnum() or c in ".-" else "_" for c in socket.gethostname()) or "host"
            identity = f"{host}-{os.getpid()}-{time.time_ns():x}"
        self.directory, self.identity = Path(directory), identity
        self.segment_bytes, self.block_bytes, self.level = segment_bytes, block_bytes, level
        self.files = self.frames = self.records = self.bytes_written = 0
        self._pending: list[bytes] = []
        self._pending_bytes = self._pending_records = 0
        self._fd: int | None = None
        self._size = 0
        self._compressor: zlib._Compress | None = None
        self._lock = threading.Lock()

    def append(self, source: int, when: float, url: str, targets: Sequence[int],
               target_urls: Sequence[str] = ()) -> None:
        """Add a record; written out once a block's worth is pending."""
        record = encode_record(source, when, url, targets, target_urls)
        with self._lock:
            self._pending.append(record)
            self._pending_bytes += len(record)
            self._pending_records += 1
            if self._pending_bytes >= self.block_bytes:
                self._write_frame()

    def flush(self) -> None:
        """Write the pending records as one frame (nothing if none)."""
        with self._lock:
            self._write_frame()

    def close(self) -> None:
        """Flush and close the open file."""
        with self._lock:
            self._write_frame()
            self._close_file()

    def abandon(self) -> None:
        """Close without writing what is pending (as a crash would)."""
        with self._lock:
            self._pending, self._pending_bytes, self._pending_records = [], 0, 0
            self._close_file()

    def _write_frame(self) -> None:
        if not self._pending:
            return
        if self._fd is None:
            self._open_file()
        assert self._compressor is not None and self._fd is not None
        payload = self._compressor.compress(b"".join(self._pending)) + self._compressor.flush(zlib.Z_SYNC_FLUSH)
        frame = FRAME.pack(FRAME_MAGIC, len(payload), zlib.crc32(payload), self._pending_records) + payload
        _write_all(self._fd, frame)
        self._size += len(frame)
        self.frames += 1
        self.records += self._pending_records
        self.bytes_written += len(frame)
        self._pending, self._pending_bytes, self._pending_records = [], 0, 0
        if self._size >= self.segment_bytes:
            self._close_file()

    def _open_file(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        self.files += 1
        path = self.directory / f"links-{self.identity}-{self.files:06d}{SUFFIX}"
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o644)
        _write_all(self._fd, MAGIC)
        self._size = len(MAGIC)
        self.bytes_written += len(MAGIC)
        self._compressor = zlib.compressobj(self.level)

    def _close_file(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd, self._compressor = None, None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


@dataclass(slots=True)
class SegmentScan:
    """What a read of a segments directory met."""

    files: int = 0
    frames: int = 0
    records: int = 0
    bytes: int = 0  # size of the files read
    torn_files: int = 0  # files whose tail was cut or corrupt (skipped from there)
    torn_bytes: int = 0  # bytes skipped in them
    foreign_files: list[str] = field(default_factory=list)  # ``*.seg`` files without the magic


def segment_files(directory: Path) -> list[Path]:
    """The segment files in ``directory`` (none if it does not exist), by name."""
    try:
        return sorted(path for path in Path(directory).iterdir() if path.name.endswith(SUFFIX))
    except FileNotFoundError:
        return []


def read_segment(path: Path, scan: SegmentScan) -> Iterator[SegmentRecord]:
    """The records of one file, up to a torn tail; none if it is gone."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    scan.files += 1
    scan.bytes += len(data)
    if not data.startswith(MAGIC):
        scan.foreign_files.append(path.name)
        return
    position, stream = len(MAGIC), zlib.decompressobj()
    while position < len(data):
        plain = _frame(data, position, stream)
        if plain is None:
            scan.torn_files += 1
            scan.torn_bytes += len(data) - position
            logger.warning("link segment %s: %d bytes at its end are torn or corrupt, skipped",
                           path, len(data) - position)
            return
        payload_bytes, count, raw = plain
        position += FRAME.size + payload_bytes
        scan.frames += 1
        scan.records += count
        yield from _records(raw, count)


def _frame(data: bytes, position: int, stream: zlib._Decompress) -> tuple[int, int, bytes] | None:
    """The frame at ``position``: (payload bytes, records, decompressed), None if torn."""
    if position + FRAME.size > len(data):
        return None
    magic, size, crc, count = FRAME.unpack_from(data, position)
    payload = data[position + FRAME.size:position + FRAME.size + size]
    if magic != FRAME_MAGIC or len(payload) != size or zlib.crc32(payload) != crc:
        return None
    try:
        return size, count, stream.decompress(payload)
    except zlib.error:
        return None


def _records(raw: bytes, count: int) -> Iterator[SegmentRecord]:
    position = 0
    for _ in range(count):
        source, when, url_bytes, targets, names_bytes = RECORD.unpack_from(raw, position)
        position += RECORD.size
        url = raw[position:position + url_bytes].decode("utf-8", "replace")
        position += url_bytes
        packed = np.frombuffer(raw, dtype=_TARGETS, count=targets, offset=position)
        position += 8 * targets
        names = raw[position:position + names_bytes].decode("utf-8", "replace").split("\n") if names_bytes else ()
        position += names_bytes
        yield SegmentRecord(source, when, url, packed.astype(np.int64), tuple(names))


def read_segments(directory: Path, scan: SegmentScan | None = None) -> Iterator[SegmentRecord]:
    """Every record of every file in ``directory``, file after file."""
    scan = scan if scan is not None else SegmentScan()
    for path in segment_files(directory):
        yield from read_segment(path, scan)


def latest_records(directory: Path, scan: SegmentScan | None = None) -> dict[int, SegmentRecord]:
    """Per source, its latest record (by wall time; a tie goes to the one read last)."""
    latest: dict[int, SegmentRecord] = {}
    for record in read_segments(directory, scan):
        known = latest.get(record.source)
        if known is None or record.when >= known.when:
            latest[record.source] = record
    return latest


#: seconds a file's mtime may trail the wall time of a record it holds (a coarse kernel clock)
MTIME_SLACK = 1.0


class SegmentLinkTable:
    """A link table in ``directory`` (its writer made at the first record)."""

    def __init__(self, directory: Path, *, segment_bytes: int = 64 << 20, block_bytes: int = 256 << 10,
                 clock: Callable[[], float] = time.time) -> None:
        self.directory = Path(directory)
        self.segment_bytes, self.block_bytes, self.clock = segment_bytes, block_bytes, clock
        self.writer: SegmentWriter | None = None
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
        """Every recorded node's URL, canonicalised where a source was not named."""
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
        paths = segment_files(self.directory)
        for path in paths:
            path.unlink(missing_ok=True)
        return len(paths)

    def _latest(self) -> dict[int, SegmentRecord]:
        """Every source's latest record; the previous read's while no file changed."""
        self.flush()
        state = _directory_state(self.directory)
        if self._read is None or self._read[0] != state:
            self._read = state, latest_records(self.directory)
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
