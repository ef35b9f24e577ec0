"""Politeness arithmetic (Mercator): per host at most ``limit`` fetches in
flight; the next waits until the END of the previous one plus
``max(DOWNLOAD_DELAY or slot delay, Crawl-delay, widened delay,
FRONTIER_POLITENESS_FACTOR x last fetch's duration)``. Pure: callers pass times."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

INFINITY = float("inf")


def politeness_gap(
    delay: float, crawl_delay: float | None, factor: float, last_duration: float
) -> float:
    """The wait after a fetch of a host ends, before the next may start."""
    return max(delay, crawl_delay or 0.0, factor * max(last_duration, 0.0))


@dataclass(slots=True)
class HostState:
    """What politeness remembers about one host."""

    in_flight: int = 0
    next_allowed: float = 0.0
    last_duration: float = 0.0
    last_end: float | None = None


class Politeness:
    """Per-host in-flight counts and next-allowed times."""

    def __init__(
        self,
        delay: float = 0.0,
        factor: float = 0.0,
        concurrency: int = 1,
        slots: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> None:
        self.delay = delay
        self.factor = factor
        self.concurrency = concurrency
        self.slots: dict[str, Mapping[str, Any]] = dict(slots or {})
        self.crawl_delays: dict[str, float] = {}
        self.widened: dict[str, float] = {}  # host -> its delay since it pushed back (429, 503)
        self.hosts: dict[str, HostState] = {}

    def limit(self, host: str) -> int:
        return int(self.slots.get(host, {}).get("concurrency", self.concurrency))

    def gap(self, host: str, last_duration: float) -> float:
        """The end-to-start gap of ``host`` after a fetch of that duration."""
        delay = float(self.slots.get(host, {}).get("delay", self.delay))
        if self.widened:
            delay = max(delay, self.widened.get(host, 0.0))
        return politeness_gap(delay, self.crawl_delays.get(host), self.factor, last_duration)

    def rate_limited(self, host: str) -> bool:
        """Whether ``host`` must wait longer between fetches than hosts in general."""
        state = self.hosts.get(host)
        return self.gap(host, 0.0 if state is None else state.last_duration) > self.delay

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        """Record (None: forget) a host's robots.txt Crawl-delay."""
        if seconds is None or seconds <= 0:
            self.crawl_delays.pop(host, None)
            return
        self.crawl_delays[host] = float(seconds)
        self._push(host)

    def widen(self, host: str, seconds: float) -> None:
        """``host`` waits at least ``seconds`` between fetches from now on."""
        if seconds <= self.widened.get(host, 0.0):
            return
        self.widened[host] = float(seconds)
        self._push(host)

    def _push(self, host: str) -> None:
        """A wider gap of ``host`` pushes its next-allowed time after its last fetch."""
        state = self.hosts.get(host)
        if state is not None and state.last_end is not None:
            state.next_allowed = max(state.next_allowed, state.last_end + self.gap(host, state.last_duration))

    def ready_at(self, host: str) -> float:
        """When ``host`` may start its next fetch (inf while at its limit)."""
        state = self.hosts.get(host)
        if state is None:
            return 0.0
        if state.in_flight >= self.limit(host):
            return INFINITY
        return state.next_allowed

    def _state(self, host: str) -> HostState:
        state = self.hosts.get(host)
        if state is None:
            state = self.hosts[host] = HostState()
        return state

    def started(self, host: str, now: float) -> None:
        self._state(host).in_flight += 1

    def finished(self, host: str, end: float, duration: float) -> float:
        """A fetch of ``host`` ended; the host's new next-allowed time."""
        state = self._state(host)
        state.in_flight = max(0, state.in_flight - 1)
        state.last_duration = duration
        state.last_end = end
        state.next_allowed = max(state.next_allowed, end + self.gap(host, duration))
        return state.next_allowed

    def observed(self, host: str, end: float, duration: float) -> None:
        """A fetch we did not schedule ended: it counts for the gap only."""
        state = self.hosts.get(host)
        if state is not None:
            state.last_duration, state.last_end = duration, end
            state.next_allowed = max(state.next_allowed, end + self.gap(host, duration))

    def hold(self, host: str, until: float) -> None:
        """No fetch of ``host`` may start before ``until`` (a back-off)."""
        state = self._state(host)
        state.next_allowed = max(state.next_allowed, until)

    def wait(self, host: str, now: float) -> float:
        """Seconds until ``host``'s next fetch may start, in-flight aside."""
        state = self.hosts.get(host)
        return 0.0 if state is None else max(0.0, state.next_allowed - now)

    def prune(self, now: float, keep: set[str] | frozenset[str] = frozenset()) -> int:
        """Forget idle hosts whose next-allowed time has passed; return how many."""
        idle = [
            host
            for host, state in self.hosts.items()
            if not state.in_flight and state.next_allowed <= now and host not in keep
        ]
        for host in idle:
            del self.hosts[host]
        return len(idle)
