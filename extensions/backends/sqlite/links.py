"""The recorded link graph in the SQLite store: one row per page::

    CREATE TABLE links (
      source  INTEGER PRIMARY KEY,  -- the page's URL fingerprint
      targets BLOB NOT NULL);       -- its outlinks (pack_targets)

written inside the store's transaction, with the page's ``done``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence

import numpy as np

_PACKED = np.dtype("<i8")


def pack_targets(targets: Sequence[int]) -> bytes:
    """A page's outlinks as one value: ``targets`` without repeats (first
    kept), in the order found, as little-endian signed 64-bit integers."""
    return np.array(list(dict.fromkeys(targets)), dtype=_PACKED).tobytes()


def unpack_targets(blob: bytes) -> list[int]:
    """The fingerprints :func:`pack_targets` packed."""
    return np.frombuffer(blob, dtype=_PACKED).tolist()


class SQLiteLinkTable:
    """The ``links`` table on the SQLite store's connection."""

    def __init__(self, connection: Callable[[], sqlite3.Connection]) -> None:
        self._connection = connection

    def record(self, source: int, targets: Sequence[int], url: str = "", target_urls: Sequence[str] = ()) -> None:
        self._connection().execute("INSERT OR REPLACE INTO links VALUES (?, ?)",
                                   (source, pack_targets(targets)))

    def targets_of(self, source: int) -> list[int] | None:
        row = self._connection().execute("SELECT targets FROM links WHERE source=?", (source,)).fetchone()
        return None if row is None else unpack_targets(row[0])

    def sources(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM links").fetchone()[0]

    def scan(self, batch: int = 10_000) -> Iterator[list[tuple[int, list[int]]]]:
        cursor = self._connection().cursor()
        cursor.execute("SELECT source, targets FROM links ORDER BY source")
        while rows := cursor.fetchmany(max(1, batch)):
            yield [(source, unpack_targets(blob)) for source, blob in rows]

    def node_urls(self) -> None:
        """None: the graph's nodes are named through the store's URL rows."""
