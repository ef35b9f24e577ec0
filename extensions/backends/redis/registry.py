"""The crawler processes of one crawl on Redis: who is alive, who is last, and
the closing fence behind which the last one deletes the crawl's keys."""

from __future__ import annotations

import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any

from extensions.backends.redis.connection import RedisConnection, RedisLayerError
from extensions.backends.redis.scripts import lua

logger = logging.getLogger(__name__)

HEARTBEAT, OTHERS = lua("registry_heartbeat"), lua("registry_others")
ENTER, FENCE = lua("registry_enter"), lua("registry_fence")

DEFAULT_TTL = 60.0  # seconds a process is alive after joining with no component's TTL
FENCE_TTL = 30.0  # seconds a closing fence outlives its last renewal (a killed deleter's)
ENTER_WAIT = 120.0  # seconds a joining process waits for another's deletion of the crawl to end
POLL_FIRST, POLL_MAX = 0.05, 1.0  # seconds between a refused join's tries: doubling up to the max


class CrawlClosingError(RedisLayerError):
    """Another process kept deleting the crawl's keys longer than a joining one waits."""


def process_id() -> str:
    """A name for this crawler process, unique across restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def closing_key(processes: str) -> str:
    """The closing fence of ``processes``: in its slot, outside every deleted pattern."""
    return f"{{{processes}}}:closing"


class ProcessRegistry:
    """This process's membership in ``P:processes``: components :meth:`join` (or
    :meth:`enter`) with their heartbeat TTL (the shortest counts) and :meth:`leave`.
    ``now``: milliseconds as text, ``""`` for the server's clock."""

    def __init__(self, connection: RedisConnection, key: str, owner: str | None = None, *,
                 wait: float = ENTER_WAIT, fence_ttl: float = FENCE_TTL,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.monotonic) -> None:
        self.connection, self.key, self.fence = connection, key, closing_key(key)
        self.owner = owner or process_id()
        self.wait, self.fence_ms = wait, int(fence_ttl * 1000)
        self.sleep, self.clock = sleep, clock
        self.entered = False  # a member on the server, by enter()
        self._ttls: list[float] = []
        #: called after each batch :meth:`delete` unlinks, with the keys so far (a test's pause point)
        self.deleted_batch: Callable[[int], None] = lambda deleted: None

    def join(self, ttl: float) -> None:
        """One more component, renewing within ``ttl`` seconds (a member from its next heartbeat)."""
        self._ttls.append(ttl)

    def enter(self, ttl: float | None = None, now: str = "") -> None:
        """Make this process a member before it touches the crawl's keys (waiting out a closing fence)."""
        if not self.entered:
            self._enter(self._ttls + ([] if ttl is None else [ttl]), now)
        if ttl is not None:
            self._ttls.append(ttl)

    def _enter(self, ttls: list[float], now: str) -> None:
        ttl_ms = int(min(ttls, default=DEFAULT_TTL) * 1000)
        started, delay = self.clock(), POLL_FIRST
        for attempt in range(math.ceil(self.wait / POLL_FIRST) + 1):  # the wait's bound in tries
            alive, holder = self.connection.call(("EVAL", ENTER, 2, self.key, self.fence, now, self.owner, ttl_ms))[0]
            if int(alive) >= 0:
                self.entered = True
                return
            waited = self.clock() - started
            if attempt == 0:
                logger.info("The crawl of %s is being deleted by its last process %s (SCHEDULER_PERSIST off): "
                            "waiting for the deletion to end (at most %.0f s), then joining it anew",
                            self.key, holder.decode(), self.wait)
            if waited >= self.wait:
                break
            self.sleep(min(delay, self.wait - waited))
            delay = min(2 * delay, POLL_MAX)
        raise CrawlClosingError(
            f"the crawl of {self.key} at {self.connection.location} is still being deleted by its last process "
            f"{holder.decode()} after {self.wait:.0f} s (SCHEDULER_PERSIST off): start this process again "
            "once it is done, or choose another FRONTIER_REDIS_PREFIX")

    def heartbeat_command(self, now: str = "") -> tuple[Any, ...]:
        ttl = min(self._ttls, default=DEFAULT_TTL)  # alive this long after a heartbeat: the shortest joined
        return ("EVAL", HEARTBEAT, 2, self.key, self.fence, now, self.owner, int(ttl * 1000), self.fence_ms)

    def heartbeat(self, now: str = "") -> int:
        """This process is alive for the shortest TTL joined; how many processes are alive."""
        return int(self.connection.call(self.heartbeat_command(now))[0])

    def others_alive(self, now: str = "") -> int:
        return int(self.connection.call(("EVAL", OTHERS, 1, self.key, now, self.owner, "0"))[0])

    def leave(self, ttl: float | None, now: str = "", fence: bool = False) -> int:
        """A component joined with ``ttl`` is gone; how many other processes are alive. With
        ``fence``, when none is, this process fences the crawl: delete its keys, then :meth:`unfence`."""
        if ttl in self._ttls:
            self._ttls.remove(ttl)
        last = "0" if self._ttls else "1"
        if last == "1":
            self.entered = False
        fence_ms = self.fence_ms if fence else 0
        return int(self.connection.call(("EVAL", OTHERS, 2, self.key, self.fence, now, self.owner, last,
                                         fence_ms))[0])

    def unfence(self) -> bool:
        """Lift this process's closing fence once no component is left; whether it was."""
        if self._ttls:
            return False
        return bool(self.connection.call(("EVAL", FENCE, 1, self.fence, self.owner, "0"))[0])

    def delete(self, patterns: Iterable[str], singles: Iterable[str], batch: int = 1024) -> int:
        """Unlink every key matching ``patterns``, then ``singles``; how many matched."""
        renew = ("EVAL", FENCE, 1, self.fence, self.owner, self.fence_ms)
        deleted = 0
        for pattern in patterns:
            for keys in _chunks(self.connection.scan(pattern), batch):
                self.connection.call(*[("UNLINK", key) for key in keys], renew)
                deleted += len(keys)
                self.deleted_batch(deleted)
        self.connection.call(*[("UNLINK", key) for key in singles], renew)
        return deleted


def _chunks(items: Iterator[bytes], size: int) -> Iterator[list[bytes]]:
    while chunk := list(islice(items, size)):
        yield chunk


def registry_of(connection: RedisConnection, key: str) -> ProcessRegistry:
    """The one registry of ``key`` (``Keys.processes``) on ``connection``."""
    return connection.registry(key, lambda: ProcessRegistry(connection, key))
