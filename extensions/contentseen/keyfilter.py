"""A bitmap of the near-duplicate index keys that may have rows on disk (no
false negatives), so a look-up none of whose keys was stored needs no query."""

from __future__ import annotations

from typing import Final

FILTER_BITS: Final = 1 << 23  # 1 MiB
# the key's table number (above bit 48) is mixed in to spread the tables over the bitmap


class KeyFilter:
    """Keys that may have rows in the index's file; a false positive only
    costs the query. :attr:`full` once more than an eighth of the bits are set."""

    def __init__(self, bits: int = FILTER_BITS) -> None:
        if bits < 8 or bits & (bits - 1):
            raise ValueError(f"filter bits must be a power of two >= 8, not {bits}")
        self.bitmap = bytearray(bits >> 3)
        self.mask, self.limit, self.set_bits = bits - 1, bits >> 3, 0

    def add(self, keys: list[int]) -> None:
        """Mark ``keys`` as stored."""
        bitmap = self.bitmap
        for key in keys:
            spot = (key ^ (key >> 48) * 0x9E3779B1) & self.mask
            bit = 1 << (spot & 7)
            if not bitmap[spot >> 3] & bit:
                bitmap[spot >> 3] |= bit
                self.set_bits += 1

    def may_hold(self, keys: list[int]) -> bool:
        """False if no row with any of ``keys`` can be in the file."""
        bitmap, mask = self.bitmap, self.mask
        for key in keys:
            spot = (key ^ (key >> 48) * 0x9E3779B1) & mask
            if bitmap[spot >> 3] >> (spot & 7) & 1:
                return True
        return False

    @property
    def full(self) -> bool:
        return self.set_bits > self.limit
