"""The memory backend's frontier store: the SQLite store on an in-memory
database, nothing kept beyond this object."""

from __future__ import annotations

from extensions.backends.sqlite.store import SQLiteStore


class MemoryStore(SQLiteStore):
    """:class:`SQLiteStore` in memory; a close keeps the data for the next open
    of the same object (a later frontier on it resumes, as from a clean close)."""

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
