"""The content-seen sets a backend hands the content-seen pipeline: the exact
set, the near-duplicate index (None when off) and, for remote sets, an
off-reactor path answering a page's verdict as a Deferred."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True)
class ContentOptions:
    """What shapes the sets, from the ``CONTENTSEEN_*`` settings."""

    near_enabled: bool
    distance: int
    min_resemblance: float
    memory_entries: int
    cache_kib: int
    flush_interval: float
    io_thread: bool
    #: called (on the reactor thread) when an off-reactor round trip failed after its retries
    on_worker_error: Callable[[Exception], None]


class ExactSet(Protocol):
    """Content fingerprint -> the first URL it came from; a set subclassing
    this gets :meth:`duplicate_of` from its ``add_or_get``."""

    def add_or_get(self, fingerprint: int, url: str) -> str: ...

    def duplicate_of(self, fingerprint: int, url: str) -> str | None:
        """:meth:`add_or_get`, as the item field: the first URL, or None if ``url`` is it."""
        first = self.add_or_get(fingerprint, url)
        return None if first == url else first

    def flush(self) -> None: ...
    def close(self) -> None: ...
    def stats(self) -> dict[str, Any]: ...


class NearIndex(Protocol):
    def prefetch(self, simhash: int) -> None: ...
    def add_or_match(self, simhash: int, url: str, sketch: bytes | None) -> tuple[Any, Any]: ...
    def match(self, simhash: int, sketch: bytes | None) -> Any: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...
    def stats(self) -> dict[str, Any]: ...


class OffReactor(Protocol):
    """A page's verdict computed off the reactor thread."""

    def verdict(self, fingerprint: int, url: str, near: Any) -> Any: ...
    def timing(self) -> dict[str, Any]: ...
    def close(self) -> None: ...


@dataclass
class ContentSets:
    """The sets of one crawl; :meth:`open` before use, :meth:`close` once."""

    exact: ExactSet
    near: NearIndex | None = None
    opener: Callable[[ContentSets], None] | None = None  # builds what needs an open store
    off_reactor: OffReactor | None = None
    cleanup: Callable[[], None] | None = None
    store: Any = None  # the shared store the sets live in (None: files of this process)

    def open(self) -> None:
        if self.opener is not None:
            self.opener(self)

    def close(self) -> None:
        if self.off_reactor is not None:
            self.off_reactor.close()  # its queued pages and writes first
        self.off_reactor = None
        for part in (self.exact, self.near):
            if part is not None:
                part.close()
        if self.cleanup is not None:
            self.cleanup()
