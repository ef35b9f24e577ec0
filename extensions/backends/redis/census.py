"""The URL table summed up for an operator, on Redis
(:class:`~extensions.frontier.store.URLCensus`); reads only."""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.keys import Keys
from extensions.backends.redis.rows import row_head, unpack_entry
from extensions.backends.redis.tables import RedisURLTable
from extensions.frontier.census import reason_of
from extensions.frontier.store import Census, HostLoad, Status, URLEvent

#: newest-first events kept in a min-heap: ((time, seq), event)
Kept = list[tuple[tuple[float, int], URLEvent]]


@dataclass(slots=True)
class _HostSum:
    done: int = 0
    last_fetch: float | None = None
    queued: int = 0
    inflight: int = 0


class RedisCensus:
    """The census over the store's connection."""

    def __init__(self, keys: Keys, connection: Callable[[], RedisConnection], urls: RedisURLTable,
                 clock: Callable[[], float] = time.time) -> None:
        self.keys, self._connection, self.clock, self.urls = keys, connection, clock, urls

    def census(self, hosts: int, errors: int, since: float) -> Census:
        sums: dict[str, _HostSum] = {}
        fetched, first, last = self._finished(sums)
        failed: Kept = []
        refused: Kept = []
        recent = 0
        for fingerprint, row in self.urls.all_rows():
            status, at, seq, _ = row_head(row)
            entry = unpack_entry(fingerprint, row)
            host = sums.get(entry.host) or sums.setdefault(entry.host, _HostSum())
            if status == Status.QUEUED:
                host.queued += 1
            elif status == Status.INFLIGHT:
                host.inflight += 1
            elif status == Status.DONE:
                host.done += 1
            if at is not None:
                fetched, first, last = fetched + 1, min(first, at), max(last, at)
                recent += at >= since
                host.last_fetch = max(host.last_fetch or at, at)
            if errors > 0 and status in (Status.FAILED, Status.EXCLUDED, Status.REFUSED):
                event = URLEvent(entry.url, entry.host, status, at, reason_of(entry.extra))
                _keep(failed if status == Status.FAILED else refused, ((-math.inf if at is None else at, seq), event),
                      errors)
        loads = (HostLoad(name, s.queued, s.inflight, s.done, s.last_fetch) for name, s in sums.items())
        busiest = heapq.nsmallest(max(0, hosts), loads,
                                  key=lambda load: (-load.queued, -load.inflight, -load.done, load.host))
        if busiest:
            due = self._connection().call(*[("HGET", self.keys.lease(load.host), "next") for load in busiest])
            busiest = [load._replace(next_due=None if ms is None else int(ms) / 1000.0)
                       for load, ms in zip(busiest, due)]
        events = [[event for _, event in sorted(kept, key=lambda pair: pair[0], reverse=True)]
                  for kept in (failed, refused)]
        return Census(busiest, *events, fetched, first if fetched else None, last if fetched else None, recent,
                      self._held())

    def _finished(self, sums: dict[str, _HostSum]) -> tuple[int, float, float]:
        """The counts of trimmed rows into ``sums``; their fetches, first and last fetch (inf, -inf: none)."""
        connection = self._connection()
        fetched, first, last = 0, math.inf, -math.inf
        for key in list(connection.scan(self.keys.host_urls_pattern)):
            fields = {field.decode(): value for field, value in connection.call(("HGETALL", key))[0].items()}
            fetched += int(fields.get("#fetched", 0))
            first = min(first, float(fields.get("#first", math.inf)))
            last = max(last, float(fields.get("#last", -math.inf)))
            for field, value in fields.items():
                if field.endswith("#done") and field != "#done":
                    host = field[:-len("#done")]
                    seen = fields.get(f"{host}#last")
                    sums[host] = _HostSum(int(value), None if seen is None else float(seen))
        return fetched, first, last

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


def _keep(kept: Kept, item: tuple[tuple[float, int], URLEvent], limit: int) -> None:
    """Keep the ``limit`` newest (latest time, then latest seq)."""
    if len(kept) < limit:
        heapq.heappush(kept, item)
    elif item[0] > kept[0][0]:
        heapq.heapreplace(kept, item)
