"""The Mercator frontier shared by several crawler processes on one Redis.

``FRONTIER_BACKEND=redis`` with ``FRONTIER_DISTRIBUTED`` (the default): any
number of ``scrapy crawl web`` processes on the same ``REDIS_URL`` and
``FRONTIER_REDIS_PREFIX`` crawl one frontier. Hosts are leased to one
process at a time (:mod:`.leases`), served with the usual politeness by
:mod:`.dispatch`, and the crawl ends when the shared host heap is empty.
The design is described in the README, "Several crawler processes on one Redis".
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extensions.backends.redis.dispatch import SharedDispatch, shared_ledger
from extensions.frontier.options import frontier_arguments
from extensions.frontier.scheduler import Frontier


class DistributedFrontier(Frontier):
    """A :class:`Frontier` composed with the shared dispatch from plain
    values (tests, scripts); the other keywords as
    :func:`~extensions.frontier.options.frontier_arguments` takes them."""

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
