"""Settings to :class:`~extensions.frontier.scheduler.Frontier` arguments, for
``Frontier.from_crawler`` only; an invalid value fails at start naming it."""

from __future__ import annotations

import asyncio
import math
import time
from typing import TYPE_CHECKING, Any

from scrapy.utils.asyncio import call_later, create_looping_call, is_asyncio_available
from scrapy.utils.defer import _schedule_coro
from scrapy.utils.misc import load_object

from extensions import defaults
from extensions.defaults import checked, number_setting
from extensions.backends import crawl_backend
from extensions.frontier.dispatch import HostKey
from extensions.frontier.queues import BiasedSelector
from extensions.frontier.localdispatch import LocalDispatch
from extensions.frontier.options import FrontierOptions, Runtime
from extensions.frontier.politeness import Politeness
from extensions.frontier.revisits import RevisitSchedule
from extensions.revisit.policy import SCHEDULES, RevisitPolicy
from extensions.frontier.store import WriteAheadStore

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy.crawler import Crawler

BLOOM_NAME = "frontier.bloom"
SECONDS = "a number of seconds > 0"


def _engine_hooks(crawler: Crawler) -> dict[str, Any]:
    """Wake-up, in-progress view and error handling through the engine."""

    def engine() -> Any:
        try:
            return crawler.engine
        except (AttributeError, RuntimeError):  # not set before the crawl starts
            return None

    def slot() -> Any:
        return getattr(engine(), "_slot", None)

    def wake() -> None:
        if (current := slot()) is not None:
            current.nextcall.schedule()

    def in_progress() -> Any:
        current = slot()
        return None if current is None else current.inprogress

    def on_store_error(err: Exception) -> None:
        current = engine()
        if current is not None and current.spider is not None:
            _schedule_coro(current.close_spider_async(reason="frontier_store_error"))

    return {"wake": wake, "in_progress": in_progress, "on_store_error": on_store_error}


def policy_from_settings(settings: Any) -> RevisitPolicy:
    """The :class:`~.policy.RevisitPolicy` the ``REVISIT_*`` settings describe."""
    initial = checked(settings, "REVISIT_INITIAL_INTERVAL", lambda value: 0 < value < math.inf, SECONDS)
    minimum = checked(settings, "REVISIT_MIN_INTERVAL", lambda value: 0 < value <= initial,
                      f"{SECONDS} and <= REVISIT_INITIAL_INTERVAL ({initial!r})")
    maximum = checked(settings, "REVISIT_MAX_INTERVAL", lambda value: initial <= value < math.inf,
                      f"{SECONDS} and >= REVISIT_INITIAL_INTERVAL ({initial!r})")
    schedule = settings.get("REVISIT_SCHEDULE", defaults.REVISIT_SCHEDULE)
    if schedule not in SCHEDULES:
        raise ValueError(f"REVISIT_SCHEDULE must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    return RevisitPolicy(
        initial, minimum, maximum, schedule=schedule,
        gone_after=checked(settings, "REVISIT_GONE_AFTER", lambda value: value >= 1, "an integer >= 1", int),
        increase=checked(settings, "REVISIT_ADAPTIVE_INCREASE", lambda value: 0 <= value < math.inf, ">= 0"),
        decrease=checked(settings, "REVISIT_ADAPTIVE_DECREASE", lambda value: 0 <= value < 1, ">= 0 and < 1"),
    )


def max_share_from_settings(settings: Any) -> float:
    return checked(settings, "REVISIT_MAX_SHARE", lambda value: 0 <= value <= 1, "between 0 and 1")


def call_soon(func: Callable[[], None]) -> None:
    """Run ``func`` on the reactor thread before the reactor next polls for I/O."""
    if is_asyncio_available():
        asyncio.get_event_loop().call_soon(func)
    else:
        from twisted.internet import reactor  # noqa: PLC0415 - the installed one

        reactor.callLater(0, func)


def frontier_kwargs(crawler: Crawler) -> dict[str, Any]:
    """Every argument of ``Frontier.__init__`` from the crawler's settings."""
    settings = defaults.with_defaults(crawler.settings, "FRONTIER_")
    front_queues = number_setting(settings, "FRONTIER_FRONT_QUEUES", 1, int)
    back_queues = settings.getint("FRONTIER_BACK_QUEUES") or 3 * number_setting(
        settings, "CONCURRENT_REQUESTS", 1, int
    )
    if back_queues < 1:
        raise ValueError(f"FRONTIER_BACK_QUEUES must be >= 0, got {settings.get('FRONTIER_BACK_QUEUES')!r}")
    per_ip = settings.getint("CONCURRENT_REQUESTS_PER_IP")
    backend = crawl_backend(crawler)
    dispatch = backend.host_dispatch(front_queues, back_queues)
    if dispatch is None:  # Mercator's front queues, back queues and host heap in this process
        weights = settings.getlist("FRONTIER_FRONT_QUEUE_WEIGHTS")
        dispatch = LocalDispatch(front_queues, back_queues,
                                 queue_buffer=number_setting(settings, "FRONTIER_QUEUE_BUFFER", 1, int),
                                 selector=BiasedSelector([int(w) for w in weights]) if weights else None,
                                 refill_budget=number_setting(settings, "FRONTIER_REFILL_BUDGET", 1, int))
    prioritizer_cls = load_object(settings.get("FRONTIER_PRIORITIZER"))
    store, directory, cleanup = backend.frontier_store()
    bloom = backend.url_filter()
    return {
        "store": store,
        "dispatch": dispatch,
        "prioritizer": prioritizer_cls(levels=front_queues),
        "politeness": Politeness(
            delay=number_setting(settings, "DOWNLOAD_DELAY", 0),
            factor=number_setting(settings, "FRONTIER_POLITENESS_FACTOR", 0),
            concurrency=per_ip or number_setting(settings, "CONCURRENT_REQUESTS_PER_DOMAIN", 1, int),
            slots=settings.getdict("DOWNLOAD_SLOTS"),
        ),
        "hostkey": HostKey(per_ip=bool(per_ip)),
        "ledger": backend.ledger(store, settings.getfloat("FRONTIER_AOPIC_INITIAL_CASH"),
                                 settings.getfloat("FRONTIER_AOPIC_TAX"))
        if settings.getbool("FRONTIER_AOPIC") else None,
        "bloom": bloom,
        "revisit_schedule": RevisitSchedule(store, policy_from_settings(settings), crawler.stats,
                                            max_share=max_share_from_settings(settings))
        if settings.getbool("REVISIT_ENABLED") else None,
        "options": FrontierOptions(
            seen_cache_size=number_setting(settings, "FRONTIER_SEEN_CACHE_SIZE", 0, int),
            checkpoint_interval=number_setting(settings, "FRONTIER_CHECKPOINT_INTERVAL", 0),
            host_budget=number_setting(settings, "FRONTIER_HOST_BUDGET", 0, int),
            revisits=number_setting(settings, "FRONTIER_AOPIC_REVISITS", 0, int),
            idle_close=number_setting(settings, "FRONTIER_IDLE_CLOSE", 0),
            write_ahead=settings.getbool("FRONTIER_WRITE_AHEAD") and isinstance(store, WriteAheadStore),
            record_refusals=settings.getbool("FRONTIER_RECORD_REFUSALS"),
            linkgraph_record=settings.getbool("LINKGRAPH_RECORD", defaults.LINKGRAPH_RECORD),
            recent_links=settings.getint("LINKS_RECENT_CACHE_SIZE", defaults.LINKS_RECENT_CACHE_SIZE),
            bloom_path=directory / BLOOM_NAME if bloom is not None and directory else None,
            cleanup_dir=cleanup,
        ),
        "runtime": Runtime(clock=time.monotonic, wall_clock=time.time, call_later=call_later, call_soon=call_soon,
                           stats=crawler.stats, looping_call=create_looping_call, **_engine_hooks(crawler)),
    }
