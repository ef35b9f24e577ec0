"""Host yield: the share of a host's recent pages that brought new content.

Each page of a host is ``NEW`` (a 2xx neither an exact nor a near
duplicate), ``OLD`` (a duplicate) or ``ERROR`` (4xx/5xx). A host's yield is
the share of ``NEW`` among its last ``window`` pages; the window starts
full of imaginary new pages. Errors stay out of the window, but ``window``
errors in a row empty it. A page passes on the yield as its share of AOPIC
credit, and a host whose yield falls below ``threshold`` is stopped for the
run. Pure: no Scrapy, no clock; hosts live in an LRU of ``max_hosts``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from enum import Enum


class PageKind(Enum):
    """What one fetched page brought."""

    NEW = "new"
    OLD = "old"  # an exact or near duplicate
    ERROR = "error"  # a 4xx or 5xx answer


@dataclass(frozen=True, slots=True)
class Reading:
    """A host's yield after one of its pages."""

    share: float  # new pages among the window's (the credit share)
    stopped: bool  # the host is stopped for the run
    stopped_now: bool = False  # this page stopped it


class _Host:
    """One host's window: the last ``window`` pages as bits (1: new), newest lowest."""

    __slots__ = ("bits", "error_run", "stopped")

    def __init__(self, window: int) -> None:
        self.bits = (1 << window) - 1  # the imaginary new pages
        self.error_run = 0
        self.stopped = False


class HostYield:
    """Per-host windows of page kinds, their yield, and the stop rule."""

    def __init__(self, window: int, threshold: float, max_hosts: int = 65536) -> None:
        if window < 1:
            raise ValueError(f"HOST_YIELD_WINDOW must be >= 1, got {window!r}")
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"HOST_YIELD_THRESHOLD must be in 0..1, got {threshold!r}")
        if max_hosts < 1:
            raise ValueError(f"HOST_YIELD_MAX_HOSTS must be >= 1, got {max_hosts!r}")
        self.window, self.threshold, self.max_hosts = window, threshold, max_hosts
        self.mask = (1 << window) - 1
        self.hosts: OrderedDict[str, _Host] = OrderedDict()

    def record(self, host: str, kind: PageKind) -> Reading:
        """Add one page of ``host``; the host's yield and stop state after it."""
        state = self._state(host)
        if kind is PageKind.ERROR:
            state.error_run += 1
            if state.error_run >= self.window:
                state.bits = 0
        else:
            state.error_run = 0
            state.bits = ((state.bits << 1) | (kind is PageKind.NEW)) & self.mask
        share = state.bits.bit_count() / self.window
        if state.stopped or share >= self.threshold:
            return Reading(share, state.stopped)
        state.stopped = True
        return Reading(share, True, stopped_now=True)

    def share(self, host: str) -> float:
        """``host``'s yield now (1.0 for a host without pages)."""
        state = self.hosts.get(host)
        return 1.0 if state is None else state.bits.bit_count() / self.window

    def _state(self, host: str) -> _Host:
        state = self.hosts.pop(host, None)
        if state is None:
            state = _Host(self.window)
            if len(self.hosts) >= self.max_hosts:
                self.hosts.popitem(last=False)
        self.hosts[host] = state
        return state
