"""Held origins and the idle close, shared by the processes of a crawl on Redis.

One process learns that an origin cannot be crawled now (its robots.txt
middleware or circuit breaker sends ``origin_held``); every process must
respect the hold, and the crawl must end when nothing but held work is left
anywhere. Two keys under one Redis Cluster hash tag (layout in
:mod:`extensions.backends.redis.keys`):

* ``P:{holds}:origins`` -- a hash ``origin -> "until reason"``: each held
  origin with the end of its hold (server time, ms) and why. The latest
  hold of an origin wins (a process probes only after the hold it knows of
  ended, so the latest is the newest news). Every process reads it with its
  lease renewals and keeps the origins' URLs back until ``until``, so a host
  whose lease moves is not probed early by its new owner.
* ``P:{holds}:active`` -- the last time (server ms) some process had work
  that no hold keeps back: a request in flight for an origin not held, or a
  held host whose queue may hold such URLs. Each busy process raises it at
  each lease renewal (a third of ``FRONTIER_LEASE_TTL``), and every process
  at open.

The idle close (:data:`IDLE_DEFER`): a process with nothing of its own to do
asks, at each renewal, whether ``active`` is older than the idle bound; if so
the script takes every origin still held out of the hash, atomically (two
processes asking at once never both get one), and the process records them
in ``P:deferrals`` (the store's deferral table). Every process adopts the
deferrals it finds there, finishes the origins' queued URLs as deferred, and
once the host heap is empty every process closes. Processes joining raise
``active`` (the crawl gets a new idle period); a SIGKILLed process stops
raising it, and its hosts' leases expire after the TTL, so the idle bound is
at least twice the TTL: the hosts of a killed process are taken over, and
their work counted, before the crawl can be judged idle.

Resume: the first process of a run (no other live process at its open)
takes the deferral table (:data:`TAKE_ALL`, one process gets it) and puts
the deferred URLs back at the top level of their hosts' queues.

Time is the Redis server's (``TIME``), or an injected clock in tests, as in
:mod:`extensions.backends.redis.leases`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extensions.backends.redis.connection import script
from extensions.backends.redis.scripts import NOW_LUA as _NOW

#: An origin is held for ARGV[3] ms from now. KEYS: origins. ARGV: now,
#: origin, ms, reason.
HOLD = script(_NOW + """
redis.call('HSET', KEYS[1], ARGV[2], fmt(now_ms(ARGV[1]) + tonumber(ARGV[3])) .. ' ' .. ARGV[4])
return 1
""")

#: Some process has work no hold keeps back now. KEYS: active. ARGV: now.
ACTIVE = script(_NOW + """
local now = now_ms(ARGV[1])
if now > tonumber(redis.call('GET', KEYS[1]) or '0') then redis.call('SET', KEYS[1], fmt(now)) end
return 1
""")

_ENTRIES = """
local function entries(key, now, take)
  local found, out = redis.call('HGETALL', key), {}
  for i = 1, #found, 2 do
    local until_ms, reason = string.match(found[i + 1], '^(%S+) (.*)$')
    local left = (tonumber(until_ms) or 0) - now
    if left > 0 then
      out[#out + 1] = found[i]; out[#out + 1] = fmt(left); out[#out + 1] = reason
    end
    if left <= 0 or take then redis.call('HDEL', key, found[i]) end
  end
  return out
end
"""

#: Origins held now (ended holds are dropped). KEYS: origins. ARGV: now.
#: Returns {origin, ms left, reason, ...}.
HELD = script(_NOW + _ENTRIES + """
return entries(KEYS[1], now_ms(ARGV[1]), false)
""")

#: The idle close: if no process has been active for ARGV[2] ms, take every
#: held origin out of the hash. KEYS: origins, active. ARGV: now, idle ms.
#: Returns {origin, ms left, reason, ...} (empty while the crawl is active).
IDLE_DEFER = script(_NOW + _ENTRIES + """
local now = now_ms(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[2]) or '')
if not last then redis.call('SET', KEYS[2], fmt(now)) return {} end
if now - last < tonumber(ARGV[2]) then return {} end
return entries(KEYS[1], now, true)
""")

#: A hash's entries, and the hash deleted (one taker). KEYS: the hash.
TAKE_ALL = script("""
local found = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
return found
""")

def _triples(answer: list[Any]) -> dict[str, tuple[float, str]]:
    return {answer[i].decode(): (float(answer[i + 1]) / 1000.0, answer[i + 2].decode())
            for i in range(0, len(answer), 3)}


class SharedHolds:
    """The Redis side of crawl-wide holds and the idle close (see the module
    doc). ``store`` is an open :class:`~extensions.backends.redis.store.RedisStore`;
    ``clock`` (seconds) replaces the server's clock in tests."""

    def __init__(self, store: Any, clock: Callable[[], float] | None = None) -> None:
        self.store, self.clock = store, clock
        self.origins_key, self.active_key = store.keys.held_origins, store.keys.active

    def _now(self) -> str:
        return "" if self.clock is None else str(int(self.clock() * 1000))

    def hold(self, origin: str, delay: float, reason: str) -> None:
        """``origin`` is held for ``delay`` seconds, crawl-wide (buffered)."""
        self.store.write("EVAL", HOLD, 1, self.origins_key, self._now(), origin,
                         int(max(0.0, delay) * 1000), reason.replace("\n", " "))

    def held(self) -> dict[str, tuple[float, str]]:
        """Origins held now: ``origin -> (seconds left, reason)``."""
        return _triples(self.store.call(("EVAL", HELD, 1, self.origins_key, self._now()))[0])

    def mark_active(self) -> None:
        """This process has work no hold keeps back (buffered)."""
        self.store.write("EVAL", ACTIVE, 1, self.active_key, self._now())

    def defer_idle(self, idle: float) -> dict[str, tuple[float, str]]:
        """If no process was active for ``idle`` seconds, take the held
        origins (``origin -> (seconds left, reason)``) for the caller to
        defer; else nothing."""
        return _triples(self.store.call(("EVAL", IDLE_DEFER, 2, self.origins_key, self.active_key,
                                         self._now(), int(idle * 1000)))[0])

    def others_alive(self) -> int:
        """Processes of the crawl alive now (before this one's heartbeat: others)."""
        return self.store.registry.others_alive(self._now())

    def take_deferrals(self) -> dict[str, str]:
        """The deferral table of the run before (``origin -> reason``),
        emptied; one process of the crawl gets it."""
        found = self.store.call(("EVAL", TAKE_ALL, 1, self.store.keys.deferrals))[0]
        return {found[i].decode(): found[i + 1].decode().split(" ", 1)[-1] for i in range(0, len(found), 2)}
