"""Per-URL re-visit history of the memory store: records in a dict, the due
order in a heap with lazy deletion."""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterator, Sequence

from extensions.frontier.store import RevisitCounts, RevisitRecord


class MemoryRevisitTable:
    """The re-visit table of :class:`~extensions.backends.memory.store.MemoryStore`:
    records in a dict, the due order in a heap of ``(due, fingerprint)``
    with lazy deletion (an entry counts while its record still has that due)."""

    def __init__(self) -> None:
        self._records: dict[int, RevisitRecord] = {}
        self._heap: list[tuple[float, int]] = []

    def get(self, fingerprints: Sequence[int]) -> dict[int, RevisitRecord]:
        return {fp: self._records[fp] for fp in fingerprints if fp in self._records}

    def put(self, records: Sequence[RevisitRecord]) -> None:
        for record in records:
            self._records[record.fingerprint] = record
            if not math.isinf(record.due):
                heapq.heappush(self._heap, (record.due, record.fingerprint))
        if len(self._heap) > 2 * len(self._records) + 64:  # too many stale entries
            self._heap = [(r.due, fp) for fp, r in self._records.items() if not math.isinf(r.due)]
            heapq.heapify(self._heap)

    def _live(self, entry: tuple[float, int]) -> bool:
        record = self._records.get(entry[1])
        return record is not None and record.due == entry[0]

    def take_due(self, now: float, limit: int) -> list[RevisitRecord]:
        taken: list[RevisitRecord] = []
        while self._heap and len(taken) < limit and self._heap[0][0] <= now:
            entry = heapq.heappop(self._heap)
            if self._live(entry):
                record = self._records[entry[1]]
                self._records[entry[1]] = record._replace(due=math.inf)
                taken.append(record)
        return taken

    def next_due(self) -> float | None:
        while self._heap and not self._live(self._heap[0]):
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def count_due(self, now: float) -> int:
        return sum(1 for record in self._records.values() if record.due <= now)

    def counts(self) -> RevisitCounts:
        records = self._records.values()
        return RevisitCounts(len(records), sum(1 for r in records if not math.isinf(r.due)),
                             sum(1 for r in records if r.gone > 0))

    def scan(self, batch: int = 10_000) -> Iterator[list[RevisitRecord]]:
        records = list(self._records.values())
        for start in range(0, len(records), max(1, batch)):
            yield records[start:start + batch]
