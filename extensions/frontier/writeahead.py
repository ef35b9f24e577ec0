"""The write-ahead commit (``FRONTIER_WRITE_AHEAD``): group commit per reactor turn.

A request the frontier hands out must be in flight in the URL database's
file before its fetch can reach the server, so that after ``kill -9`` only
requests in flight are fetched again (:mod:`.resume`). A commit per handed-out
request did that, at the cost of one SQLite transaction per page.

The engine takes several requests in one reactor turn, and the pipelines
finish several pages in one; none of those requests is written to a socket
before the reactor polls for I/O again (Twisted buffers a transport's writes
until the socket is writable). So one commit at the end of the turn, before
the next poll, is as safe as one per request: :meth:`WriteAhead.request`
schedules it with ``call_soon`` (asyncio's ``loop.call_soon``: it runs before
the next turn's I/O callbacks; Twisted's ``callLater(0)``: before its next
``doIteration``) and the turn's later requests join it. The commit keeps
the rest of the contract: a page's "done" and the outlinks it enqueued are
in the same transaction, AOPIC's cash with its Lambda (``commit``'s own
``before`` hook).

Without ``call_soon`` (a frontier driven step by step in tests and tools,
no reactor) the commit runs at once, as before.
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
