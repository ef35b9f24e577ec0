"""The exact URL-seen set of the Redis store alone, for callers that have only
fingerprints (tests, benchmarks). A crawl tests and sets it inside the row
scripts (``extensions/backends/redis/fpset.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from extensions.backends.redis.fpset import FingerprintSetLayout, member
from extensions.backends.redis.keys import glob_escape, positions_by, scatter
from extensions.backends.redis.rows import tag_of
from extensions.backends.redis.scripts import source

#: add URLs to one host tag's exact URL-seen set. KEYS: the set. ARGV: its kind ('fpset'),
#: bucket size, '', then one member per URL. Returns 1 (new) or 0 (seen) per URL.
FPSET_ADD = source("include/fpset") + """
local added = {}
for i = 4, #ARGV do added[#added + 1] = fpset_add(KEYS[1], ARGV[2], ARGV[i]) end
return added
"""


class RedisFingerprintSet:
    """The exact set alone as a :class:`~extensions.frontier.store.SeenSet` on an open
    :class:`~extensions.backends.redis.store.RedisStore`, for callers that have only fingerprints."""

    def __init__(self, store: Any, layout: FingerprintSetLayout) -> None:
        self.store, self.layout = store, layout
        self.pattern = f"{glob_escape(store.keys.prefix)}:{{*}}:seen"  # every tag's set (SCAN MATCH)

    def add_if_new(self, fingerprints: Sequence[int]) -> list[bool]:
        by_tag = positions_by(fingerprints, tag_of)
        answers = self.store.call(*[
            ("EVAL", FPSET_ADD, 1, self.store.keys.seen(tag), *self.layout.args(),
             *(member(fingerprints[i]) for i in indexes))
            for tag, indexes in by_tag.items()])
        return scatter(by_tag, answers, len(fingerprints))

    def size_bytes(self) -> int:
        """Redis' own ``MEMORY USAGE`` of every tag's set, directory and buckets (a SCAN: for reports)."""
        keys = [*self.store.scan(self.pattern), *self.store.scan(self.pattern + ":*")]
        sizes = self.store.call(*[("MEMORY", "USAGE", key, "SAMPLES", "0") for key in keys])
        return sum(int(size or 0) for size in sizes)

    def count(self) -> int:
        """Members over every tag's set."""
        buckets = list(self.store.scan(self.pattern + ":*"))
        return sum(len(bucket or b"") // 5 for bucket in self.store.call(*[("GET", key) for key in buckets])) \
            if buckets else 0
