"""The frontier's wake-up timer: one pending call at the earliest due time.

Scrapy's engine asks the scheduler only on events and a 5 s heartbeat;
this wakes it when the first host is due (an injected ``call_later``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extensions.frontier.politeness import INFINITY


class WakeUpTimer:
    """At most one pending wake-up; asking for an earlier one replaces it."""

    def __init__(self, call_later: Callable[..., Any] | None, wake: Callable[[], None] | None,
                 stats: Any) -> None:
        self.call_later, self.wake, self.stats = call_later, wake, stats
        self._timer: Any = None
        self.due = INFINITY  # when the pending timer fires (inf: none pending)

    def arm(self, due: float | None, now: float) -> None:
        """Wake the engine at ``due`` (None: nothing to wait for), unless a
        timer at or before that time is pending already."""
        if due is None or self.call_later is None or self.wake is None:
            return
        due = max(due, now)
        if self._timer is not None and self.due <= due:
            return
        self.cancel()
        self.due = due
        self._timer = self.call_later(due - now, self._fire)
        self.stats.inc_value("frontier/wakeups_scheduled")

    def cancel(self) -> None:
        if self._timer is not None:
            if getattr(self._timer, "active", lambda: True)():  # a fired DelayedCall is not active
                self._timer.cancel()
            self._timer, self.due = None, INFINITY

    def _fire(self) -> None:
        self._timer, self.due = None, INFINITY
        self.stats.inc_value("frontier/wakeups_fired")
        if self.wake is not None:
            self.wake()
