"""A distinct count in bounded memory: exact while small, then estimated.

:class:`DistinctCounter` counts distinct strings exactly (a set) until
``exact_limit`` of them, then forgets the set and answers from a
HyperLogLog sketch (Flajolet et al. 2007) of ``2**precision`` one-byte
registers fed from the start, so the memory stays at ``exact_limit`` strings
plus the registers however many strings come. Standard error of the
estimate: about ``1.04 / sqrt(2**precision)`` (0.8 % at the default 14).
Pure: no Scrapy.
"""

from __future__ import annotations

import math
from hashlib import blake2b

HASH_BITS = 64


class DistinctCounter:
    """``add(text)``; ``len()`` is the count (exact up to ``exact_limit``)."""

    def __init__(self, exact_limit: int = 10_000, precision: int = 14) -> None:
        if exact_limit < 0 or not 4 <= precision <= 18:
            raise ValueError(f"exact_limit must be >= 0 and precision in 4..18, got "
                             f"{exact_limit!r} and {precision!r}")
        self.exact_limit, self.precision = exact_limit, precision
        self.exact: set[str] | None = set()
        self.registers = bytearray(1 << precision)

    def add(self, text: str) -> None:
        if self.exact is not None:
            if text in self.exact:
                return
            self.exact.add(text)
            if len(self.exact) > self.exact_limit:
                self.exact = None  # the sketch has every string so far
        digest = int.from_bytes(blake2b(text.encode(), digest_size=8).digest(), "big")
        index = digest >> (HASH_BITS - self.precision)
        rest = digest & ((1 << (HASH_BITS - self.precision)) - 1)
        rank = HASH_BITS - self.precision - rest.bit_length() + 1
        if rank > self.registers[index]:
            self.registers[index] = rank

    def __len__(self) -> int:
        if self.exact is not None:
            return len(self.exact)
        return round(self.estimate())

    def estimate(self) -> float:
        """The HyperLogLog estimate, with linear counting for small counts."""
        m = len(self.registers)
        raw = (0.7213 / (1 + 1.079 / m)) * m * m / sum(2.0 ** -r for r in self.registers)
        zeros = self.registers.count(0)
        if raw <= 2.5 * m and zeros:
            return m * math.log(m / zeros)
        return raw

    def memory_entries(self) -> int:
        """Strings held exactly (0 once estimating)."""
        return 0 if self.exact is None else len(self.exact)
