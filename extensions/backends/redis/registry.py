"""The crawler processes of one crawl on Redis: who is alive, and who is last.

``P:processes`` maps each process's id to its heartbeat's expiry (server
ms). Every Redis component of a process uses its connection's one
:class:`ProcessRegistry`; a component that deletes the crawl's keys at
close does so only when :meth:`ProcessRegistry.leave` says no other
process is alive. A killed process counts as gone once its expiry passes.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.scripts import lua

#: the scripts: lua/registry_*.lua (each says its KEYS, ARGV and answer)
HEARTBEAT, OTHERS = lua("registry_heartbeat"), lua("registry_others")


def process_id() -> str:
    """A name for this crawler process, unique across restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ProcessRegistry:
    """This process's membership in ``P:processes``: components :meth:`join`
    with the heartbeat TTL they renew within (the shortest counts) and
    :meth:`leave`. ``now``: milliseconds as text, ``""`` for the server's clock."""

    def __init__(self, connection: RedisConnection, key: str, owner: str | None = None) -> None:
        self.connection, self.key = connection, key
        self.owner = owner or process_id()
        self._ttls: list[float] = []
        #: called after each batch :meth:`delete` unlinks, with the keys so far (a test's pause point)
        self.deleted_batch: Callable[[int], None] = lambda deleted: None

    def join(self, ttl: float) -> None:
        """One more component of this process, renewing within ``ttl`` seconds."""
        self._ttls.append(ttl)

    def heartbeat_command(self, now: str = "") -> tuple[Any, ...]:
        """The heartbeat as a command, to ride on a pipeline (answer: alive count)."""
        ttl = min(self._ttls, default=60.0)  # alive this long after a heartbeat: the shortest joined
        return ("EVAL", HEARTBEAT, 1, self.key, now, self.owner, int(ttl * 1000))

    def heartbeat(self, now: str = "") -> int:
        """This process is alive for the shortest TTL joined; how many processes are alive."""
        return int(self.connection.call(self.heartbeat_command(now))[0])

    def others_alive(self, now: str = "") -> int:
        """How many other processes are alive."""
        return int(self.connection.call(("EVAL", OTHERS, 1, self.key, now, self.owner, "0"))[0])

    def leave(self, ttl: float, now: str = "") -> int:
        """A component joined with ``ttl`` is gone (the last one takes the entry
        out); how many other processes are alive."""
        if ttl in self._ttls:
            self._ttls.remove(ttl)
        last = "0" if self._ttls else "1"
        return int(self.connection.call(("EVAL", OTHERS, 1, self.key, now, self.owner, last))[0])

    def delete(self, patterns: Iterable[str], singles: Iterable[str], batch: int = 1024) -> int:
        """Unlink every key matching ``patterns`` (SCAN over every master),
        ``batch`` keys a round trip, then ``singles``; how many matched."""
        deleted = 0
        for pattern in patterns:
            for keys in _chunks(self.connection.scan(pattern), batch):
                self.connection.call(*[("UNLINK", key) for key in keys])
                deleted += len(keys)
                self.deleted_batch(deleted)
        self.connection.call(*[("UNLINK", key) for key in singles])
        return deleted


def _chunks(items: Iterator[bytes], size: int) -> Iterator[list[bytes]]:
    while chunk := list(islice(items, size)):
        yield chunk


def registry_of(connection: RedisConnection, key: str) -> ProcessRegistry:
    """The one registry of ``key`` (``Keys.processes``) on ``connection``."""
    return connection.registry(key, lambda: ProcessRegistry(connection, key))
