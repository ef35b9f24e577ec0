"""The exact URL-seen set of the Redis store (``FRONTIER_SEEN_BACKEND = "exact"``):
fingerprints packed five bytes apiece, tested and set inside the row scripts
(layout: docs/reference/redis-layout.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from extensions.backends.redis.keys import Keys, positions_by, scatter
from extensions.backends.redis.rows import tag_of
from extensions.backends.redis.scripts import lua

MEMBER_BITS = 40
_MEMBER_MASK = (1 << MEMBER_BITS) - 1
FPSET_ADD = lua("fpset_add")


@dataclass(frozen=True)
class FingerprintSetLayout:
    """How many members a bucket holds before it splits."""

    bucket: int = 512
    kind = "fpset"

    def __post_init__(self) -> None:
        if not 2 <= self.bucket <= 100_000:
            raise ValueError(f"an fpset bucket holds 2 to 100,000 members, got {self.bucket!r}")

    def args(self) -> tuple[str, str, str]:
        """The ARGV head the row scripts take for this set (``lua/include/seen.lua``)."""
        return self.kind, str(self.bucket), ""

    def member_args(self, fingerprint: int) -> tuple[bytes]:
        """A URL's own ARGV in the row scripts: its member."""
        return (member(fingerprint),)

    def key(self, keys: Keys, tag: str) -> str:
        return keys.seen(tag)

    def describe(self) -> str:
        """How the crawl's meta hash records the layout."""
        return f"{self.kind} {self.bucket}"


def member(fingerprint: int) -> bytes:
    """A fingerprint's member in its tag's set: the 40 bits below the tag."""
    return (fingerprint & _MEMBER_MASK).to_bytes(5, "big")


class RedisFingerprintSet:
    """The exact set alone as a :class:`~extensions.frontier.store.SeenSet` on an open
    :class:`~extensions.backends.redis.store.RedisStore`, for callers that have only fingerprints."""

    def __init__(self, store: Any, layout: FingerprintSetLayout) -> None:
        self.store, self.layout = store, layout

    def add_if_new(self, fingerprints: Sequence[int]) -> list[bool]:
        by_tag = positions_by(fingerprints, tag_of)
        answers = self.store.call(*[
            ("EVAL", FPSET_ADD, 1, self.store.keys.seen(tag), *self.layout.args(),
             *(member(fingerprints[i]) for i in indexes))
            for tag, indexes in by_tag.items()])
        return scatter(by_tag, answers, len(fingerprints))

    def size_bytes(self) -> int:
        """Redis' own ``MEMORY USAGE`` of every tag's set, directory and buckets (a SCAN: for reports)."""
        pattern = self.store.keys.seen_pattern
        keys = [*self.store.scan(pattern), *self.store.scan(pattern + ":*")]
        sizes = self.store.call(*[("MEMORY", "USAGE", key, "SAMPLES", "0") for key in keys])
        return sum(int(size or 0) for size in sizes)

    def count(self) -> int:
        """Members over every tag's set."""
        buckets = list(self.store.scan(self.store.keys.seen_pattern + ":*"))
        return sum(len(bucket or b"") // 5 for bucket in self.store.call(*[("GET", key) for key in buckets])) \
            if buckets else 0
