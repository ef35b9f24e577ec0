"""The Mercator frontier shared by several crawler processes on one Redis.

``-s FRONTIER_BACKEND=redis`` (with ``FRONTIER_DISTRIBUTED``, on by
default) makes the :class:`~extensions.frontier.scheduler.Frontier` compose
the shared host dispatch (:mod:`.shareddispatch`, its periodic upkeep in
:mod:`.leaseupkeep`) instead of the local one: any number of
``scrapy crawl web`` processes started on the same ``REDIS_URL`` and
``FRONTIER_REDIS_PREFIX`` crawl one frontier. What each process does:

* **enqueue** -- the URL-seen test and the host's shared back queue in one
  script (:data:`~extensions.backends.redis.leases.ENQUEUE`); a host that was idle
  goes on the shared host heap.
* **readiness** -- when none of the hosts it holds may be fetched now and it
  holds fewer than ``FRONTIER_BACK_QUEUES`` hosts, the process polls the host
  heap (at most every ``FRONTIER_LEASE_POLL_INTERVAL`` seconds while polls
  find nothing, less often the more hosts it holds) and takes due hosts
  with a lease. A process takes hosts only when it has nothing to do, so
  work goes to whoever is free, not by a static split; a process too busy
  to serve a held host within ``FRONTIER_LEASE_MAX_LATENESS`` seconds of its
  due time gives it back, and one holding more than its share (hosts with
  work / live processes, plus one) gives back the excess.
* **politeness** -- only the lease holder fetches a host; inside the
  process the usual :class:`~extensions.frontier.politeness.Politeness`
  applies (one fetch in flight per host, end-to-start gap); the host's next
  allowed fetch time is written with every renewal and release and read
  with every acquisition, so the gap holds across processes.
* **dispatch** -- the host's best queued URL is moved to its in-flight set
  (one round trip); the fetch end marks it done (buffered); a host whose
  queue is empty is released.
* **leases** -- renewed every third of ``FRONTIER_LEASE_TTL``; a killed
  process's leases expire and whoever acquires its hosts next puts its
  in-flight URLs back in their queues.
* **the end** -- the crawl is over when the host heap is empty (every host
  with work is on it, held or not); a process that sees it empty first lists
  any orphaned host (:meth:`~extensions.backends.redis.leases.HostLeases.sweep_orphans`).
  Until then an idle process keeps polling, so no work is left behind.
* **holds** -- a held origin (robots.txt unreachable, circuit breaker) is
  held crawl-wide and, when no process has had other work for
  ``FRONTIER_IDLE_CLOSE`` seconds, deferred in every process, so the crawl
  ends (:mod:`~extensions.backends.redis.holds`); the first process of a
  resumed run retries deferred URLs first. Origins are independent, the
  politeness key is the host: the take parks a held origin's URLs behind
  the host's other URLs in its shared queue, which go on at the host's pace;
  a host with nothing but parked URLs is looked at again when its first hold
  ends (at least once a lease TTL), and a hold that ends puts its host's
  parked URLs back in their places.
* **stats** -- each process adds its stat changes to ``P:stats`` at every
  checkpoint and at close (``redis-cli HGETALL web:stats``); at close the
  sums so far are also in the process's own stats as ``distributed/total/*``.

Differences from the single-process frontier: priority (the front-queue
level) orders URLs within a host's queue and the choice among a process's
due hosts, instead of Mercator's global front queues; the politeness key is
the URL's host name (``CONCURRENT_REQUESTS_PER_IP`` and the
``download_slot`` meta are single-process features); AOPIC's ledger is
:class:`~extensions.backends.redis.ledger.SharedLedger`, whose scalars (Lambda, the
dividend) live in Redis and change atomically with the cash rows, so cash
is conserved across processes; requests that cannot be serialised stay in
the process that made them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extensions.backends.redis.dispatch import SharedDispatch, shared_ledger
from extensions.frontier.options import frontier_arguments
from extensions.frontier.scheduler import Frontier


class DistributedFrontier(Frontier):
    """A :class:`Frontier` composed with the shared dispatch, built from
    plain values (tests, scripts; the other keywords as
    :func:`~extensions.frontier.options.frontier_arguments` takes them);
    a crawl gets the same from its settings through
    ``Frontier.from_crawler``. Nothing is overridden. ``io_thread`` (off
    here, on in a crawl) sends the per-page Redis round trips through a
    worker thread once the reactor runs (:mod:`extensions.backends.redis.worker`)."""

    def __init__(self, store: Any, *, lease_ttl: float = 10.0, poll_interval: float = 0.1,
                 max_lateness: float = 1.0, lease_clock: Callable[[], float] | None = None,
                 owner: str | None = None, front_queues: int = 8, back_queues: int = 48,
                 io_thread: bool = False, **values: Any) -> None:
        dispatch = SharedDispatch(front_queues, back_queues, lease_ttl=lease_ttl, poll_interval=poll_interval,
                                  max_lateness=max_lateness, lease_clock=lease_clock, owner=owner,
                                  io_thread=io_thread)
        values.pop("queue_buffer", None)  # local back queues only
        values["ledger"] = shared_ledger(values.get("ledger"), store)
        super().__init__(store, dispatch, **frontier_arguments(**values))
