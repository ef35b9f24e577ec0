"""Disk-backed FIFO queues and the front queues with their biased selector.

:class:`BufferedQueue` is Mercator's FIFO subqueue: bounded head and tail
buffers in memory, the middle in the store as fingerprints. A push goes
straight to the head while the store and tail are empty, so a small crawl
never touches the queue table. :class:`BiasedSelector` picks the front
queue that refills a back queue by smooth weighted round-robin (none starves).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from extensions.frontier.store import Entry, FrontierStore


class BufferedQueue:
    """A FIFO of entries with bounded memory; the middle lives in the store."""

    def __init__(self, name: str, store: FrontierStore, capacity: int) -> None:
        if capacity < 1:
            raise ValueError(f"FRONTIER_QUEUE_BUFFER must be >= 1, got {capacity!r}")
        self.name = name
        self.store = store
        self.capacity = capacity
        self.head: deque[Entry] = deque()
        self.tail: list[Entry] = []
        self.count = store.queues.length(name)  # head + store + tail, kept as we go

    def __len__(self) -> int:
        return self.count

    def push(self, entry: Entry) -> None:
        self.count += 1
        if not self.tail and len(self.head) < self.capacity and not self.store.queues.length(self.name):
            self.head.append(entry)
            return
        self.tail.append(entry)
        if len(self.tail) >= self.capacity:
            self.flush()

    def push_front(self, entry: Entry, behind: Callable[[Entry], bool] | None = None) -> None:
        """``entry`` first in the queue, or after the leading entries of the
        head buffer that ``behind`` accepts."""
        position = 0
        if behind is not None:
            while position < len(self.head) and behind(self.head[position]):
                position += 1
        self.head.insert(position, entry)
        self.count += 1

    def flush(self) -> None:
        """Write the tail buffer to the store."""
        if self.tail:
            self.store.queues.push(self.name, [entry.fingerprint for entry in self.tail])
            self.tail = []

    def peek(self) -> Entry | None:
        if not self.head:
            self._fill_head()
        return self.head[0] if self.head else None

    def pop(self) -> Entry | None:
        if not self.head:
            self._fill_head()
        if not self.head:
            self.count = 0
            return None
        self.count -= 1
        return self.head.popleft()

    def _fill_head(self) -> None:
        queues = self.store.queues
        while not self.head and queues.length(self.name):
            fingerprints = queues.pop(self.name, self.capacity)
            entries = self.store.urls.get_many(fingerprints)
            self.head.extend(entries[fp] for fp in fingerprints if fp in entries)
            self.count -= len(fingerprints) - sum(fp in entries for fp in fingerprints)
        if not self.head and self.tail:
            self.head.extend(self.tail)
            self.tail = []

    def spill(self) -> None:
        """Put both buffers back into the store (clean close): the head
        buffer at the front, the tail at the back."""
        self.store.queues.push_front(self.name, [entry.fingerprint for entry in self.head])
        self.head.clear()
        self.flush()

    def drop_buffers(self) -> None:
        """Forget both buffers (after a rebuild from the URL table)."""
        self.head.clear()
        self.tail = []
        self.count = self.store.queues.length(self.name)

    def in_memory(self) -> int:
        return len(self.head) + len(self.tail)


class BiasedSelector:
    """Smooth weighted round-robin over the non-empty front queues."""

    def __init__(self, weights: Sequence[int]) -> None:
        if not weights or any(w < 1 for w in weights):
            raise ValueError(f"front queue weights must all be >= 1, got {list(weights)!r}")
        self.weights = list(weights)
        self.current = [0] * len(weights)

    @classmethod
    def linear(cls, levels: int) -> BiasedSelector:
        """Level i weighs i + 1: the top level of 8 comes 8 times as often
        as the bottom one."""
        return cls(range(1, levels + 1))

    def select(self, available: Sequence[bool]) -> int | None:
        """The index of the next queue to take from, None if none is available."""
        total, best = 0, None
        current = self.current
        for index in range(len(self.weights) - 1, -1, -1):  # ties go to higher levels
            if not available[index]:
                continue
            current[index] += self.weights[index]
            total += self.weights[index]
            if best is None or current[index] > current[best]:
                best = index
        if best is not None:
            current[best] -= total
        return best


class FrontQueues:
    """K priority FIFO queues named ``front/0`` .. ``front/K-1``."""

    def __init__(
        self,
        store: FrontierStore,
        levels: int,
        capacity: int,
        selector: BiasedSelector | None = None,
    ) -> None:
        if levels < 1:
            raise ValueError(f"FRONTIER_FRONT_QUEUES must be >= 1, got {levels!r}")
        self.queues = [BufferedQueue(f"front/{i}", store, capacity) for i in range(levels)]
        self.selector = selector or BiasedSelector.linear(levels)
        if len(self.selector.weights) != levels:
            raise ValueError(f"{levels} front queues need {levels} weights, got {self.selector.weights!r}")

    def __len__(self) -> int:
        return sum(queue.count for queue in self.queues)

    def level_of(self, entry: Entry) -> int:
        return min(len(self.queues) - 1, max(0, entry.level))

    def push(self, entry: Entry) -> None:
        self.queues[self.level_of(entry)].push(entry)

    def pop(self) -> Entry | None:
        index = self.selector.select([queue.count > 0 for queue in self.queues])
        return None if index is None else self.queues[index].pop()

    def in_memory(self) -> int:
        return sum(queue.in_memory() for queue in self.queues)
