"""Continuous crawling (``REVISIT_ENABLED``): after each fetch the URL's
history moves on by :mod:`extensions.revisit.policy`; due URLs come back
ahead of new ones, flagged ``FLAG_REVISIT``, at most ``REVISIT_MAX_SHARE``
of fetches while new URLs wait. Due times are wall-clock (kept on resume)."""

from __future__ import annotations

import math
import time
from dataclasses import replace
from typing import Any

from extensions.frontier.dispatch import HostDispatch
from extensions.frontier.fingerprint import url_fingerprint
from extensions.frontier.page import PageVerdict
from extensions.revisit.estimate import crawl_freshness
from extensions.revisit.policy import RevisitPolicy
from extensions.frontier.store import FLAG_REVISIT, Entry, FrontierStore, RevisitRecord

#: how often the earliest due time is re-read from the store (other processes schedule too)
NEXT_DUE_REFRESH = 1.0
#: freshness gauges: at most every GAUGES_INTERVAL s, no more often than GAUGES_SPACING
#: times their last computation took, over at most GAUGES_SAMPLE records
GAUGES_INTERVAL = 1.0
GAUGES_SPACING = 100.0
GAUGES_SAMPLE = 10_000


class RevisitSchedule:
    """Each fetched URL's next visit, and putting due URLs back in the frontier."""

    def __init__(self, store: FrontierStore, policy: RevisitPolicy, stats: Any, *,
                 max_share: float = 0.5, batch: int = 256) -> None:
        self.store, self.policy, self.stats = store, policy, stats
        self.max_share, self.batch = max_share, batch
        self.released = 0  # URLs put back this run
        self.handed = 0  # re-visit requests handed to the engine this run
        self.new_handed = 0  # other requests handed to the engine this run
        self._next_due: float | None = None
        self._read_at = -math.inf  # wall time the next due time was last read
        self._gauges_due = -math.inf  # wall time the gauges may be computed again
        self.dispatch: HostDispatch | None = None  # the frontier's, which files due URLs

    # -- after a fetch -----------------------------------------------------------
    def page_done(self, page: PageVerdict, fingerprint: int, now: float) -> PageVerdict:
        """Move the page's history on; a 304's verdict comes back with its stored outlinks."""
        before = self.store.revisits.get([fingerprint]).get(fingerprint) or self.policy.first(fingerprint, now)
        after = self.policy.after_visit(before, now, not_modified=page.not_modified, status=page.status,
                                        content=page.content, etag=page.etag, last_modified=page.last_modified)
        self.store.revisits.put([after])
        self._count(before, after)
        if after.due < (self._next_due if self._next_due is not None else math.inf):
            self._next_due = after.due
        if page.not_modified:
            return replace(page, links=self._stored_outlinks(fingerprint))
        return page

    def redirected(self, url: str, now: float) -> None:
        """A redirect answered ``url``: due again after its interval all the same."""
        fingerprint, _ = url_fingerprint(url)
        before = self.store.revisits.get([fingerprint]).get(fingerprint) or self.policy.first(fingerprint, now)
        self.store.revisits.put([self.policy.after_visit(before, now, status=301)])

    def _count(self, before: RevisitRecord, after: RevisitRecord) -> None:
        """Count ``revisit/changed``/``unchanged`` per re-visit, ``revisit/gone`` when given up."""
        if before.visits and after.visits > before.visits:
            self.stats.inc_value("revisit/changed" if after.changes > before.changes else "revisit/unchanged")
        if after.gone and math.isinf(after.due) and (before.gone < self.policy.gone_after <= after.gone
                                                      or not before.visits):
            self.stats.inc_value("revisit/gone")

    def _stored_outlinks(self, fingerprint: int) -> list[str]:
        """The outlinks recorded at the page's last 200, by URL (those with a row)."""
        targets = self.store.links.targets_of(fingerprint) or []
        rows = self.store.urls.get_many(targets) if targets else {}
        return [rows[target].url for target in targets if target in rows]

    # -- due URLs back into the frontier -------------------------------------------
    def pump(self, now: float, queued: int) -> int:
        """Put due URLs back within the re-visits' share of fetches; how many."""
        if now >= self._gauges_due:
            self.gauges(now)
        due = self.next_due(now)
        if due is None or due > now:
            return 0
        limit = self._allowance(queued)
        if limit <= 0:
            return 0
        records = self.store.revisits.take_due(now, limit)
        self._read_at = -math.inf  # the earliest due time moved
        entries = self.store.urls.get_many([record.fingerprint for record in records]) if records else {}
        for record in records:
            entry = entries.get(record.fingerprint)
            if entry is None:  # no URL row to fetch it by (a trimmed Bloom-mode row)
                continue
            # at the top level: its cash went to its history at its fetch, so the
            # level its cash earns would be behind every new URL
            self.dispatch.revisit(entry._replace(flags=entry.flags | FLAG_REVISIT), self.dispatch.levels - 1)
            self.released += 1
        self.stats.inc_value("revisit/due", len(records))
        return len(records)

    def _allowance(self, queued: int) -> int:
        """How many URLs may come back now (a batch when nothing new waits)."""
        waiting_revisits = max(0, self.released - self.handed)
        if queued - waiting_revisits <= 0 or self.max_share >= 1.0:
            return self.batch
        ratio = self.max_share / (1.0 - self.max_share)
        return min(self.batch, int(ratio * (self.new_handed + 1)) - self.released)

    def handed_out(self, entry: Entry) -> dict[str, Any] | None:
        """A request for ``entry`` goes to the engine; a re-visit's validators, or None."""
        if not entry.flags & FLAG_REVISIT:
            self.new_handed += 1
            return None
        self.handed += 1
        record = self.store.revisits.get([entry.fingerprint]).get(entry.fingerprint)
        if record is None or not (record.etag or record.last_modified):
            return None
        return {"etag": record.etag, "last_modified": record.last_modified}

    def next_due(self, now: float) -> float | None:
        """The earliest due time (re-read at most every :data:`NEXT_DUE_REFRESH` seconds)."""
        if now - self._read_at >= NEXT_DUE_REFRESH:
            self._next_due, self._read_at = self.store.revisits.next_due(), now
        return self._next_due

    def wake_at(self, due: float | None, now: float, wall_now: float) -> float | None:
        """The earlier of ``due`` (monotonic) and the next re-visit (wall-clock, converted)."""
        wall_due = self.next_due(wall_now)
        if wall_due is None:
            return due
        revisit_due = now + max(0.0, wall_due - wall_now)
        return revisit_due if due is None else min(due, revisit_due)

    def gauges(self, now: float) -> None:
        """Stats of the schedule, freshness and age over :data:`GAUGES_SAMPLE` records."""
        started = time.perf_counter()
        counts = self.store.revisits.counts()
        self.stats.set_value("revisit/scheduled", counts.scheduled)
        self.stats.set_value("revisit/gone_urls", counts.gone)
        self.stats.set_value("revisit/due_now", self.store.revisits.count_due(now))
        sample = next(iter(self.store.revisits.scan(GAUGES_SAMPLE)), [])
        estimate = crawl_freshness(sample, now)
        if estimate.urls:
            self.stats.set_value("revisit/freshness", round(estimate.freshness, 4))
            self.stats.set_value("revisit/age_seconds", round(estimate.age_seconds, 1))
        self._gauges_due = now + max(GAUGES_INTERVAL, GAUGES_SPACING * (time.perf_counter() - started))

    def pending(self, now: float) -> bool:
        """Whether any URL is scheduled for a re-visit (the crawl stays open)."""
        return self.next_due(now) is not None

