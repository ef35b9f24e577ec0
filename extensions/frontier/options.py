"""The frontier's plain values: :class:`FrontierOptions` (``FRONTIER_*``
policy numbers) and :class:`Runtime` (clocks, timers, engine hooks)."""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scrapy import Request


@dataclass(frozen=True, slots=True)
class FrontierOptions:
    """Policy numbers (the setting each comes from in a crawl)."""

    seen_cache_size: int = 65536  # FRONTIER_SEEN_CACHE_SIZE: popular fingerprints in memory
    checkpoint_interval: float = 0.0  # FRONTIER_CHECKPOINT_INTERVAL: 0, none
    host_budget: int = 0  # FRONTIER_HOST_BUDGET: URLs accepted per host; 0, unlimited
    revisits: int = 0  # FRONTIER_AOPIC_REVISITS: OPIC's extra fetches of a page
    idle_close: float = 60.0  # FRONTIER_IDLE_CLOSE: idle seconds before held origins are deferred
    write_ahead: bool = False  # FRONTIER_WRITE_AHEAD: commit before each hand-out
    record_refusals: bool = True  # FRONTIER_RECORD_REFUSALS: refused URLs get a row
    linkgraph_record: bool = True  # LINKGRAPH_RECORD: each fetched page's outlinks into store.links
    recent_links: int = 65536  # LINKS_RECENT_CACHE_SIZE: links filed lately, skipped before a request is built
    bloom_path: Path | None = None  # where the in-process Bloom filter is saved (JOBDIR)
    cleanup_dir: Path | None = None  # a temporary directory removed at close


@dataclass(frozen=True, slots=True)
class Runtime:
    """Time and the engine, as the frontier sees them."""

    clock: Callable[[], float] = time.monotonic  # politeness and timers
    wall_clock: Callable[[], float] = time.time  # timestamps in the URL database
    call_later: Callable[..., Any] | None = None  # the wake-up timer (None: none)
    call_soon: Callable[[Callable[[], None]], Any] | None = None  # before the next I/O poll (None: at once)
    wake: Callable[[], None] | None = None  # ask the engine to poll the scheduler
    #: the requests the engine still holds (None: no engine; a fetch end finishes at once)
    in_progress: Callable[[], Collection[Request] | None] | None = None
    stats: Any = None  # a stats collector (None: a private dict)
    looping_call: Callable[[Callable[[], None]], Any] | None = None  # checkpoints, lease upkeep
    on_store_error: Callable[[Exception], None] | None = None  # a failure outside a scheduler call

