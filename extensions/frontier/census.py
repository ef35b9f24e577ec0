"""The URL table summed up for an operator: :class:`~extensions.frontier.store.URLCensus`.

:class:`RowCensus` is one pass over a stream of rows (the Redis
store); SQLite answers the same with aggregate queries. A refused row
keeps its reason in ``extra`` as ``{"refused": reason}``; failed and
excluded rows keep none. Refusals and exclusions are listed apart from errors.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Callable, Iterable
from typing import NamedTuple

from extensions.frontier.store import Census, Entry, HostLoad, Status, URLEvent

REFUSAL_STATUSES = (Status.EXCLUDED, Status.REFUSED)


def reason_of(extra: str | None) -> str | None:
    """A refusal's reason from a row's ``extra``; None if it keeps none."""
    if not extra:
        return None
    try:
        value = json.loads(extra)
    except ValueError:
        return None
    reason = value.get("refused") if isinstance(value, dict) else None
    return None if reason is None else str(reason)


def busiest_first(loads: Iterable[HostLoad], limit: int) -> list[HostLoad]:
    """The ``limit`` busiest: most queued, then in flight, then done, then by name."""
    return heapq.nsmallest(max(0, limit), loads,
                           key=lambda load: (-load.queued, -load.inflight, -load.done, load.host))


class Row(NamedTuple):
    """A URL row as :class:`RowCensus` reads it."""

    entry: Entry
    status: Status
    seq: int
    fetched: float | None
    discovered: float | None = None  # not kept by the Redis store


class Finished(NamedTuple):
    """What a store that deletes finished rows keeps of them, in counts."""

    done: dict[str, tuple[int, float | None]]  # host -> (done, last fetch)
    fetched: int
    first: float | None
    last: float | None


class _HostSum:
    __slots__ = ("queued", "inflight", "done", "last_fetch")

    def __init__(self) -> None:
        self.queued = self.inflight = self.done = 0
        self.last_fetch: float | None = None


class RowCensus:
    """The census in one pass over a stream of rows (``rows`` makes a new
    stream each call; a row repeated by the stream must be dropped by it)."""

    def __init__(self, rows: Callable[[], Iterable[Row]]) -> None:
        self._rows = rows

    def census(self, hosts: int, errors: int, since: float, finished: Finished | None = None) -> Census:
        """``finished``: the counts of rows no longer in the stream (added;
        their fetches are not in ``fetched_since``, nor their errors listed)."""
        sums: dict[str, _HostSum] = {}
        failed: list[tuple[tuple[float, int], URLEvent]] = []
        refused: list[tuple[tuple[float, int], URLEvent]] = []
        fetched, first, last, recent = 0, math.inf, -math.inf, 0
        if finished is not None:
            for name, (done, last_fetch) in finished.done.items():
                host = sums[name] = _HostSum()
                host.done, host.last_fetch = done, last_fetch
            fetched = finished.fetched
            first = math.inf if finished.first is None else finished.first
            last = -math.inf if finished.last is None else finished.last
        for row in self._rows():
            host = sums.get(row.entry.host) or sums.setdefault(row.entry.host, _HostSum())
            self._count(host, row)
            if row.fetched is not None:
                fetched, first, last = fetched + 1, min(first, row.fetched), max(last, row.fetched)
                recent += row.fetched >= since
                host.last_fetch = max(host.last_fetch or row.fetched, row.fetched)
            if errors > 0 and (row.status == Status.FAILED or row.status in REFUSAL_STATUSES):
                self._keep(failed if row.status == Status.FAILED else refused, row, errors)
        loads = (HostLoad(name, s.queued, s.inflight, s.done, s.last_fetch) for name, s in sums.items())
        events = [[event for _, event in sorted(kept, key=lambda pair: pair[0], reverse=True)]
                  for kept in (failed, refused)]
        return Census(busiest_first(loads, hosts), *events, fetched,
                      first if fetched else None, last if fetched else None, recent)

    @staticmethod
    def _count(host: _HostSum, row: Row) -> None:
        if row.status == Status.QUEUED:
            host.queued += 1
        elif row.status == Status.INFLIGHT:
            host.inflight += 1
        elif row.status == Status.DONE:
            host.done += 1

    @staticmethod
    def _keep(kept: list[tuple[tuple[float, int], URLEvent]], row: Row, limit: int) -> None:
        """Keep the ``limit`` newest in a min-heap (newest: latest time, then latest seq)."""
        at = row.fetched if row.fetched is not None else row.discovered
        event = URLEvent(row.entry.url, row.entry.host, row.status, at, reason_of(row.entry.extra))
        item = ((-math.inf if at is None else at, row.seq), event)
        if len(kept) < limit:
            heapq.heappush(kept, item)
        elif item[0] > kept[0][0]:
            heapq.heapreplace(kept, item)
