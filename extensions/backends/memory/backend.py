"""The memory backend: the frontier's state in this process only, nothing
kept (tests, short crawls); the content-seen sets are the embedded
backend's SQLite files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from extensions.backends.memory.store import MemoryStore
from extensions.backends.sqlite.backend import SQLiteBackend

if TYPE_CHECKING:
    from extensions.frontier.store import FrontierStore


class MemoryBackend(SQLiteBackend):
    """The frontier store in memory."""

    def frontier_store(self) -> tuple[FrontierStore, Path | None, Path | None]:
        return MemoryStore(), self.jobdir(), None

    def read_only_store(self) -> FrontierStore:
        raise ValueError("a memory crawl keeps nothing to read: crawl with -s JOBDIR=DIR "
                         "(or -s FRONTIER_BACKEND=redis and REDIS_URL)")
