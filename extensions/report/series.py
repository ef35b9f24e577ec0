"""What the report plots: :class:`StatsSeries` (at most ``max_samples``) and
:class:`BoundedTally` (at most ``max_keys``; the rest into ``other``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import NamedTuple


class Sample(NamedTuple):
    elapsed: float  # seconds since the crawl opened
    values: dict[str, float]


class StatsSeries:
    """Samples of ``keys`` over time, at most ``max_samples`` of them."""

    def __init__(self, keys: Iterable[str], max_samples: int = 1000) -> None:
        if max_samples < 4:
            raise ValueError(f"max_samples={max_samples!r}: must be >= 4")
        self.keys = tuple(keys)
        self.max_samples = max_samples
        self.samples: list[Sample] = []
        self.taken = 0  # samples ever taken (the thinned ones too)

    def __len__(self) -> int:
        return len(self.samples)

    def add(self, elapsed: float, stats: Mapping[str, object]) -> None:
        """Record the numeric value of each key (missing or not a number: 0)."""
        values = {key: _number(stats.get(key)) for key in self.keys}
        self.samples.append(Sample(elapsed, values))
        self.taken += 1
        if len(self.samples) > self.max_samples:  # every other one from the first, and the newest
            self.samples = self.samples[:-1:2] + [self.samples[-1]]

    def times(self) -> list[float]:
        return [sample.elapsed for sample in self.samples]

    def values(self, key: str) -> list[float]:
        return [sample.values[key] for sample in self.samples]

    def rates(self, key: str) -> tuple[list[float], list[float]]:
        """(midpoint times, per-second increase of ``key``) between neighbours."""
        times, rates = [], []
        for before, after in zip(self.samples, self.samples[1:]):
            span = after.elapsed - before.elapsed
            if span > 0:
                times.append((before.elapsed + after.elapsed) / 2)
                rates.append(max(after.values[key] - before.values[key], 0.0) / span)
        return times, rates


class BoundedTally:
    """A counter of at most ``max_keys`` keys; the pruned ones' sum is ``other``."""

    def __init__(self, max_keys: int = 1000) -> None:
        if max_keys < 2:
            raise ValueError(f"max_keys={max_keys!r}: must be >= 2")
        self.max_keys = max_keys
        self.counts: Counter[str] = Counter()
        self.other = 0

    def add(self, key: str, count: int = 1) -> None:
        self.counts[key] += count
        if len(self.counts) > self.max_keys:  # keep the busier half: a key seen once must not push out a busy host
            ranked = self.counts.most_common()
            self.other += sum(count for _, count in ranked[self.max_keys // 2:])
            self.counts = Counter(dict(ranked[: self.max_keys // 2]))

    def most_common(self, n: int | None = None) -> list[tuple[str, int]]:
        return self.counts.most_common(n)


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value)
