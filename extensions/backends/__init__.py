"""Store backends, one package each, chosen by class path as Scrapy chooses its
components: ``FRONTIER_BACKEND`` and ``CONTENTSEEN_BACKEND`` (a class path, an
alias, or ``auto``: the frontier's). The only module outside them that names them."""

from __future__ import annotations

import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from scrapy.utils.misc import build_from_crawler, load_object

from extensions import defaults

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from extensions.aopic.ledger import AOPICLedger
    from extensions.contentseen.sets import ContentOptions, ContentSets
    from extensions.frontier.dispatch import HostDispatch
    from extensions.frontier.store import FrontierStore
    from extensions.frontier.urlseen import BloomSeen
    from extensions.output.archive import ArchiveIndex

ALIASES = {
    "memory": "extensions.backends.memory.backend.MemoryBackend",
    "sqlite": "extensions.backends.sqlite.backend.SQLiteBackend",
    "redis": "extensions.backends.redis.backend.RedisBackend",
}


class Backend(Protocol):
    """What a backend hands out: separate parts, each with its narrow interface."""

    #: A running crawl may push seeds into the backend (no ``-a seeds`` needed).
    takes_pushed_seeds: bool

    def frontier_store(self) -> tuple[FrontierStore, Path | None, Path | None]:
        """The frontier's store (not yet opened), its local directory, a directory to remove at close."""

    def url_filter(self) -> BloomSeen | None:
        """An in-process URL-seen Bloom filter in front of the store, or None."""

    def ledger(self, store: FrontierStore, initial_cash: float, tax: float) -> AOPICLedger:
        """AOPIC's ledger over ``store``."""

    def host_dispatch(self, front_queues: int, back_queues: int) -> HostDispatch | None:
        """A host dispatch shared with other processes, or None: the frontier's local one (a QueuedStore's)."""

    def content_sets(self, options: ContentOptions) -> ContentSets:
        """The content-seen sets (not yet opened)."""

    def archive_index(self) -> ArchiveIndex:
        """The WARC writer's index of archived payloads and captures, kept with the crawl's state."""

    def read_only_store(self) -> FrontierStore:
        """The kept crawl's store, opened to read only (the crawl may be running)."""

    def data_directory(self, name: str) -> Path | None:
        """Where tools keep their files ``name`` for a crawl without ``JOBDIR`` (None: nowhere)."""


def backend_class(settings: Any, name: str = "FRONTIER_BACKEND") -> type:
    """The class a backend setting names; ValueError naming the setting if none."""
    value = settings.get(name) or getattr(defaults, name)
    if name == "CONTENTSEEN_BACKEND" and value == "auto":
        return backend_class(settings)
    path = ALIASES.get(value, value)
    if not isinstance(path, str) or "." not in path:
        raise ValueError(f"{name} must be {', '.join(map(repr, ALIASES))} or a class path, got {value!r}")
    try:
        return load_object(path)
    except (ImportError, NameError, ValueError) as err:
        raise ValueError(f"{name}: cannot load {path!r}: {err}") from err


_BUILT: weakref.WeakKeyDictionary[Any, dict[type, Any]] = weakref.WeakKeyDictionary()


def crawl_backend(crawler: Crawler, name: str = "FRONTIER_BACKEND") -> Backend:
    """The crawler's backend that ``name`` chooses: one instance per class and crawler."""
    cls = backend_class(crawler.settings, name)
    built = _BUILT.setdefault(crawler, {})
    if cls not in built:
        built[cls] = build_from_crawler(cls, crawler)
    return built[cls]


def reading_backend(settings: Any) -> Backend:
    """The backend of the kept crawl ``settings`` name, for tools."""
    return backend_class(settings).for_reading(settings)


def read_only_store(settings: Any) -> FrontierStore:
    """The store of the kept crawl ``settings`` name, opened to read only."""
    return reading_backend(settings).read_only_store()
