"""The URL table summed up for an operator, on Redis: one pass over every URL
row, then the busiest hosts' next fetch time (``next`` of their lease) and
the origins held now. Reads only, so a running crawl is not disturbed. A
Bloom-mode store trims finished rows: only rows still there count.
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
    """The census over the store's connection."""

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
        """Origins held now: ``origin -> (reason, until)``."""
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
