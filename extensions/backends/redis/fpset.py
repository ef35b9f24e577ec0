"""The exact URL-seen set of the Redis store (``FRONTIER_SEEN_BACKEND = "exact"``):
fingerprints packed five bytes apiece, tested and set inside the row scripts
(layout: docs/reference/redis-layout.md)."""

from __future__ import annotations

from dataclasses import dataclass

from extensions.backends.redis.keys import Keys

MEMBER_BITS = 40
_MEMBER_MASK = (1 << MEMBER_BITS) - 1


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

