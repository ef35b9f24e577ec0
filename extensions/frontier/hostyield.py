"""Host yield: the share of a host's recent pages that brought new content.

Each fetched page of a host is judged once, after the content-seen test:
``NEW`` (a 2xx document that is neither an exact nor a near duplicate of a
page fetched before), ``OLD`` (a duplicate or near-duplicate) or ``ERROR``
(a 4xx or 5xx answer). A host's yield is the share of ``NEW`` among its
last ``window`` pages. The window starts full of imaginary new pages (a host
is productive until its pages show otherwise), so the yield is defined from
the first page on and only real pages can pull it down.

Errors are kept out of the window: a site's broken links say nothing about
its pages. But ``window`` errors in a row, with no page in between, empty
the window of new pages: a host that answers nothing but errors yields
nothing.

The yield does two things (:class:`Reading`):

* **credit share**: a page of the host passes on this share of its AOPIC
  cash (after the tax); the rest goes to Lambda, so the URLs a low-yield
  host's pages find sink in the front queues;
* **stop**: once the yield is below ``threshold``, the host is stopped for
  the run (``stopped`` is true from then on, ``stopped_now`` on the page
  that stopped it).

Pure: no Scrapy, no clock. Hosts live in an LRU of ``max_hosts`` entries; a
host evicted (not seen for that many other hosts' pages) starts afresh, a
stopped one included.
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
