"""The URL-seen test (Mercator): a cache of popular fingerprints (two generations), an optional
Bloom pre-filter (a false positive loses a new URL; rebuilt when its tag does
not match the store), then the URL table's exact ``insert_new``."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from pybloom_live import ScalableBloomFilter

from extensions.frontier.store import Entry, SeenSet, URLTable
from extensions.urls.recent import TwoGenerationCache


class BloomSeen:
    """A scalable Bloom filter of fingerprints, persisted to a file."""

    def __init__(self, initial_capacity: int = 1_000_000, error_rate: float = 0.001) -> None:
        self.filter = ScalableBloomFilter(
            initial_capacity=initial_capacity,
            error_rate=error_rate,
            mode=ScalableBloomFilter.SMALL_SET_GROWTH,
        )
        self.dirty = False

    def add_if_new(self, fingerprints: Sequence[int]) -> list[bool]:
        new = [not self.filter.add(fp) for fp in fingerprints]
        self.dirty = self.dirty or any(new)
        return new

    def size_bytes(self) -> int:
        return sum(len(f.bitarray) // 8 for f in self.filter.filters)

    def save(self, path: Path, tag: str) -> None:
        """Write atomically (temp file + rename), tagged with ``tag``."""
        temp = path.with_suffix(".tmp")
        with temp.open("wb") as f:
            f.write(tag.encode().ljust(32))
            self.filter.tofile(f)
        os.replace(temp, path)
        self.dirty = False

    def load(self, path: Path, tag: str) -> bool:
        """Load ``path`` if it carries ``tag``; False if absent or stale."""
        try:
            with path.open("rb") as f:
                if f.read(32).decode(errors="replace").strip() != tag:
                    return False
                self.filter = ScalableBloomFilter.fromfile(f)
        except (OSError, ValueError, EOFError):  # a missing or damaged filter is rebuilt from the URL table
            return False
        return True

    def rebuild(self, fingerprints: Iterable[int]) -> int:
        count = 0
        for fp in fingerprints:
            self.filter.add(fp)
            count += 1
        self.dirty = True
        return count


class URLSeen:
    """Cache, optional pre-filter, then the URL table."""

    def __init__(self, urls: URLTable, cache_size: int, prefilter: SeenSet | None = None) -> None:
        self.urls = urls
        self.cache = TwoGenerationCache(cache_size)
        self.prefilter = prefilter

    def known(self, fingerprint: int) -> bool:
        """True when the fingerprint is surely (cache) or probably (Bloom) seen; False: ask the table."""
        return self.cache.hit(fingerprint) or self.prefiltered(fingerprint)

    def prefiltered(self, fingerprint: int) -> bool:
        """Whether the Bloom pre-filter (if any) has probably seen the fingerprint (it has now)."""
        if self.prefilter is not None and not self.prefilter.add_if_new([fingerprint])[0]:
            self.cache.add(fingerprint)
            return True
        return False

    def add(self, entry: Entry, now: float) -> bool:
        """Record ``entry`` in the URL table; whether it was new there."""
        new = self.urls.insert_new([entry], now)[0]
        self.cache.add(entry.fingerprint)
        return new

    def remember(self, fingerprint: int) -> None:
        """Note a fingerprint that bypassed the test (``dont_filter``)."""
        self.cache.add(fingerprint)
        if self.prefilter is not None:
            self.prefilter.add_if_new([fingerprint])
