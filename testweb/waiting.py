"""Waiting for another process, bounded by counts of progress, not by the clock.

A test that waits for a subprocess (a crawl's access log to grow, a line in
its log, a lease in Redis, a server to answer) polls a condition. A deadline
in seconds fails on a slow machine a test that a fast one passes. Instead,
:func:`wait_until` gives up only when

* ``patience`` polls in a row saw no progress (``progress()`` returned the
  same value each time): the awaited process hangs; or
* ``limit`` polls in all went by: the last resort against something that
  keeps moving forever without reaching the condition (a crawl has its own
  bounds first: its frontier empties, CLOSESPIDER settings, the subprocess
  time-out of :mod:`testweb.crawlrun`).

Either way it raises :class:`NoProgress` naming what was awaited and the last
progress seen, so a hang reads as a hang. Without a ``progress`` function the
wait is a plain count of polls (a starting server's readiness).

A process ending is part of the caller's condition (``lambda: done() or
ended(procs)``); the caller then says whether that is a failure.

:class:`CrawlActivity` is the usual progress of crawl subprocesses: the lines
they wrote to their run directories (log, items, stdout), leaving out the
periodic ``Progress:`` line an idle crawl writes too.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Hashable, Iterable
from pathlib import Path

#: seconds between two polls; it spaces the polls, no outcome depends on it
INTERVAL = 0.05
#: polls in a row without progress before giving up (a minute at INTERVAL)
PATIENCE = 1200
#: polls in all before giving up
LIMIT = 100_000
#: a log line every live crawl writes now and then, busy or not
PERIODIC = b"] INFO: Progress: "


class NoProgress(AssertionError):
    """The awaited condition did not come and the awaited process stopped moving."""


def wait_until(condition: Callable[[], object], what: str,
               progress: Callable[[], Hashable] | None = None, *, patience: int = PATIENCE,
               interval: float = INTERVAL, limit: int = LIMIT) -> int:
    """Poll ``condition()`` until it is true; return the polls it took.

    Raises :class:`NoProgress` (naming ``what``) once ``progress()`` returned
    one value ``patience`` polls in a row, or after ``limit`` polls."""
    last: Hashable = None
    still = 0
    for polls in range(1, limit + 1):
        if condition():
            return polls
        seen = progress() if progress is not None else None
        still = still + 1 if polls > 1 and seen == last else 0
        last = seen
        if still >= patience:
            raise NoProgress(f"no {what}: nothing moved in {patience} polls (progress stuck at {seen!r})")
        time.sleep(interval)  # spacing the polls of another process
    raise NoProgress(f"no {what} after {limit} polls, though it kept moving (progress {last!r})")


def ended(procs: Iterable[subprocess.Popen[bytes]]) -> bool:
    """True once any of ``procs`` has exited."""
    return any(proc.poll() is not None for proc in procs)


def all_ended(procs: Iterable[subprocess.Popen[bytes]]) -> bool:
    """True once every one of ``procs`` has exited."""
    return all(proc.poll() is not None for proc in procs)


class CrawlActivity:
    """Progress of crawl subprocesses: a count of what they wrote.

    Called, it reads what was appended since the last call to the files in
    ``directories`` (a crawl's ``crawl.log``, ``items.jsonl``,
    ``stdout.txt``, ...) and returns the number of complete lines written so
    far, lines holding :data:`PERIODIC` left out: an idle crawl writes that
    line too, so it is not progress. ``also``, when given, adds what else
    moves (e.g. the test web's access log length) to the returned value.
    """

    def __init__(self, directories: Iterable[Path], also: Callable[[], Hashable] | None = None) -> None:
        self.directories = [Path(directory) for directory in directories]
        self.also = also
        self.offsets: dict[Path, int] = {}
        self.lines = 0

    def __call__(self) -> Hashable:
        for directory in self.directories:
            for path in sorted(directory.glob("*")) if directory.is_dir() else ():
                if path.is_file():
                    self._read(path)
        return self.lines if self.also is None else (self.lines, self.also())

    def _read(self, path: Path) -> None:
        offset = self.offsets.get(path, 0)
        try:
            with open(path, "rb") as handle:
                handle.seek(offset)
                chunk = handle.read()
        except OSError:  # replaced or removed between listing and reading
            return
        complete = chunk.rfind(b"\n") + 1  # a partial last line is read again next time
        lines = chunk[:complete].splitlines()
        self.lines += sum(1 for line in lines if PERIODIC not in line)
        self.offsets[path] = offset + complete


def wait_for_exit(procs: list[subprocess.Popen[bytes]], directories: Iterable[Path], what: str = "end of the crawls",
                  also: Callable[[], Hashable] | None = None, *, patience: int = PATIENCE // 2,
                  interval: float = INTERVAL * 2, limit: int = LIMIT // 2) -> None:
    """Until every one of ``procs`` (crawls writing into ``directories``) has
    exited; :class:`NoProgress` if none of them wrote a line (nor ``also``
    moved) for ``patience`` polls. A process that hangs is not killed here:
    the caller's clean-up does that."""
    wait_until(lambda: all_ended(procs), what, CrawlActivity(directories, also),
               patience=patience, interval=interval, limit=limit)
