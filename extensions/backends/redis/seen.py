"""What the row scripts need of a URL-seen set kept beside the URL rows
(``lua/include/seen.lua``): the Bloom filter (:mod:`.bloom`) or the exact
fingerprint set (:mod:`.fpset`). Without one the rows are the set."""

from __future__ import annotations

from typing import Protocol

from extensions.backends.redis.bloom import BloomLayout
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.redis.keys import Keys


class SeenLayout(Protocol):
    def args(self) -> tuple[str, str, str]:
        """The scripts' ARGV head: the set's kind and two parameters."""

    def member_args(self, fingerprint: int) -> tuple[object, ...]:
        """A URL's own ARGV after its row's."""

    def key(self, keys: Keys, tag: str) -> str:
        """The set's key in the slot of host tag ``tag``."""

    def describe(self) -> str:
        """How the crawl's meta hash records the layout (a crawl keeps it)."""


def recorded_layout(description: str) -> SeenLayout | None:
    """The layout a crawl's meta hash records (:meth:`SeenLayout.describe`);
    None for ``rows``. ValueError for anything else."""
    kind, *values = description.split()
    try:
        if kind == "fpset" and len(values) == 1:
            return FingerprintSetLayout(int(values[0]))
        if kind == "bloom" and len(values) == 2:
            return BloomLayout(int(values[0]), float(values[1]))
    except ValueError as err:
        raise ValueError(f"unreadable URL-seen layout {description!r}: {err}") from err
    if kind == "rows" and not values:
        return None
    raise ValueError(f"unknown URL-seen layout {description!r}")
