"""The write-ahead commit (``FRONTIER_WRITE_AHEAD``): group commit per reactor turn.

A handed-out request must be in flight in the URL database's file before
its fetch can reach the server. No request is written to a socket before
the reactor polls for I/O again, so one commit per turn, scheduled with
``call_soon``, is as safe as one per request; without ``call_soon`` (tests,
tools) the commit runs at once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class WriteAhead:
    """Runs ``commit`` before the next poll for I/O, once however often asked."""

    def __init__(self, commit: Callable[[], None], call_soon: Callable[[Callable[[], None]], Any] | None) -> None:
        self.commit = commit
        self.call_soon = call_soon
        self.due = False

    def request(self) -> None:
        """A request is being handed out: commit before the reactor polls again."""
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
