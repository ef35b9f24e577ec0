"""The shared dispatch's periodic upkeep, every third of ``FRONTIER_LEASE_TTL``:
lease renewals, in-flight repairs, hand-backs of late and excess hosts,
crawl-wide holds and the idle close, and sharing stats."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING

from extensions.frontier.gauges import CRAWL_WIDE_STATS
from extensions.frontier.holds import host_of_origin
from extensions.frontier.store import Entry, FrontierStoreError

if TYPE_CHECKING:
    from extensions.backends.redis.dispatch import SharedDispatch

logger = logging.getLogger(__name__)


class LeaseUpkeep:
    """Renewals, hand-backs and crawl-wide sharing of one
    :class:`~extensions.backends.redis.dispatch.SharedDispatch`."""

    def __init__(self, dispatch: SharedDispatch) -> None:
        self.dispatch = dispatch
        self._failures_seen = 0  # the store's failed calls at the last in-flight repair
        self._pushed: dict[str, float] = {}
        self.reactor_round_trips = 0  # stat redis/upkeep_reactor_round_trips

    def renew(self) -> None:
        """Extend every held lease (with the host's politeness state), give
        back hosts this process is too busy to serve, beat the heart."""
        trips = self._reactor_trips()
        try:
            self._renew()
        finally:
            self.reactor_round_trips += self._reactor_trips() - trips

    def _reactor_trips(self) -> int:
        return int(self.dispatch.timing()["redis/reactor_round_trips"])

    def _renew(self) -> None:
        dispatch = self.dispatch
        parts = dispatch.parts
        try:
            waits = {host: dispatch.wait(host) for host in dispatch.held}
            for host, expires in dispatch.leases.renew(waits).items():
                if expires == -1:
                    self.lost(host)
                elif host in dispatch.held:
                    dispatch.held[host].heap_score = expires
            dispatch.alive = max(1, dispatch.leases.heartbeat(dispatch.lease_ttl))
            self.share_holds()
            # not while a take is on its way: its URL is in flight in Redis, not yet here
            if dispatch.failures() != self._failures_seen and not dispatch.pending():
                self._failures_seen = dispatch.failures()
                self.repair_inflight()
            dispatch.heap_hosts, dispatch.heap_checked = dispatch.leases.poll(0).hosts, parts.clock()
            self.give_away_late()
            self.rebalance()
        except FrontierStoreError as err:
            logger.error("Renewing the frontier's host leases failed: %s", err)
            if parts.on_store_error is not None:
                parts.on_store_error(err)

    def lost(self, host: str) -> None:
        self.dispatch.drop(host)
        self.dispatch.parts.noisy.note("leases_lost", "Lease on %s taken over by another process (this one "
                                       "stalled longer than FRONTIER_LEASE_TTL)", host)

    def repair_inflight(self) -> None:
        """After a failed Redis call was retried (a take may have run twice):
        put back every URL in a held host's in-flight set that this process
        is not fetching."""
        dispatch = self.dispatch
        mine: dict[str, set[int]] = {}
        for record in dispatch.parts.inflight.values():
            mine.setdefault(record.host, set()).add(record.entry.fingerprint)
        orphans = {host: [fp for fp in found if fp not in mine.get(host, ())]
                   for host, found in dispatch.leases.inflight_of(list(dispatch.held)).items()}
        lost = [fp for found in orphans.values() for fp in found]
        if not lost:
            return
        levels = {fp: entry.level for fp, entry in dispatch.store.urls.get_many(lost).items()}
        for host, found in orphans.items():
            for fp in found:
                dispatch.leases.put_back(host, fp, levels.get(fp, 0))
            if found and host in dispatch.held:
                dispatch.held[host].queued += len(found)
                dispatch.held[host].parked_until = 0.0  # they may be any origin's
                dispatch.reschedule(host)
        dispatch.parts.stats.inc_value("frontier/inflight_repaired", len(lost))
        logger.warning("%d URL(s) left in flight by a retried Redis call went back to their queues", len(lost))

    def fetching(self) -> set[str]:
        """Hosts with a request of ours in flight (held counts miss one taken
        under an earlier lease)."""
        return {record.host for record in self.dispatch.parts.inflight.values()}

    def give_away_late(self) -> None:
        dispatch = self.dispatch
        now = dispatch.parts.clock()
        fetching = self.fetching()
        for host, held in list(dispatch.held.items()):
            due = max(dispatch.parts.politeness.ready_at(host), held.since, held.parked_until)
            if not (held.inflight or host in fetching or not held.queued or now - due <= dispatch.max_lateness):
                self._give_back(host, "frontier/leases_given_away")

    def rebalance(self) -> None:
        """Holding more than one host above its share while other processes
        run, give the excess back (none with a fetch in flight)."""
        dispatch = self.dispatch
        excess = len(dispatch.held) - dispatch.share() - 1
        if dispatch.alive < 2 or excess <= 0:
            return
        fetching = self.fetching()
        idle = [host for host, held in dispatch.held.items() if not held.inflight and host not in fetching]
        for host in idle[:excess]:
            self._give_back(host, "frontier/leases_rebalanced")

    def _give_back(self, host: str, stat: str) -> None:
        dispatch = self.dispatch
        dispatch.leases.release(host, dispatch.wait(host), False, dispatch.held[host].heap_score)
        dispatch.drop(host)
        dispatch.parts.stats.inc_value(stat)

    # -- stats -------------------------------------------------------------------
    def share_stats(self) -> None:
        stats, leases = self.dispatch.parts.stats, self.dispatch.leases
        for name, value in self.dispatch.timing().items():
            stats.set_value(name, value)
        stats.set_value("redis/upkeep_reactor_round_trips", self.reactor_round_trips)
        values = getattr(stats, "get_stats", lambda: getattr(stats, "values", {}))()
        deltas = []
        for name, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or name.startswith("distributed/"):
                continue
            if name in CRAWL_WIDE_STATS:  # the same value in every process: the latest, not a sum
                leases.set_stat(name, value)
                continue
            delta = value - self._pushed.get(name, 0)
            if delta:
                deltas.append((name, delta))
                self._pushed[name] = value
        leases.add_stats(deltas)

    def leave(self) -> None:
        """This process's stats into the crawl's, then leave it; the keys stay
        while other processes run."""
        dispatch = self.dispatch
        self.share_stats()
        totals = dispatch.leases.stats_totals()
        for name in ("frontier/done", "frontier/failed", "frontier/enqueued", "frontier/dequeued",
                     "response_received_count"):
            if name in totals:
                dispatch.parts.stats.set_value(f"distributed/total/{name}", totals[name])
        others = dispatch.leases.leave()
        if others and not dispatch.store.persist:
            logger.info("%d other crawler process(es) still running: the crawl's keys stay", others)
            dispatch.store.persist = True

    # -- holds and deferrals, crawl-wide -------------------------------------------
    def busy_here(self) -> bool:
        """Work here that no hold keeps back (unfiled, in flight, or queued for
        a held host not parked), or a pushback's pause waited out."""
        dispatch = self.dispatch
        parts = dispatch.parts
        if parts.unfiled or parts.holds.waiting_out() or any(
                held.queued and not held.parked for held in dispatch.held.values()):
            return True
        return any(not record.held and parts.holds.state_of(record.entry.url) is None
                   for record in parts.inflight.values())

    def share_holds(self) -> None:
        """Mark the crawl active if this process is busy; else, once no process
        was for the idle bound, defer every origin held anywhere (the idle
        close); then adopt the crawl's holds and deferrals."""
        dispatch = self.dispatch
        parts = dispatch.parts
        found = {}
        if self.busy_here():
            dispatch.shared_holds.mark_active()
        else:
            idle = max(parts.idle_close, 2 * dispatch.lease_ttl)  # a killed process's hosts are taken over first
            found = dispatch.shared_holds.defer_idle(idle)
        for origin, (_, reason) in found.items():
            why = f"held when nothing else was left: {reason}"
            parts.holds.defer(origin, why)
            parts.admission.defer([], origin, why)
        self.adopt_holds(unpark=bool(found))

    def adopt_holds(self, unpark: bool = False) -> None:
        """Hold and defer here what any process held or deferred; hosts parked
        by an origin deferred now are served again at once."""
        dispatch = self.dispatch
        parts = dispatch.parts
        now = parts.clock()
        for origin, (left, reason) in dispatch.shared_holds.held().items():
            if origin not in parts.holds.deferred:
                parts.holds.hold(origin, now + left, reason)
        for origin, (reason, _) in dispatch.store.hosts.deferrals().items():
            if origin not in parts.holds.deferred:
                parts.holds.defer(origin, reason)
                parts.admission.defer([], origin, reason)
                unpark = True
        if unpark:
            self.serve_parked(now)

    def retry_deferred(self) -> None:
        """The first process of a run puts the URLs the run before deferred
        back in their hosts' queues at the top level."""
        dispatch = self.dispatch
        if not dispatch.shared_holds.take_deferrals():
            return
        fingerprints = dispatch.store.urls.take_deferred()
        top = dispatch.levels - 1
        by_host: dict[str, list[Entry]] = {}
        for entry in dispatch.store.urls.get_many(fingerprints).values():
            by_host.setdefault(entry.host, []).append(entry._replace(level=top))
        for host, entries in by_host.items():
            dispatch.leases.enqueue(host, entries, force=True)
        dispatch.retried.update(by_host)
        dispatch.parts.stats.set_value("frontier/deferred_retried", len(fingerprints))
        logger.info("Retrying %d URLs deferred by the previous run first", len(fingerprints))

    def end_holds(self, now: float) -> None:
        """End the holds due; the parked URLs of the hosts held here go back
        to their places in the queues."""
        holds = self.dispatch.parts.holds
        due = holds.next_release()
        if due is None or due > now:
            return
        before = set(holds.held)
        holds.release_due(now)
        self.unpark(before - set(holds.held), now)

    def unpark(self, origins: Iterable[str], now: float) -> None:
        for host in {host_of_origin(origin) for origin in origins}:
            held = self.dispatch.held.get(host)
            if held is None:
                continue  # its owner, or its next one, takes the parked URLs in turn
            count, head = self.dispatch.leases.unpark(host)
            if count:
                self.dispatch.parts.stats.inc_value("frontier/unparked", count)
                held.head = head
            held.parked_until = 0.0
            self.dispatch.reschedule(host)
        self.dispatch.parts.wakeup.arm(self.dispatch.next_due(now), now)

    def serve_parked(self, now: float, hosts: set[str] | None = None) -> None:
        """Parked hosts (of ``hosts``, default all) are due again: their held
        origins were deferred."""
        parked = [host for host, held in self.dispatch.held.items()
                  if held.parked and (hosts is None or host in hosts)]
        for host in parked:
            self.dispatch.held[host].parked_until = 0.0
            self.dispatch.reschedule(host)
        if parked:
            self.dispatch.parts.wakeup.arm(self.dispatch.next_due(now), now)

