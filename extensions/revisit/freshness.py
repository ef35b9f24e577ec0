"""The crawl's freshness and age, estimated from its re-visit records.

Cho and Garcia-Molina's definitions, as expected values under a Poisson
model with each URL's estimated rate: a copy fetched ``t`` seconds ago is
fresh with probability ``exp(-lambda t)`` and its expected age is
``t - (1 - exp(-lambda t)) / lambda``. A URL visited once takes the pooled
crawl-wide rate; gone and never-fetched records are left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

from extensions.revisit.estimate import change_rate
from extensions.frontier.store import RevisitRecord


class Freshness(NamedTuple):
    """The crawl's expected freshness (0..1), mean age (seconds), and how
    many URLs' copies the estimate covers. No copies: 1.0, 0.0, 0."""

    freshness: float
    age_seconds: float
    urls: int


def expected_freshness(rate: float, elapsed: float) -> float:
    """Probability that a copy fetched ``elapsed`` seconds ago is up to date."""
    return math.exp(-rate * max(elapsed, 0.0))


def expected_age(rate: float, elapsed: float) -> float:
    """Expected seconds a copy fetched ``elapsed`` seconds ago has been out of
    date: ``t - (1 - exp(-lambda t)) / lambda``."""
    x = rate * max(elapsed, 0.0)
    if x <= 0:
        return 0.0
    if x < 1e-6:  # series: the closed form cancels
        return elapsed * x / 2
    return elapsed + math.expm1(-x) / rate


def record_rate(record: RevisitRecord) -> float | None:
    """The URL's estimated changes per second (None before a second visit)."""
    return change_rate(record.visits, record.changes, record.last_visit - record.first_visit)


def crawl_freshness(records: Iterable[RevisitRecord], now: float) -> Freshness:
    """Expected freshness and age at ``now`` of the copies ``records`` describe."""
    fresh = age = 0.0
    urls = intervals = changes = 0
    observed = 0.0
    unknown: list[float] = []  # elapsed times of URLs visited once
    for record in records:
        if record.visits == 0 or record.gone > 0:
            continue
        urls += 1
        elapsed = now - record.last_visit
        rate = record_rate(record)
        if rate is None:
            unknown.append(elapsed)
            continue
        intervals += record.visits - 1
        changes += record.changes
        observed += record.last_visit - record.first_visit
        fresh += expected_freshness(rate, elapsed)
        age += expected_age(rate, elapsed)
    if unknown:
        pooled = change_rate(intervals + 1, changes, observed) or 0.0
        fresh += sum(expected_freshness(pooled, elapsed) for elapsed in unknown)
        age += sum(expected_age(pooled, elapsed) for elapsed in unknown)
    if urls == 0:
        return Freshness(1.0, 0.0, 0)
    return Freshness(fresh / urls, age / urls, urls)
