"""Mercator's queues: :class:`BufferedQueue` (FIFO with head and tail buffers
in memory, the middle in the store), :class:`BiasedSelector` (smooth weighted
round-robin over front queues) and :class:`BackQueues` (one politeness key
each, refilled from the front queues)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

from extensions.frontier.store import FLAG_REVISIT, Entry, QueuedStore


class BufferedQueue:
    """A FIFO of entries with bounded memory; the middle lives in the store."""

    def __init__(self, name: str, store: QueuedStore, capacity: int) -> None:
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

    def push_revisit(self, entry: Entry) -> None:
        """``entry`` first in the queue, behind the re-visits already at its head."""
        position = 0
        while position < len(self.head) and self.head[position].flags & FLAG_REVISIT:
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
        """Put both buffers back into the store (clean close)."""
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
        store: QueuedStore,
        levels: int,
        capacity: int,
        selector: BiasedSelector | None = None,
    ) -> None:
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


class BackQueues:
    """B back queues, the host table and the pool of free queues."""

    def __init__(self, store: QueuedStore, count: int, capacity: int) -> None:
        self.queues = [BufferedQueue(f"back/{i}", store, capacity) for i in range(count)]
        self.queue_of: dict[str, int] = {}
        self.free: deque[int] = deque(range(count))

    def __len__(self) -> int:
        return sum(queue.count for queue in self.queues)

    def in_use(self) -> int:
        return len(self.queue_of)

    def length(self, host: str) -> int:
        index = self.queue_of.get(host)
        return 0 if index is None else self.queues[index].count

    def assign(self, host: str, index: int | None = None) -> int:
        """Give ``host`` a free back queue (a given one when restoring)."""
        if index is None:
            index = self.free.popleft()
        else:
            self.free.remove(index)
        self.queue_of[host] = index
        return index

    def release(self, host: str) -> None:
        """An empty back queue goes back to the free pool."""
        index = self.queue_of.pop(host)
        self.free.append(index)

    def append(self, host: str, entry: Entry) -> None:
        self.queues[self.queue_of[host]].push(entry)

    def push_revisit(self, host: str, entry: Entry) -> None:
        """``entry`` first in ``host``'s back queue, behind the re-visits already at its head."""
        self.queues[self.queue_of[host]].push_revisit(entry)

    def head_level(self, host: str) -> int:
        """The front-queue level of the URL ``host`` would fetch next (-1: none)."""
        index = self.queue_of.get(host)
        entry = None if index is None else self.queues[index].peek()
        return -1 if entry is None else entry.level

    def pop(self, host: str) -> Entry | None:
        index = self.queue_of.get(host)
        return None if index is None else self.queues[index].pop()

    def refill(
        self, front: FrontQueues, budget: int, key_of: Callable[[Entry], str]
    ) -> list[str]:
        """Fill free back queues (at most ``budget`` entries); the hosts that got one."""
        assigned: list[str] = []
        moved = 0
        while self.free and moved < budget:
            entry = front.pop()
            if entry is None:
                break
            moved += 1
            host = key_of(entry)
            if host not in self.queue_of:
                self.assign(host)
                assigned.append(host)
            self.append(host, entry)
        return assigned

    def restore(self, key_of: Callable[[Entry], str]) -> list[str]:
        """After a clean reopen: the host table from each back queue's first entry."""
        hosts = []
        for index, queue in enumerate(self.queues):
            entry = queue.peek()
            if entry is not None:
                host = key_of(entry)
                if host in self.queue_of:
                    raise ValueError(f"back queues {self.queue_of[host]} and {index} both hold {host}")
                self.assign(host, index)
                hosts.append(host)
        return hosts

    def spill(self) -> None:
        for queue in self.queues:
            queue.spill()

    def drop_buffers(self) -> None:
        for queue in self.queues:
            queue.drop_buffers()
        self.queue_of.clear()
        self.free = deque(range(len(self.queues)))

    def in_memory(self) -> int:
        return sum(queue.in_memory() for queue in self.queues)
