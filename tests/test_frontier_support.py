"""Shared helpers for the frontier tests (no tests here).

One fake clock drives both the frontier's time and its wake-up timer:
Twisted's ``task.Clock`` (``seconds()`` as the clock, ``callLater`` as the
timer), so politeness is tested without sleeping.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from scrapy import Request
from twisted.internet.task import Clock

from extensions.frontier.politeness import Politeness
from extensions.frontier.scheduler import Frontier
from extensions.store.memory import MemoryStore
from extensions.store.redis import RedisStore
from extensions.store.redis_bloom import BloomLayout
from extensions.store.sqlite import SQLiteStore
from testweb.redisserver import shared_server, unique_prefix

# "redis": a real redis-server (one per test process, a key prefix per
# store); "redis-bloom": the same with the shared URL-seen Bloom filter,
# whose store trims finished rows. Left out only on a machine without the
# binary outside CI; CI runs `make test`, which installs it, and fails
# loudly if it is missing.
STORES = ["memory", "sqlite"]
if shutil.which("redis-server") or os.environ.get("CI"):
    STORES += ["redis", "redis-bloom"]


def make_store(kind: str, directory: Path) -> Any:
    if kind == "memory":
        return MemoryStore()
    if kind.startswith("redis"):
        bloom = BloomLayout(1_000_000, 1e-6) if kind == "redis-bloom" else None
        return RedisStore(shared_server().url, unique_prefix(), bloom=bloom)
    return SQLiteStore(directory / "frontier.sqlite3")


class Wakes:
    """Counts wake-ups (the engine's ``nextcall.schedule``)."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def make_frontier(store: Any, clock: Clock | None = None, **kwargs: Any) -> Frontier:
    clock = clock or Clock()
    kwargs.setdefault("politeness", Politeness())
    kwargs.setdefault("back_queues", 4)
    kwargs.setdefault("queue_buffer", 8)
    frontier = Frontier(
        store,
        clock=clock.seconds,
        wall_clock=lambda: 1_700_000_000.0 + clock.seconds(),
        call_later=clock.callLater,
        wake=kwargs.pop("wake", Wakes()),
        **kwargs,
    )
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
