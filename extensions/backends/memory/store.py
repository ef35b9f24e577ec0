"""An in-memory frontier store with the same behaviour as the SQLite one;
nothing survives the process."""

from __future__ import annotations

from collections.abc import Callable

from extensions.backends.memory.links import MemoryLinkTable
from extensions.backends.memory.revisits import MemoryRevisitTable
from extensions.backends.memory.tables import (
    MemoryCashTable,
    MemoryContentGroups,
    MemoryHostTable,
    MemoryQueues,
    MemoryURLTable,
)
from extensions.frontier.census import RowCensus


class MemoryStore:
    """The tables of :mod:`.tables` and a meta dict; nothing to open or commit."""

    def __init__(self) -> None:
        self.location = "memory"
        self.round_trips = 0  # an embedded store sends no requests
        self.clean = True
        self.queues = MemoryQueues()
        self.urls = MemoryURLTable()
        self.hosts = MemoryHostTable()
        self.cash = MemoryCashTable()
        self.groups = MemoryContentGroups()
        self.links = MemoryLinkTable()
        self.revisits = MemoryRevisitTable()
        self.census = RowCensus(self.urls.rows)
        self._meta: dict[str, str] = {}

    def open(self) -> None:
        """Nothing to open."""

    def checkpoint(self) -> None:
        """Nothing to make durable."""

    def commit(self, before: Callable[[], None] | None = None) -> bool:
        """Nothing to make durable: never commits."""
        return False

    def close(self, clean: bool = True) -> None:
        self.clean = clean

    def abandon(self) -> None:
        """Nothing to release: the data stays in this object."""

    def get_meta(self, key: str) -> str | None:
        return self._meta.get(key)

    def set_meta(self, key: str, value: str) -> None:
        self._meta[key] = value

    def memory_usage(self) -> tuple[int, int] | None:
        """Not measured for an embedded store."""
        return None
