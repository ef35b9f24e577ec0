"""The write-ahead commit (``FRONTIER_WRITE_AHEAD``): group commit per reactor turn.

A request the frontier hands out must be in flight in the URL database's
file before its fetch can reach the server, so that after ``kill -9`` only
requests in flight are fetched again (:mod:`.resume`). No request is written
to a socket before the reactor polls for I/O again, so one commit per
reactor turn is as safe as one per request: :meth:`WriteAhead.request`
schedules it with ``call_soon`` (asyncio's ``loop.call_soon``, Twisted's
``callLater(0)``: both run before the next poll) and the turn's later
requests join it. Without ``call_soon`` (no reactor: tests and tools) the
commit runs at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["WriteAhead"]


class WriteAhead:
    """Runs ``commit`` before the next poll for I/O, once however often asked."""

    def __init__(self, commit: Callable[[], None], call_soon: Callable[[Callable[[], None]], Any] | None) -> None:
        self.commit = commit
        self.call_soon = call_soon
        self.due = False

    def request(self) -> None:
        """A request is being handed out: its row (and what changed since the
        last commit) must be in the file before the reactor polls again."""
        if self.call_soon is None:
            self.commit()
        elif not self.due:
            self.due = True
            self.call_soon(self._run)

    def _run(self) -> None:
        if self.due:  # not cancelled since
            self.due = False
            self.commit()

    def cancel(self) -> None:
        """The store is closing (and commits itself): a commit still due is dropped."""
        self.due = False
