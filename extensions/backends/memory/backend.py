"""The memory backend: the frontier's state in this process only, nothing
kept (tests, short crawls); the content-seen sets are the embedded
backend's SQLite files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from extensions.backends.sqlite.backend import SQLiteBackend
from extensions.backends.sqlite.store import SQLiteStore

if TYPE_CHECKING:
    from extensions.frontier.store import FrontierStore


class MemoryStore(SQLiteStore):
    """:class:`SQLiteStore` in memory; a close keeps the data for the next open of this object."""

    def __init__(self) -> None:
        super().__init__(":memory:")
        self.location = "memory"

    def open(self) -> None:
        if self._db is None:
            super().open()

    def close(self, clean: bool = True) -> None:
        if self._db is not None:
            self.set_meta("clean", "1" if clean else "0")
            self.checkpoint()
        self.clean = clean

    def abandon(self) -> None:
        """Nothing to release: the data stays with this object."""


class MemoryBackend(SQLiteBackend):
    """The frontier store in memory."""

    def frontier_store(self) -> tuple[FrontierStore, Path | None, Path | None]:
        return MemoryStore(), self.jobdir(), None

    def read_only_store(self) -> FrontierStore:
        raise ValueError("a memory crawl keeps nothing to read: crawl with -s JOBDIR=DIR "
                         "(or -s FRONTIER_BACKEND=redis and REDIS_URL)")
