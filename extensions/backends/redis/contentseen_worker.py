"""The content-seen test in Redis without the reactor waiting for Redis: each page's
:class:`~extensions.contentseen.verdict.Verdict` comes as a Deferred from a worker thread,
near-duplicate decisions taken one page at a time in the order asked; a failed round
trip fails its page's Deferred with :class:`~extensions.contentseen.exact.ContentStoreError`."""

from __future__ import annotations

from collections import Counter, deque
from typing import Any

from twisted.internet.defer import Deferred

from extensions.backends.redis.contentseen import RedisContentSeen, Steps
from extensions.backends.redis.nearindex import RedisNearDuplicateIndex
from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.resemblance import NearFeatures
from extensions.contentseen.verdict import Verdict


class _Page:
    __slots__ = ("done", "duplicate_of", "fingerprint", "near", "since", "steps", "url")

    def __init__(self, url: str, fingerprint: int, near: NearFeatures | None) -> None:
        self.url, self.fingerprint, self.near = url, fingerprint, near
        self.since = -1  # the index's ``stored`` when its candidates were read
        self.steps: Steps[Any] | None = None
        self.duplicate_of: str | None = None
        self.done: Deferred[Verdict] = Deferred()


class AsyncRedisContentSeen:
    """The exact set and the index (or None) answered through ``worker``;
    the sets stay open (their owner closes them)."""

    def __init__(self, exact: RedisContentSeen, near: RedisNearDuplicateIndex | None, worker: Any) -> None:
        self.exact, self.near, self.worker = exact, near, worker
        if near is not None:
            near.write = worker.write  # a store goes before the later pages' reads
        self._deciding: deque[_Page] = deque()  # answered pages waiting for their decision, in order
        self._busy = False  # the first one's decision waits for a round trip
        self._reading: Counter[int] = Counter()  # ``since`` of the pages not decided yet

    def verdict(self, fingerprint: int, url: str, near: NearFeatures | None) -> Deferred[Verdict]:
        """The page's verdict, later (with ``near``: its group and near-duplicate)."""
        page = _Page(url, fingerprint, near if self.near is not None else None)
        commands = self.exact.store.due_commands()
        skip = len(commands)
        commands += self.exact.add_commands(fingerprint, url)
        if page.near is not None:
            page.since = self.near.stored  # type: ignore[union-attr]
            self._reading[page.since] += 1
            # the read adds the simhash too: an exact copy's is its original's, there already
            commands += self.near.candidate_reads(page.near.simhash, add=True)  # type: ignore[union-attr]
        self.exact.counters["lookups"] += 1
        self.exact.counters["round_trips"] += 1
        self.worker.submit(commands, lambda answers: self._answered(page, answers[skip:]),
                           lambda err: self._failed(page, err))
        return page.done

    def timing(self) -> dict[str, float]:
        """The worker's round trips and waits, and its jobs (``redis/*``)."""
        return {**self.worker.timing(), "redis/jobs": self.worker.jobs}

    def close(self, max_rounds: int = 100) -> None:
        """Wait (on this thread) for every queued page, then stop the worker."""
        for _ in range(max_rounds):  # a callback may send more (a decision's next round trip)
            if self.worker.idle() and not self._deciding:
                break
            self.worker.drain()
        self.worker.stop()
        if self.near is not None:
            self.near.write = self.near.store.write

    # -- answers, on the reactor thread -------------------------------------------------
    def _answered(self, page: _Page, answers: list[Any]) -> None:
        try:
            first = self.exact.first_url(answers[:1], page.url)
            values = self.near.candidate_values(answers[1:]) if page.near is not None else []  # type: ignore[union-attr]
        except Exception as err:  # noqa: BLE001 - a bad answer fails this page only
            self._failed(page, err)
            return
        page.duplicate_of = None if first == page.url else first
        if page.near is None:
            self._finish(page, Verdict(page.duplicate_of, None, None))
            return
        index = self.near
        assert index is not None
        prefetched = (values, page.since)
        if page.duplicate_of is not None:  # an exact copy joins its original's group
            page.steps = index.match_steps(page.near.simhash, page.near.sketch, prefetched, named=False)
        else:
            page.steps = index.add_or_match_steps(page.near.simhash, page.url, page.near.sketch, prefetched,
                                                  page.fingerprint)
        self._deciding.append(page)
        if not self._busy:
            self._decide(None)

    def _decide(self, answers: list[Any] | None) -> None:
        """Run the waiting decisions in order until one needs a round trip."""
        while self._deciding and not self._busy:
            page = self._deciding[0]
            try:
                commands = page.steps.send(answers)  # type: ignore[union-attr]
            except StopIteration as done:
                self._deciding.popleft()
                self._finish(page, self._decided(page, done.value))
            except Exception as err:  # noqa: BLE001 - one page's failure must not hold the others
                self._deciding.popleft()
                self._failed(page, err)
            else:
                self._busy = True
                self.near.counters["round_trips"] += 1  # type: ignore[union-attr]
                self.worker.submit(commands, self._resumed, self._resume_failed)
            answers = None

    def _resumed(self, answers: list[Any]) -> None:
        self._busy = False
        self._decide(answers)

    def _resume_failed(self, err: Exception) -> None:
        self._busy = False
        page = self._deciding.popleft()
        page.steps.close()  # type: ignore[union-attr]
        self._failed(page, err)
        self._decide(None)

    def _decided(self, page: _Page, result: Any) -> Verdict:
        if page.duplicate_of is not None:
            return Verdict(page.duplicate_of, None if result is None else result.group_id, None)
        group, near_of = result
        return Verdict(None, group, near_of)

    def _finish(self, page: _Page, verdict: Verdict) -> None:
        self._read(page)
        page.done.callback(verdict)

    def _failed(self, page: _Page, err: Exception) -> None:
        self._read(page)
        if not isinstance(err, ContentStoreError):
            err = ContentStoreError(f"{err} (content-seen keys {self.exact.store.keys.base}:*)")
        page.done.errback(err)

    def _read(self, page: _Page) -> None:
        """The page's candidates are used: let the index forget what every waiting read sees."""
        if page.since < 0 or self.near is None:
            return
        self._reading[page.since] -= 1
        if not self._reading[page.since]:
            del self._reading[page.since]
        self.near.forget_stored(min(self._reading, default=self.near.stored))
