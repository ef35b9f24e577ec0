"""The recorded link graph in the embedded stores, and its list format.

A page's outlinks are one value: its targets' fingerprints, each once in the
order first found, packed as little-endian signed 64-bit integers (8 bytes
a link; :func:`pack_targets`). The SQLite store keeps one row per page::

    CREATE TABLE links (
      source  INTEGER PRIMARY KEY,  -- the page's URL fingerprint
      targets BLOB NOT NULL);       -- its outlinks, packed (pack_targets)

on the store's connection, inside its open transaction: the write-ahead
commit that makes a page ``done`` carries its list. The Redis store keeps
the same value in a hash per host tag (:mod:`extensions.store.redis_links`).
The memory store keeps lists in a dict. What is recorded, and when:
:mod:`extensions.frontier.linkrecord`.
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence

_LITTLE = sys.byteorder == "little"


def pack_targets(targets: Sequence[int]) -> bytes:
    """``targets`` without repeats (first kept), as little-endian int64."""
    packed = array("q", dict.fromkeys(targets))
    if not _LITTLE:
        packed.byteswap()
    return packed.tobytes()


def unpack_targets(blob: bytes) -> list[int]:
    """The fingerprints :func:`pack_targets` packed."""
    values = array("q")
    values.frombytes(blob)
    if not _LITTLE:
        values.byteswap()
    return values.tolist()


class MemoryLinkTable:
    """The link table of :class:`~extensions.store.memory.MemoryStore`."""

    def __init__(self) -> None:
        self._lists: dict[int, list[int]] = {}

    def record(self, source: int, targets: Sequence[int]) -> None:
        self._lists[source] = list(dict.fromkeys(targets))

    def targets_of(self, source: int) -> list[int] | None:
        found = self._lists.get(source)
        return None if found is None else list(found)

    def sources(self) -> int:
        return len(self._lists)

    def scan(self, batch: int = 10_000) -> Iterator[list[tuple[int, list[int]]]]:
        items = [(source, list(targets)) for source, targets in self._lists.items()]
        for start in range(0, len(items), max(1, batch)):
            yield items[start:start + batch]


class SQLiteLinkTable:
    """The ``links`` table on the SQLite store's connection (``connection``
    returns it, raising the store's error when the store is not open)."""

    def __init__(self, connection: Callable[[], sqlite3.Connection]) -> None:
        self._connection = connection

    def record(self, source: int, targets: Sequence[int]) -> None:
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
