"""Back queues: a bounded number of FIFO queues, each holding one host's URLs.

Mercator's refill: take a URL from the front queue the selector picks; if
its host has a back queue, append it there, else a free queue becomes that
host's. "Host" is the politeness key (:class:`.dispatch.HostKey`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

from extensions.frontier.front import BufferedQueue, FrontQueues
from extensions.frontier.store import FLAG_REVISIT, Entry, FrontierStore


class BackQueues:
    """B back queues, the host table and the pool of free queues."""

    def __init__(self, store: FrontierStore, count: int, capacity: int) -> None:
        if count < 1:
            raise ValueError(f"FRONTIER_BACK_QUEUES must be >= 1, got {count!r}")
        self.queues = [BufferedQueue(f"back/{i}", store, capacity) for i in range(count)]
        self.host_of: list[str | None] = [None] * count
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
        self.host_of[index] = host
        self.queue_of[host] = index
        return index

    def release(self, host: str) -> None:
        """An empty back queue goes back to the free pool."""
        index = self.queue_of.pop(host)
        self.host_of[index] = None
        self.free.append(index)

    def append(self, host: str, entry: Entry) -> None:
        self.queues[self.queue_of[host]].push(entry)

    def push_revisit(self, host: str, entry: Entry) -> None:
        """``entry`` first in ``host``'s back queue, behind the re-visits already at its head."""
        self.queues[self.queue_of[host]].push_front(entry, behind=lambda queued: bool(queued.flags & FLAG_REVISIT))

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
    ) -> tuple[list[str], int]:
        """Fill free back queues from the front, moving at most ``budget`` entries;
        return the hosts that got a queue and how many entries moved."""
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
        return assigned, moved

    def restore(self, key_of: Callable[[Entry], str]) -> list[str]:
        """After a clean reopen: rebuild the host table from the first entry
        of each non-empty back queue; return the hosts."""
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
        self.host_of = [None] * len(self.queues)
        self.free = deque(range(len(self.queues)))

    def in_memory(self) -> int:
        return sum(queue.in_memory() for queue in self.queues)
