"""In-process helpers for the resolver tests.

:class:`LoopReactor` runs a Twisted reactor on a private asyncio loop, so a
test drives a resolver in-process without installing a global reactor;
:class:`PublishedStats` reads a crawler's stats after the resolver published them.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Awaitable, Iterable

    from twisted.internet.defer import Deferred

T = TypeVar("T")


class LoopReactor:
    """A private asyncio loop and a Twisted reactor on it, not installed globally.

    Tests issue lookups (which send real UDP queries through this reactor),
    then :meth:`outcomes` runs the loop until every Deferred has fired, or
    fails the test after ``timeout`` seconds: nothing can hang.
    """

    def __init__(self) -> None:
        from twisted.internet.asyncioreactor import AsyncioSelectorReactor  # noqa: PLC0415

        self.loop = asyncio.new_event_loop()
        self.reactor = AsyncioSelectorReactor(self.loop)

    def close(self) -> None:
        self.loop.close()

    def run(self, awaitable: Awaitable[T], timeout: float = 10.0) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(awaitable, timeout))

    def outcomes(self, deferreds: Iterable[Deferred[Any]], timeout: float = 10.0) -> list[Any]:
        """Each Deferred's result, or its exception, in order."""
        async def settle(d: Deferred[Any]) -> Any:
            try:
                return await d.asFuture(self.loop)
            except Exception as err:  # the outcome under test
                return err

        async def gather() -> list[Any]:
            return list(await asyncio.gather(*(settle(d) for d in deferreds)))

        return self.run(gather(), timeout)

    def outcome(self, deferred: Deferred[Any], timeout: float = 10.0) -> Any:
        return self.outcomes([deferred], timeout)[0]


class PublishedStats:
    """A crawler's stats as they stand once the resolver has published its
    local counts (as it does when the spider idles or closes)."""

    def __init__(self, resolver: Any, collector: Any):
        self.resolver, self.collector = resolver, collector

    def get_value(self, key: str) -> Any:
        self.resolver.publish_stats()
        return self.collector.get_value(key)
