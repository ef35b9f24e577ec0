"""The recorded link graph in Redis: the LinkTable of
:class:`~extensions.backends.redis.store.RedisStore`.

Per fetched page, under its host tag ``{T}`` (:mod:`extensions.backends.redis.keys`):
``P:{T}:links`` maps its fingerprint to its outlinks' fingerprints, packed as
:func:`~extensions.backends.sqlite.links.pack_targets` packs them (8 bytes a link).
Every process of a crawl records into the same hashes; a record is a
buffered HSET on the crawler's one connection, so it travels in the same
pipeline as the page's other writes (its status, cash), with no round trip
of its own. The keys go with the crawl's others (``SCHEDULER_PERSIST`` off,
``SCHEDULER_FLUSH_ON_START``: the ``P:{*}:*`` pattern covers them).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.keys import Keys, tag_of
from extensions.linkgraph.lists import pack_targets, unpack_targets


class RedisLinkTable:
    """The link table over the store's connection (``connection`` returns
    it, raising the store's error when the store is not open)."""

    def __init__(self, keys: Keys, connection: Callable[[], RedisConnection]) -> None:
        self.keys, self._connection = keys, connection

    def record(self, source: int, targets: Sequence[int]) -> None:
        self._connection().write("HSET", self.keys.links(tag_of(source)), source, pack_targets(targets))

    def targets_of(self, source: int) -> list[int] | None:
        blob = self._connection().call(("HGET", self.keys.links(tag_of(source)), source))[0]
        return None if blob is None else unpack_targets(blob)

    def sources(self) -> int:
        connection = self._connection()
        keys = list(connection.scan(self.keys.links_pattern))
        return sum(connection.call(*[("HLEN", key) for key in keys])) if keys else 0

    def scan(self, batch: int = 10_000) -> Iterator[list[tuple[int, list[int]]]]:
        connection = self._connection()
        found: list[tuple[int, list[int]]] = []
        for key in list(connection.scan(self.keys.links_pattern)):
            seen: set[bytes] = set()  # HSCAN may repeat a field
            for field, blob in connection.hscan(key, max(1, batch)):
                if field not in seen:
                    seen.add(field)
                    found.append((int(field), unpack_targets(blob)))
                    if len(found) >= batch:
                        yield found
                        found = []
        if found:
            yield found
