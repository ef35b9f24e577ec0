"""Requests handed to the engine and not finished: a fetch ends first (the
politeness gap starts), the request finishes once the engine no longer holds
it, after its callbacks' requests were enqueued (a page done has its
outlinks). Without an engine it finishes when its fetch ends."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass

from scrapy import Request

from extensions.frontier.politeness import Politeness
from extensions.frontier.store import Entry


@dataclass(slots=True)
class InFlight:
    """A request handed to the engine and not yet finished."""

    entry: Entry
    host: str
    started: float
    released: bool = False  # its fetch ended: the host's gap is running
    ok: bool = False
    excluded: bool = False  # refused before the fetch (robots.txt)
    held: bool = False  # refused because its origin is held (origin_held named it)
    refused: str | None = None  # refused for good (urls_refused named it): why


class InFlightTable(dict[Request, InFlight]):
    """The in-flight records by request, and the fetch-end rule."""

    def __init__(self, politeness: Politeness,
                 in_progress: Callable[[], Collection[Request] | None] | None = None) -> None:
        super().__init__()
        self.politeness = politeness
        self.in_progress = in_progress or (lambda: None)

    def add(self, request: Request, entry: Entry, host: str, now: float) -> None:
        self[request] = InFlight(entry, host, now)

    def drain(self) -> list[InFlight]:
        """Forget every record (a close); return them."""
        records = list(self.values())
        self.clear()
        return records

    def gone(self) -> list[Request]:
        """Requests the engine no longer holds."""
        in_progress = self.in_progress()
        if in_progress is None or not self:
            return []
        # called on every next_request: the set difference runs in C, and
        # nearly always finds nothing; the records' order is kept for the rest
        gone = self.keys() - in_progress
        if not gone:
            return []
        return [request for request in self if request in gone]

    def release(self, record: InFlight, now: float, duration: float | None) -> bool:
        """The fetch of ``record`` ended; whether this was the first end seen."""
        if record.released:
            return False
        record.released = True
        taken = now - record.started if duration is None else float(duration)
        self.politeness.finished(record.host, now, taken)
        return True

    def free_unfetched(self, record: InFlight) -> bool:
        """``record`` will not be fetched: its host is free at once; whether it held it."""
        if record.released:
            return False
        record.released = True
        state = self.politeness.hosts.get(record.host)
        if state is not None:
            state.in_flight = max(0, state.in_flight - 1)
        return True
