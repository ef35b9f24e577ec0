"""The crawler processes of one crawl on Redis: who is alive, and who is last.

One sorted set ``P:processes`` (``P``: ``FRONTIER_REDIS_PREFIX``) maps each
process's id to its heartbeat's expiry (server time, ms). Every Redis
component of a process (the shared frontier, the content-seen sets) uses
the one :class:`ProcessRegistry` of its connection, so a process is one
member whatever it runs, and the *last-one-out rule* is the same for all:
a component that deletes the crawl's keys at close (``SCHEDULER_PERSIST``
off) does so only when :meth:`ProcessRegistry.leave` says no other process
is alive. A process killed without leaving stops renewing and counts as
gone once its expiry passes.
"""

from __future__ import annotations

import os
import socket
import uuid
from typing import Any

from extensions.backends.redis.connection import RedisConnection, script
from extensions.backends.redis.scripts import NOW_LUA

#: A process is alive until now + ARGV[3] ms. KEYS: processes. ARGV: now
#: ('' for the server's clock), id, TTL ms. Returns how many are alive.
HEARTBEAT = script(NOW_LUA + """
local now = now_ms(ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
return redis.call('ZCOUNT', KEYS[1], now, '+inf')
""")

#: How many processes other than ARGV[2] are alive, after removing it if
#: ARGV[3] is '1'. KEYS: processes. ARGV: now, id, remove.
OTHERS = script(NOW_LUA + """
local now = now_ms(ARGV[1])
if ARGV[3] == '1' then redis.call('ZREM', KEYS[1], ARGV[2]) end
local alive = redis.call('ZCOUNT', KEYS[1], now, '+inf')
local mine = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]) or '-1')
if mine >= now then alive = alive - 1 end
return alive
""")


def process_id() -> str:
    """A name for this crawler process, unique across restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class ProcessRegistry:
    """This process's membership in the crawl's ``P:processes``.

    Components :meth:`join` with the heartbeat TTL they renew within and
    :meth:`leave` at close; the process's entry goes when the last one
    leaves. The entry's TTL is the shortest any member asked for (the
    component renewing most often keeps it fresh). ``now`` arguments are
    milliseconds as text, ``""`` for the server's clock (tests inject one).
    """

    def __init__(self, connection: RedisConnection, key: str, owner: str | None = None) -> None:
        self.connection, self.key = connection, key
        self.owner = owner or process_id()
        self._ttls: list[float] = []

    @property
    def ttl(self) -> float:
        """Seconds this process counts as alive after a heartbeat."""
        return min(self._ttls, default=60.0)

    def join(self, ttl: float) -> None:
        """One more component of this process, renewing within ``ttl`` seconds."""
        self._ttls.append(ttl)

    def heartbeat_command(self, now: str = "") -> tuple[Any, ...]:
        """The heartbeat as a command, to ride on a pipeline (answer: alive count)."""
        return ("EVAL", HEARTBEAT, 1, self.key, now, self.owner, int(self.ttl * 1000))

    def heartbeat(self, now: str = "") -> int:
        """This process is alive for :attr:`ttl`; how many processes are alive."""
        return int(self.connection.call(self.heartbeat_command(now))[0])

    def others_alive(self, now: str = "") -> int:
        """How many other processes are alive."""
        return int(self.connection.call(("EVAL", OTHERS, 1, self.key, now, self.owner, "0"))[0])

    def leave(self, ttl: float, now: str = "") -> int:
        """A component joined with ``ttl`` is gone (the last one takes the
        process's entry out); how many other processes are alive."""
        if ttl in self._ttls:
            self._ttls.remove(ttl)
        last = "0" if self._ttls else "1"
        return int(self.connection.call(("EVAL", OTHERS, 1, self.key, now, self.owner, last))[0])


def registry_of(connection: RedisConnection, key: str) -> ProcessRegistry:
    """The one registry of ``key`` (``Keys.processes``) on ``connection``."""
    return connection.registry(key, lambda: ProcessRegistry(connection, key))
