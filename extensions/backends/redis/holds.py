"""Held origins and the idle close, shared by the processes of a crawl on Redis.

``P:{holds}:origins`` maps each origin held crawl-wide to ``"until reason"``
(server ms; the latest hold wins); every process reads it with its lease
renewals. ``P:{holds}:active`` is the last time some process had work no
hold keeps back. The idle close (:data:`IDLE_DEFER`): once ``active`` is
older than the idle bound (at least twice the lease TTL, so a killed
process's hosts are taken over first), one process takes every held origin
atomically and records them as deferrals. On resume the first process of a
run takes the deferral table (:data:`TAKE_ALL`). Time is the server's, or
an injected clock in tests.
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
    """The Redis side of crawl-wide holds and the idle close on an open
    :class:`~extensions.backends.redis.store.RedisStore`."""

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
        """If no process was active for ``idle`` seconds, take the held origins
        for the caller to defer; else nothing."""
        return _triples(self.store.call(("EVAL", IDLE_DEFER, 2, self.origins_key, self.active_key,
                                         self._now(), int(idle * 1000)))[0])

    def others_alive(self) -> int:
        """Processes of the crawl alive now (before this one's heartbeat: others)."""
        return self.store.registry.others_alive(self._now())

    def take_deferrals(self) -> dict[str, str]:
        """The deferral table of the run before (``origin -> reason``), emptied."""
        found = self.store.call(("EVAL", TAKE_ALL, 1, self.store.keys.deferrals))[0]
        return {found[i].decode(): found[i + 1].decode().split(" ", 1)[-1] for i in range(0, len(found), 2)}
