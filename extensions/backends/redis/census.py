"""The URL table summed up for an operator, on Redis: the URLCensus of
:class:`~extensions.backends.redis.store.RedisStore`.

One pass over every URL row (SCAN for the ``P:{T}:urls`` hashes, HSCAN in
each, a field HSCAN repeats is counted once), then, for the busiest hosts
only, their politeness state where the multi-process frontier keeps it
(``next`` of ``P:{T}:lease:HOST``: the earliest start of the host's next
fetch, server ms) and the origins held now (``P:{holds}:origins``, see
:mod:`extensions.backends.redis.holds`). Reads only: no script runs (the
holds script would drop ended holds), so a running crawl is not disturbed.
Redis rows keep no discovery time: a refused URL never fetched has no time
and sorts after the timed ones. A Bloom-mode store trims finished rows, so
its hosts' ``done`` and its last errors count only rows still there.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.keys import Keys
from extensions.backends.redis.rows import row_head, unpack_entry
from extensions.frontier.census import Row, RowCensus
from extensions.frontier.store import Census


class RedisCensus:
    """The census over the store's connection (``connection`` returns it,
    raising the store's error when the store is not open)."""

    def __init__(self, keys: Keys, connection: Callable[[], RedisConnection],
                 clock: Callable[[], float] = time.time) -> None:
        self.keys, self._connection, self.clock = keys, connection, clock

    def census(self, hosts: int, errors: int, since: float) -> Census:
        found = RowCensus(self._rows).census(hosts, errors, since)
        busiest = found.busiest
        if busiest:
            due = self._connection().call(*[("HGET", self.keys.lease(load.host), "next") for load in busiest])
            busiest = [load._replace(next_due=None if ms is None else int(ms) / 1000.0)
                       for load, ms in zip(busiest, due)]
        return found._replace(busiest=busiest, held=self._held())

    def _rows(self) -> Iterator[Row]:
        connection = self._connection()
        for key in list(connection.scan(self.keys.urls_pattern)):
            for field, row in connection.hscan(key, 10_000):
                status, fetched, seq, _ = row_head(row)
                yield Row(unpack_entry(int(field), row), status, seq, fetched)

    def _held(self) -> dict[str, tuple[str, float]]:
        """Origins held now: ``origin -> (reason, until)`` (an ended hold the
        crawl has not dropped yet is left out; the server's clock and this
        one are taken to agree)."""
        now, held = self.clock(), {}
        for origin, value in self._connection().call(("HGETALL", self.keys.held_origins))[0].items():
            until_ms, _, reason = value.decode().partition(" ")
            try:
                until = float(until_ms) / 1000.0
            except ValueError:
                continue  # not a hold this code wrote
            if until > now:
                held[origin.decode()] = (reason, until)
        return held
