"""What a process saw recently, in bounded memory: an LRU, a two-generation cache,
and the links passed on lately (a cheap cache before the exact URL-seen test)."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from scrapy.utils.datatypes import LocalCache

_MISSING = object()


class LruCache(LocalCache):  # type: ignore[type-arg]
    """A LocalCache that forgets its least recently set keys first (``limit`` 0: keeps none)."""

    def __setitem__(self, key: Any, value: Any) -> None:
        super().__setitem__(key, value)
        if key in self:
            self.move_to_end(key)


class TwoGenerationCache:
    """A bounded mapping (a set through :meth:`hit` and :meth:`add`) in two
    generations: at most ``capacity`` keys; a key is kept while fewer than
    ``capacity // 2`` newer keys have come (``evictions`` counts what goes)."""

    def __init__(self, capacity: int) -> None:
        self.capacity = max(0, int(capacity))
        self._half = max(1, self.capacity // 2)
        self._young: dict[Hashable, Any] = {}
        self._old: dict[Hashable, Any] = {}
        self.evictions = 0

    def __len__(self) -> int:
        return len(self._young) + len(self._old)

    def __contains__(self, key: Hashable) -> bool:
        """Whether ``key`` is cached (without refreshing it)."""
        return key in self._young or key in self._old

    def _put(self, key: Hashable, value: Any) -> None:
        if len(self._young) >= self._half:
            self.evictions += len(self._old)
            self._old, self._young = self._young, {}
            if self.capacity < 2:  # no room for an old generation
                self.evictions += len(self._old)
                self._old = {}
        self._young[key] = value

    def hit(self, key: Hashable) -> bool:
        """Whether ``key`` is cached (refreshing it)."""
        if key in self._young:
            return True
        if key in self._old:
            self._put(key, self._old.pop(key))
            return True
        return False

    def get(self, key: Hashable) -> Any:
        """``key``'s value (refreshing it), None if not cached."""
        value = self._young.get(key, _MISSING)
        if value is not _MISSING:
            return value
        if key in self._old:
            value = self._old.pop(key)
            self._put(key, value)
            return value
        return None

    def add(self, key: Hashable, value: Any = None) -> None:
        if not self.capacity:
            return
        if key in self._young:
            self._young[key] = value
            return
        self._old.pop(key, None)
        self._put(key, value)


class RecentLinks:
    """Canonical URL (by 64-bit hash) -> the least depth it was passed on at."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"LINKS_RECENT_CACHE_SIZE must be >= 0, got {size!r}")
        self.cache = TwoGenerationCache(size)

    def __len__(self) -> int:
        return len(self.cache)

    def fresh(self, url: str, depth: int) -> bool:
        """True if ``url`` at ``depth`` must be passed on (and remember it)."""
        key = hash(url)
        known = self.cache.get(key)
        if known is not None and known <= depth:
            return False
        self.cache.add(key, depth)
        return True
