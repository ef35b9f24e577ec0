"""Redis round trips off the reactor thread: one worker thread, its own
connection, commands in FIFO order, answers back on the reactor thread.
:class:`DirectIO` is the same channel without a thread."""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from extensions.backends.redis.connection import RedisConnection, RedisLayerError
from extensions.frontier.store import FrontierStoreError

logger = logging.getLogger(__name__)

Command = tuple[Any, ...]
#: what follows from a job's answers, sent first in the worker's next round trip:
#: ``(commands, follow, then?, failed?)`` or None
Follow = Callable[[list[Any]], "tuple[Any, ...] | None"]
MAX_JOBS = 512  # jobs per pipeline at most


class DirectIO:
    """The channel on the caller's thread: ``store``'s own call and write."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def call(self, *commands: Command) -> list[Any]:
        return self.store.call(*commands)

    def write(self, *command: Any) -> None:
        self.store.write(*command)

    def submit(self, commands: Sequence[Command], then: Callable[[list[Any]], None] | None,
               failed: Callable[[Exception], None] | None = None, follow: Follow | None = None) -> None:
        """``then`` gets the answers at once; a failure goes to ``failed``, then raises."""
        try:
            answers = self.store.call(*commands)
        except Exception as err:
            if failed is not None:
                failed(err)
            raise
        step, found, later = follow, answers, []
        while step is not None and (chained := step(found)) is not None:
            found, step = self.store.call(*chained[0]), chained[1]
            if len(chained) > 2 and chained[2] is not None:
                later.append((chained[2], found))
        if then is not None:
            then(answers)
        for chained_then, chained_answers in later:  # in the order the worker would deliver them
            chained_then(chained_answers)


class _Job:
    __slots__ = ("commands", "then", "failed", "follow", "done", "answers", "error")

    def __init__(self, commands: Sequence[Command], then: Callable[[list[Any]], None] | None = None,
                 failed: Callable[[Exception], None] | None = None, waits: bool = False,
                 follow: Follow | None = None) -> None:
        self.commands, self.then, self.failed, self.follow = commands, then, failed, follow
        self.done = threading.Event() if waits else None
        self.answers: list[Any] = []
        self.error: Exception | None = None


class RedisWorker:
    """The channel through a worker thread; ``deliver`` runs a function on the reactor thread."""

    def __init__(self, connection: RedisConnection, deliver: Callable[[Callable[[], None]], Any],
                 on_error: Callable[[Exception], None]) -> None:
        self.connection, self.deliver, self.on_error = connection, deliver, on_error
        self._jobs: deque[_Job] = deque()
        self._answered: deque[tuple[_Job, Any]] = deque()  # waiting for the reactor thread
        self._wake = threading.Condition()
        self._delivery_scheduled = False
        self._running = False
        self._thread: threading.Thread | None = None
        self.reactor_seconds = 0.0  # the reactor thread waiting in call()
        self.reactor_calls = 0
        self.jobs = 0
        self._outstanding = 0  # jobs queued and not finished (answered, their callback run)

    # -- the channel -----------------------------------------------------------
    def write(self, *command: Any) -> None:
        self._queue(_Job((command,)))

    def submit(self, commands: Sequence[Command], then: Callable[[list[Any]], None] | None,
               failed: Callable[[Exception], None] | None = None, follow: Follow | None = None) -> None:
        """``follow`` runs on the worker thread; what it returns is sent next."""
        self._queue(_Job(commands, then, failed, follow=follow))

    def call(self, *commands: Command) -> list[Any]:
        """The answers to ``commands`` after everything queued before them."""
        job = _Job(commands, waits=True)
        started = time.perf_counter()
        self._queue(job)
        job.done.wait()  # type: ignore[union-attr]
        self.reactor_seconds += time.perf_counter() - started
        self.reactor_calls += 1
        self.run_callbacks()
        if job.error is not None:
            raise job.error
        return job.answers

    def drain(self) -> None:
        if self._running:
            self.call()

    def idle(self) -> bool:
        return self._outstanding == 0

    # -- lifecycle ---------------------------------------------------------------
    def start(self) -> None:
        self._running = True
        self._thread = threading.Thread(target=self._run, name="redis-worker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Send what is queued, run its callbacks, end the thread."""
        if not self._running:
            return
        self.drain()
        with self._wake:
            self._running = False
            self._wake.notify()
        if self._thread is not None:
            self._thread.join(timeout=30)
        self.connection.detach()

    def timing(self) -> dict[str, float]:
        """``redis/*`` stats of the worker."""
        timing = self.connection.timing()
        timing["redis/reactor_round_trips"] = self.reactor_calls
        timing["redis/reactor_wait_seconds"] = round(self.reactor_seconds, 6)
        timing["redis/worker_jobs"] = self.jobs
        return timing

    # -- the two threads ----------------------------------------------------------
    def _queue(self, job: _Job) -> None:
        if not self._running:
            raise RedisLayerError(f"the Redis worker for {self.connection.location} is stopped")
        with self._wake:
            self._outstanding += 1
            self._jobs.append(job)
            self._wake.notify()

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._jobs and self._running:
                    self._wake.wait()
                if not self._jobs and not self._running:
                    return
                batch = [self._jobs.popleft() for _ in range(min(MAX_JOBS, len(self._jobs)))]
            try:
                self._send(batch)
            except Exception:  # noqa: BLE001 - the thread must live on, or every later job waits forever
                logger.exception("The Redis worker thread failed to hand answers back")
                for job in batch:
                    if job.done is not None:
                        job.done.set()

    def _send(self, batch: list[_Job]) -> None:
        commands = [command for job in batch for command in job.commands]
        error: Exception | None = None
        answers: list[Any] = []
        try:
            answers = self.connection.call(*commands) if commands else []
        except Exception as err:  # noqa: BLE001 - reported on the reactor thread
            error = err if isinstance(err, RedisLayerError) else RedisLayerError(str(err))
        self.jobs += len(batch)
        at = 0
        for job in batch:
            job.answers, job.error = answers[at:at + len(job.commands)], error
            at += len(job.commands)
        if error is None:
            self._chain(batch)
        self._finish(batch, error)

    def _chain(self, batch: list[_Job]) -> None:
        chained = []
        for job in batch:
            try:
                follows = job.follow(job.answers) if job.follow is not None else None
            except Exception:  # noqa: BLE001 - a bad answer must not end the thread
                logger.exception("Following a Redis answer failed")
                follows = None
            if follows is not None:
                commands, step, *callbacks = follows
                chained.append(_Job(commands, *callbacks, follow=step))
        if chained:
            with self._wake:  # counted before the jobs they follow are done: idle() stays false
                self._outstanding += len(chained)
                self._jobs.extendleft(reversed(chained))

    def _finish(self, batch: list[_Job], error: Exception | None) -> None:
        for job in batch:
            if job.then is not None or (error is not None and job.done is None):
                self._answered.append((job, error))
            else:
                with self._wake:
                    self._outstanding -= 1
        for job in batch:
            if job.done is not None:
                job.done.set()
        if self._answered and not self._delivery_scheduled:
            self._delivery_scheduled = True
            self.deliver(self.run_callbacks)

    def run_callbacks(self) -> None:
        self._delivery_scheduled = False
        reported: Exception | None = None
        while self._answered:
            job, error = self._answered.popleft()
            try:
                if error is None:
                    job.then(job.answers)  # type: ignore[misc]
                    continue
                if job.failed is not None:
                    job.failed(error)
                if error is not reported:  # once per failed pipeline
                    reported = error
                    self.on_error(error)
            except Exception:  # noqa: BLE001 - one callback must not stop the others
                logger.exception("A Redis answer's callback failed")
            finally:  # after the callback queued what follows from it (a listing after an enqueue)
                with self._wake:
                    self._outstanding -= 1


def running_reactor() -> Any:
    """The Twisted reactor if one is installed and running (a crawl), else None."""
    reactor = sys.modules.get("twisted.internet.reactor")
    return reactor if reactor is not None and getattr(reactor, "running", False) else None


def start_worker(store: Any, deliver: Callable[[Callable[[], None]], Any], on_error: Callable[[Exception], None],
                 purpose: str = "the shared frontier's worker thread",
                 error: type[Exception] = FrontierStoreError) -> RedisWorker:
    """A running worker with its own connection to ``store``'s Redis."""
    connection = RedisConnection(store.url, retries=store.retries, timeout=store.timeout)
    connection.attach(purpose, error)
    worker = RedisWorker(connection, deliver, on_error)
    worker.start()
    return worker
