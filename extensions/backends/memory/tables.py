"""The memory store's tables (protocols of :mod:`extensions.frontier.store`):
dicts and deques in this process, nothing kept."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from itertools import count

from extensions.frontier.census import Row
from extensions.frontier.store import Entry, Status


class MemoryQueues:
    """Named deques of fingerprints."""

    def __init__(self) -> None:
        self._queues: dict[str, deque[int]] = {}

    def push(self, name: str, fingerprints: Sequence[int]) -> None:
        self._queues.setdefault(name, deque()).extend(fingerprints)

    def push_front(self, name: str, fingerprints: Sequence[int]) -> None:
        self._queues.setdefault(name, deque()).extendleft(reversed(fingerprints))

    def pop(self, name: str, count: int) -> list[int]:
        queue = self._queues.get(name)
        if not queue:
            return []
        return [queue.popleft() for _ in range(min(count, len(queue)))]

    def length(self, name: str) -> int:
        return len(self._queues.get(name, ()))

    def clear(self) -> None:
        self._queues.clear()


class MemoryURLTable:
    """URL rows in a dict: fingerprint -> ``[entry, status, seq, fetched]``."""

    def __init__(self) -> None:
        self._rows: dict[int, list] = {}
        self._seq = count(1)

    def insert_new(self, entries: Sequence[Entry], now: float) -> list[bool]:
        result = []
        for entry in entries:
            new = entry.fingerprint not in self._rows
            if new:
                self._rows[entry.fingerprint] = [entry, Status.QUEUED, next(self._seq), None]
            result.append(new)
        return result

    def requeue(self, entry: Entry, now: float) -> None:
        row = self._rows.get(entry.fingerprint)
        fetched = row[3] if row else None
        self._rows[entry.fingerprint] = [entry, Status.QUEUED, next(self._seq), fetched]

    def get_many(self, fingerprints: Sequence[int]) -> dict[int, Entry]:
        return {fp: self._rows[fp][0] for fp in fingerprints if fp in self._rows}

    def set_status(self, fingerprints: Iterable[int], status: Status, now: float | None = None,
                   only_from: Status | None = None) -> None:
        for fp in fingerprints:
            row = self._rows.get(fp)
            if row is None or (only_from is not None and row[1] != only_from):
                continue
            row[1] = status
            if now is not None:
                row[3] = now

    def status_of(self, fingerprint: int) -> Status | None:
        row = self._rows.get(fingerprint)
        return None if row is None else row[1]

    def iter_pending(self, batch: int = 10_000) -> Iterator[tuple[int, int]]:
        pending = [(row[2], fp, row[0].level) for fp, row in self._rows.items()
                   if row[1] in (Status.QUEUED, Status.INFLIGHT)]
        for _, fp, level in sorted(pending):
            yield fp, level

    def iter_all(self, batch: int = 10_000) -> Iterator[tuple[int, int]]:
        for fp, row in list(self._rows.items()):
            yield fp, row[0].level

    def count_host(self, fingerprint: int, host: str) -> int:
        return sum(1 for row in self._rows.values() if row[0].host == host)

    def requeue_inflight(self) -> int:
        return len(self._move(Status.INFLIGHT, Status.QUEUED))

    def count_by_status(self) -> dict[Status, int]:
        counts: dict[Status, int] = {}
        for row in self._rows.values():
            counts[row[1]] = counts.get(row[1], 0) + 1
        return counts

    def take_deferred(self) -> list[int]:
        return self._move(Status.DEFERRED, Status.QUEUED)

    def _move(self, old: Status, new: Status) -> list[int]:
        moved = [fp for fp, row in self._rows.items() if row[1] == old]
        for fp in moved:
            self._rows[fp][1] = new
        return moved

    def rows(self) -> Iterator[Row]:
        """Every row, for the census."""
        for entry, status, seq, fetched in list(self._rows.values()):
            yield Row(entry, status, seq, fetched)


class MemoryHostTable:
    """Hosts (with their Crawl-delay) and deferred origins in dicts."""

    def __init__(self) -> None:
        self._hosts: dict[str, float | None] = {}
        self._deferrals: dict[str, tuple[str, float]] = {}
        self._widened: dict[str, float] = {}

    def add_hosts(self, hosts: Iterable[str], now: float = 0.0) -> int:
        new = 0
        for host in hosts:
            if host not in self._hosts:
                self._hosts[host] = None
                new += 1
        return new

    def host_count(self) -> int:
        return len(self._hosts)

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        self._hosts[host] = seconds

    def crawl_delays(self) -> dict[str, float]:
        return {host: delay for host, delay in self._hosts.items() if delay is not None}

    def set_widened(self, host: str, seconds: float) -> None:
        self._widened[host] = seconds

    def widened(self) -> dict[str, float]:
        return dict(self._widened)

    def defer_origin(self, origin: str, reason: str, now: float) -> None:
        self._deferrals[origin] = (reason, now)

    def deferrals(self) -> dict[str, tuple[str, float]]:
        return dict(self._deferrals)

    def clear_deferrals(self) -> None:
        self._deferrals.clear()


class MemoryCashTable:
    """AOPIC's cash rows in a dict."""

    def __init__(self) -> None:
        self._cash: dict[int, tuple[float, float, float, int]] = {}

    def get_cash(self, fingerprints: Sequence[int]) -> dict[int, tuple[float, float, float, int]]:
        return {fp: self._cash[fp] for fp in fingerprints if fp in self._cash}

    def put_cash(self, rows: Sequence[tuple[int, float, float, float, int]]) -> None:
        for fp, cash, history, mark, visits in rows:
            self._cash[fp] = (cash, history, mark, visits)

    def cash_count(self) -> int:
        return len(self._cash)

    def cash_totals(self) -> tuple[float, float, float]:
        values = self._cash.values()
        return (sum(v[0] for v in values), sum(v[1] for v in values), sum(v[2] for v in values))

    def get_cash_and_entries(self, fingerprints: Sequence[int]) -> tuple[
            dict[int, tuple[float, float, float, int]], dict[int, Entry] | None]:
        """The cash rows only: a URL row is read when needed, at no round trip's cost."""
        return self.get_cash(fingerprints), None


class MemoryContentGroups:
    """Content-seen verdicts in a dict."""

    def __init__(self) -> None:
        self._groups: dict[int, tuple[int, bool]] = {}

    def set_content_group(self, fingerprint: int, group_id: int, duplicate: bool) -> None:
        self._groups[fingerprint] = (group_id, duplicate)

    def content_group(self, fingerprint: int) -> int | None:
        found = self._groups.get(fingerprint)
        return None if found is None else found[0]
