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

from extensions.backends.redis.scripts import lua

#: the scripts: lua/hold_*.lua (each says its KEYS, ARGV and answer)
HOLD, ACTIVE, HELD = lua("hold_hold"), lua("hold_active"), lua("hold_held")
IDLE_DEFER, TAKE_ALL = lua("hold_idle_defer"), lua("hold_take_all")


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
