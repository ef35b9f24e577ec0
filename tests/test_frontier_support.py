"""Shared helpers for the frontier tests (no tests here).

One fake clock drives both the frontier's time and its wake-up timer:
Twisted's ``task.Clock`` (``seconds()`` as the clock, ``callLater`` as the
timer), so politeness is tested without sleeping.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from scrapy import Request
from scrapy.settings import Settings
from twisted.internet.task import Clock, LoopingCall

from extensions.backends import backend_class
from extensions.frontier.localdispatch import LocalDispatch
from extensions.frontier.politeness import Politeness
from extensions.frontier.scheduler import Frontier
from extensions.backends.redis.dispatch import SharedDispatch
from tests.redis_helpers import shared_ledger
from extensions.backends.memory.backend import MemoryStore
from extensions.backends.redis.store import RedisStore
from extensions.backends.redis.bloom import BloomLayout
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.sqlite.store import SQLiteStore
from testweb.frontierargs import frontier_arguments
from testweb.redisserver import shared_server, unique_prefix

# "redis": a real redis-server (one per test process, a key prefix per
# store) with the shared host dispatch (host leases on Redis), the frontier
# that FRONTIER_BACKEND=redis composes; "redis-bloom": the same with the
# shared URL-seen Bloom filter, whose store trims finished rows. Without
# the binary these fail, naming the fix (`make test` installs it): never
# left out.
STORES = ["memory", "third-party", "sqlite", "redis", "redis-bloom"]
#: stores whose AOPIC ledger is AOPICLedger over their cash table (Redis': SharedLedger, tests/test_redis_ledger.py)
LEDGER_STORES = [kind for kind in STORES if not kind.startswith("redis")]

#: the kind each store of make_store was made as (make_frontier picks the dispatch by it)
_KINDS: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def make_store(kind: str, directory: Path, keep_rows: bool = False) -> Any:
    """A store of ``kind``; ``keep_rows``: a Redis store keeps finished rows (as with REVISIT_ENABLED)."""
    if kind == "memory":
        store: Any = MemoryStore()
    elif kind == "third-party":  # plugged in by class path (tests/thirdparty_backend.py)
        settings = Settings({"FRONTIER_BACKEND": "tests.thirdparty_backend.ThirdPartyBackend"})
        store = backend_class(settings).for_reading(settings).frontier_store()[0]
    elif kind.startswith("redis"):
        # a crawl's layouts: the exact fingerprint set (default) or the Bloom filter
        seen = BloomLayout(1_000_000, 1e-6) if kind.endswith("-bloom") else FingerprintSetLayout()
        store = RedisStore(shared_server().url, unique_prefix(), seen=seen, keep_rows=keep_rows)
    else:
        store = SQLiteStore(directory / "frontier.sqlite3")
    _KINDS[store] = kind
    return store


def opened_store(kind: str, directory: Path) -> Iterator[Any]:
    """A fixture's store of ``kind``, open until the test ends."""
    store = make_store(kind, directory)
    store.open()
    yield store
    store.close()


def reopen_store(store: Any) -> Any:
    """A new store object over the same data (a new process's view), of
    the same kind; a memory store does not outlive its frontier (skip)."""
    kind = _KINDS.get(store, type(store).__name__)
    if isinstance(store, MemoryStore) or kind == "third-party":
        pytest.skip("a memory store does not outlive its frontier")
    if isinstance(store, SQLiteStore):
        fresh: Any = type(store)(store.path)
    else:
        fresh = type(store)(store.url, store.keys.prefix, seen=store.seen, keep_rows=store.keep_rows)
    _KINDS[fresh] = kind
    return fresh


def shared(store: Any) -> bool:
    """Whether frontiers on ``store`` compose the shared host dispatch."""
    return isinstance(store, RedisStore)  # as FRONTIER_BACKEND=redis composes it


def local_only(store: Any, reason: str) -> None:
    """Skip a test of the local back queues on the shared dispatch, saying why."""
    if shared(store):
        pytest.skip(f"local dispatch only: {reason}")


class Wakes:
    """Counts wake-ups (the engine's ``nextcall.schedule``)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def looping_call(clock: Clock, function: Any) -> LoopingCall:
    """A LoopingCall on the test's clock."""
    loop = LoopingCall(function)
    loop.clock = clock
    return loop


def make_frontier(store: Any, clock: Clock | None = None, **kwargs: Any) -> Frontier:
    """An open frontier on ``store`` driven by ``clock``: the shared host
    dispatch for a Redis store, else the local one
    (``front_queues``, ``back_queues``, ``queue_buffer``, ``selector``,
    ``refill_budget`` configure either's share); other keywords as
    :func:`~testweb.frontierargs.frontier_arguments` takes them."""
    clock = clock or Clock()
    kwargs.setdefault("politeness", Politeness())
    front_queues = kwargs.pop("front_queues", 8)
    back_queues = kwargs.pop("back_queues", 4)
    local = {name: kwargs.pop(name) for name in ("queue_buffer", "selector", "refill_budget") if name in kwargs}
    local.setdefault("queue_buffer", 8)
    if shared(store):
        # the lease clock is the test's clock too: leases expire and holds
        # end only when the test says so; lease upkeep (renewals, the idle
        # close) runs as the clock advances
        kwargs.setdefault("dispatch", SharedDispatch(front_queues, back_queues, lease_clock=clock.seconds))
        kwargs["ledger"] = shared_ledger(kwargs.get("ledger"), store)  # as RedisBackend.ledger gives it
        kwargs.setdefault("looping_call", partial(looping_call, clock))
    else:
        kwargs.setdefault("dispatch", LocalDispatch(front_queues, back_queues, **local))
    frontier = Frontier(store, **frontier_arguments(
        clock=clock.seconds,
        wall_clock=lambda: 1_700_000_000.0 + clock.seconds(),
        call_later=clock.callLater,
        wake=kwargs.pop("wake", Wakes()),
        **kwargs,
    ))
    frontier.open(None)
    return frontier


def drain(frontier: Frontier, clock: Clock, duration: float = 0.0, step: float = 0.05, limit: int = 100_000) -> list[tuple[float, str]]:
    """Fetch everything, one request at a time, each fetch taking
    ``duration``; return ``(start time, url)`` in order. Bounded."""
    fetched = []
    for _ in range(limit):
        request = frontier.next_request()
        if request is None:
            if not frontier.has_pending_requests():
                return fetched
            clock.advance(step)
            continue
        fetched.append((clock.seconds(), request.url))
        clock.advance(duration)
        frontier.fetch_finished(request, duration=duration)
    raise AssertionError("drain did not finish")


def urls(host: str, count: int, start: int = 0) -> list[Request]:
    return [Request(f"http://{host}/{i}") for i in range(start, start + count)]
