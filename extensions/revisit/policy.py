"""When a fetched URL is due again (pure: the caller passes time and outcome and stores the
record returned): the ``"estimate"`` (freshness-optimal) or ``"adaptive"`` interval,
clamped to ``[minimum, maximum]``; 404/410 given up after ``gone_after`` answers."""

from __future__ import annotations

import math
from dataclasses import dataclass

from extensions.revisit.estimate import SHORTEST_INTERVAL_MU, change_rate, optimal_interval
from extensions.frontier.store import RevisitRecord

SCHEDULES = ("estimate", "adaptive")
GONE_STATUSES = frozenset({404, 410})


@dataclass(frozen=True)
class RevisitPolicy:
    """Next interval and due time of a URL after each visit."""

    initial: float
    minimum: float
    maximum: float
    gone_after: int = 3
    schedule: str = "estimate"
    increase: float = 0.4
    decrease: float = 0.2

    @property
    def mu(self) -> float:
        """The budget's marginal gain: the optimal interval is never below
        ``SHORTEST_INTERVAL_MU * mu``, so this mu makes that shortest one ``initial``."""
        return self.initial / SHORTEST_INTERVAL_MU

    # -- records -------------------------------------------------------------

    def first(self, fingerprint: int, now: float) -> RevisitRecord:
        """The record of a URL not fetched yet: due now, the initial interval."""
        return RevisitRecord(fingerprint=fingerprint, due=now, interval=self.initial)

    def after_visit(
        self,
        record: RevisitRecord,
        now: float,
        not_modified: bool = False,
        status: int = 200,
        content: int | None = None,
        etag: str | None = None,
        last_modified: str | None = None,
    ) -> RevisitRecord:
        """The record after a fetch of its URL answered at ``now``."""
        not_modified = not_modified or status == 304
        if (not_modified or 200 <= status < 300) and record.visits == 0:
            return record._replace(
                due=now + self.initial, interval=self.initial, visits=1, first_visit=now,
                last_visit=now, last_change=now, content=content, etag=etag,
                last_modified=last_modified, gone=0)
        if not_modified:
            return self._visited(record._replace(gone=0), now, False, record.content,
                                 etag or record.etag, last_modified or record.last_modified)
        if 200 <= status < 300:
            revived = record.gone > 0
            changed = revived or self.changed(record, content, etag, last_modified)
            return self._visited(record._replace(gone=0), now, changed, content, etag, last_modified)
        if status in GONE_STATUSES:
            return self._missing(record, now)
        return record._replace(due=now + record.interval)

    def changed(self, record: RevisitRecord, content: int | None, etag: str | None,
                last_modified: str | None) -> bool:
        """Whether a 200 found the page changed (with no evidence, changed)."""
        if content is not None and record.content is not None:
            return content != record.content
        if etag and record.etag:
            return etag != record.etag
        if last_modified and record.last_modified:
            return last_modified != record.last_modified
        return True

    def next_interval(self, record: RevisitRecord, changed: bool) -> float:
        """The interval after a visit, from the record already updated by it."""
        if self.schedule == "adaptive":
            factor = (1 - self.decrease) if changed else (1 + self.increase)
            return self._clamp(record.interval * factor)
        rate = change_rate(record.visits, record.changes, record.last_visit - record.first_visit)
        if rate is None:
            return self.initial
        return self._clamp(optimal_interval(rate, self.mu))

    # -- helpers -------------------------------------------------------------

    def _clamp(self, interval: float) -> float:
        return min(max(interval, self.minimum), self.maximum)

    def _visited(
        self,
        record: RevisitRecord,
        now: float,
        changed: bool,
        content: int | None,
        etag: str | None,
        last_modified: str | None,
    ) -> RevisitRecord:
        updated = record._replace(
            visits=record.visits + 1, changes=record.changes + changed, last_visit=now,
            last_change=now if changed else record.last_change,
            content=content, etag=etag, last_modified=last_modified)
        interval = self.next_interval(updated, changed)
        return updated._replace(interval=interval, due=now + interval)

    def _missing(self, record: RevisitRecord, now: float) -> RevisitRecord:
        """A 404/410: one more confirmation that the page is gone."""
        gone = record.gone + 1
        updated = record._replace(visits=record.visits + 1, last_visit=now, gone=gone,
                                  first_visit=record.first_visit if record.visits else now)
        had_copy = record.visits > record.gone  # some visit answered 2xx/304
        if not had_copy or gone >= self.gone_after:
            return updated._replace(due=math.inf)
        return updated._replace(due=now + min(record.interval, self.initial))
