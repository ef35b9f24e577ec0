"""A backend from outside the product, plugged in by class path only
(``FRONTIER_BACKEND = "tests.thirdparty_backend.ThirdPartyBackend"``).

It wraps the memory backend through the public :class:`~extensions.backends.Backend`
interface alone: its frontier store is the memory store behind a wrapper
that passes every call on and counts its opens (``thirdparty/store_opens``),
so a test can tell that a crawl really ran on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from extensions.backends import backend_class


class WrappedStore:
    """Every attribute of ``inner``; ``open`` also counted."""

    def __init__(self, inner: Any, stats: Any) -> None:
        self._inner, self._stats = inner, stats
        self.location = f"third-party over {inner.location}"

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def open(self) -> None:
        self._inner.open()
        if self._stats is not None:
            self._stats.inc_value("thirdparty/store_opens")


class ThirdPartyBackend:
    """The memory backend's parts, its store wrapped."""

    takes_pushed_seeds = False

    def __init__(self, settings: Any, stats: Any = None) -> None:
        self.inner = backend_class({"FRONTIER_BACKEND": "memory"}).for_reading(settings)
        self.stats = stats

    @classmethod
    def from_crawler(cls, crawler: Any) -> ThirdPartyBackend:
        return cls(crawler.settings, crawler.stats)

    @classmethod
    def for_reading(cls, settings: Any) -> ThirdPartyBackend:
        return cls(settings)

    def frontier_store(self) -> tuple[Any, Path | None, Path | None]:
        store, directory, cleanup = self.inner.frontier_store()
        return WrappedStore(store, self.stats), directory, cleanup

    def url_filter(self) -> Any:
        return self.inner.url_filter()

    def ledger(self, store: Any, initial_cash: float, tax: float) -> Any:
        return self.inner.ledger(store, initial_cash, tax)

    def host_dispatch(self, front_queues: int, back_queues: int) -> Any:
        return self.inner.host_dispatch(front_queues, back_queues)

    def content_sets(self, options: Any) -> Any:
        return self.inner.content_sets(options)

    def archive_index(self) -> Any:
        return self.inner.archive_index()

    def read_only_store(self) -> Any:
        return self.inner.read_only_store()

    def data_directory(self, name: str) -> Path | None:
        return self.inner.data_directory(name)
