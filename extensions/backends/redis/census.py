"""The URL table summed up for an operator, on Redis: one pass over every URL
row, then the busiest hosts' next fetch time (``next`` of their lease) and
the origins held now. Reads only, so a running crawl is not disturbed.
Where finished rows are trimmed their counts in ``host_urls`` are added
(per host done and last fetch; fetches in all), though not to the recent
fetches nor the lists of errors.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.fpmap import FingerprintMaps
from extensions.backends.redis.keys import Keys
from extensions.backends.redis.rows import row_head, unpack_entry
from extensions.frontier.census import Finished, Row, RowCensus
from extensions.frontier.store import Census


class RedisCensus:
    """The census over the store's connection."""

    def __init__(self, keys: Keys, connection: Callable[[], RedisConnection], rows: FingerprintMaps,
                 clock: Callable[[], float] = time.time) -> None:
        self.keys, self._connection, self.clock, self.rows = keys, connection, clock, rows

    def census(self, hosts: int, errors: int, since: float) -> Census:
        found = RowCensus(self._rows).census(hosts, errors, since, self._finished())
        busiest = found.busiest
        if busiest:
            due = self._connection().call(*[("HGET", self.keys.lease(load.host), "next") for load in busiest])
            busiest = [load._replace(next_due=None if ms is None else int(ms) / 1000.0)
                       for load, ms in zip(busiest, due)]
        return found._replace(busiest=busiest, held=self._held())

    def _rows(self) -> Iterator[Row]:
        for fingerprint, row in self.rows.items():
            status, fetched, seq, _ = row_head(row)
            yield Row(unpack_entry(fingerprint, row), status, seq, fetched)

    def _finished(self) -> Finished:
        connection = self._connection()
        done: dict[str, tuple[int, float | None]] = {}
        fetched, first, last = 0, None, None
        for key in list(connection.scan(self.keys.host_urls_pattern)):
            fields = {field.decode(): value for field, value in connection.call(("HGETALL", key))[0].items()}
            fetched += int(fields.get("#fetched", 0))
            if "#first" in fields:
                value = float(fields["#first"])
                first = value if first is None else min(first, value)
            if "#last" in fields:
                value = float(fields["#last"])
                last = value if last is None else max(last, value)
            for field, value in fields.items():
                if field.endswith("#done") and field != "#done":
                    host = field[:-len("#done")]
                    seen = fields.get(f"{host}#last")
                    done[host] = (int(value), None if seen is None else float(seen))
        return Finished(done, fetched, first, last)

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
