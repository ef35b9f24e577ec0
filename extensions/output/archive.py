"""The archive's index for revisit records (:class:`SqliteArchiveIndex`,
``JOBDIR/warc-archive.sqlite3``): payload digest -> its first record, URI ->
its latest capture, each addition committed once its record is on disk."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path
from typing import Any, Protocol

from extensions.output.dedup import Capture

FILE_NAME = "warc-archive.sqlite3"


class ArchiveIndexError(RuntimeError):
    """The archive index failed (its store is unreachable or broken)."""


class ArchiveIndex(Protocol):
    """What the WARC writer asks and tells the archive index."""

    def find(self, digest: str | None, uri: str | None) -> tuple[Capture | None, Capture | None]:
        """The first record with payload ``digest`` and the latest capture of ``uri``, in one look-up."""

    def add(self, capture: Capture, original: bool, latest: bool) -> None:
        """Remember a written record (a digest's first stays; ``latest``: its URI's newest)."""

    def close(self) -> None:
        """Keep what was added and let go of the store."""


class SqliteArchiveIndex:
    """The archive index of one process, in a SQLite file."""

    def __init__(self, path: Path, temporary: Any = None) -> None:
        self.path = path
        self._temporary = temporary  # a TemporaryDirectory kept alive with the file
        try:
            self.db = sqlite3.connect(str(path), check_same_thread=False)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("CREATE TABLE IF NOT EXISTS digests (digest TEXT PRIMARY KEY, uri TEXT NOT NULL, "
                            "date TEXT NOT NULL, record_id TEXT) WITHOUT ROWID")
            self.db.execute("CREATE TABLE IF NOT EXISTS captures (uri TEXT PRIMARY KEY, digest TEXT NOT NULL, "
                            "date TEXT NOT NULL, record_id TEXT) WITHOUT ROWID")
            self.db.commit()
        except sqlite3.Error as err:
            raise ArchiveIndexError(f"WARC archive index {path}: {err}") from err

    @classmethod
    def in_directory(cls, jobdir: Path | None) -> SqliteArchiveIndex:
        """In ``jobdir`` (kept), or in a temporary directory (None)."""
        if jobdir:
            Path(jobdir).mkdir(parents=True, exist_ok=True)
            return cls(Path(jobdir) / FILE_NAME)
        temporary = tempfile.TemporaryDirectory(prefix="warc-archive-")
        return cls(Path(temporary.name) / FILE_NAME, temporary)

    def find(self, digest: str | None, uri: str | None) -> tuple[Capture | None, Capture | None]:
        try:
            same_payload = same_uri = None
            if digest is not None:
                row = self.db.execute("SELECT uri, date, record_id FROM digests WHERE digest = ?",
                                      (digest,)).fetchone()
                same_payload = None if row is None else Capture(row[0], row[1], row[2], digest)
            if uri is not None:
                row = self.db.execute("SELECT digest, date, record_id FROM captures WHERE uri = ?",
                                      (uri,)).fetchone()
                same_uri = None if row is None else Capture(uri, row[1], row[2], row[0])
        except sqlite3.Error as err:
            raise ArchiveIndexError(f"WARC archive index {self.path}: {err}") from err
        return same_payload, same_uri

    def add(self, capture: Capture, original: bool, latest: bool) -> None:
        try:
            with self.db:  # one transaction
                if original:
                    self.db.execute("INSERT OR IGNORE INTO digests VALUES (?, ?, ?, ?)",
                                    (capture.digest, capture.uri, capture.date, capture.record_id))
                if latest:
                    self.db.execute("INSERT OR REPLACE INTO captures VALUES (?, ?, ?, ?)",
                                    (capture.uri, capture.digest, capture.date, capture.record_id))
        except sqlite3.Error as err:
            raise ArchiveIndexError(f"WARC archive index {self.path}: {err}") from err

    def close(self) -> None:
        try:
            self.db.close()
        except sqlite3.Error as err:
            raise ArchiveIndexError(f"WARC archive index {self.path}: {err}") from err
        finally:
            if self._temporary is not None:
                self._temporary.cleanup()
