"""Change-rate arithmetic of Cho and Garcia-Molina, pure (formulas:
docs/reference/formats.md)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

from extensions.frontier.store import RevisitRecord

#: Below this x the marginal gain uses its series (1 - (1+x)e^-x cancels).
_SERIES_BELOW = 1e-2


def marginal_gain(x: float) -> float:
    """``1 - (1 + x) exp(-x)``: lambda times the freshness one more visit per
    second buys a page re-visited at ``x = lambda * I``. Rises from 0 to 1."""
    if x < _SERIES_BELOW:
        return x * x * (0.5 - x * (1 / 3 - x * (1 / 8 - x / 30)))
    return -math.expm1(-x) - x * math.exp(-x)


def _solve_gain(u: float) -> float:
    """The x with ``marginal_gain(x) == u``, for 0 < u < 1 (Newton steps kept
    inside a bisection bracket: the curve is S-shaped)."""
    lo, hi = 0.0, 1.0
    for _ in range(64):
        if marginal_gain(hi) >= u:
            break
        lo, hi = hi, hi * 2
    x = min(max(math.sqrt(2 * u), lo), hi)
    for _ in range(100):
        error = marginal_gain(x) - u
        if error < 0:
            lo = x
        else:
            hi = x
        slope = x * math.exp(-x)
        step = x - error / slope if slope > 0 else math.nan
        if not lo < step < hi:
            step = (lo + hi) / 2
        if abs(step - x) <= 1e-12 * x or hi - lo <= 1e-15 * hi:
            return step
        x = step
    return x


def optimal_interval(rate: float, mu: float) -> float:
    """The freshness-optimal interval (seconds) for a page changing at ``rate``
    per second and marginal gain ``mu``; ``math.inf`` if never worth it."""
    u = mu * rate
    if rate <= 0 or u >= 1:
        return math.inf
    return _solve_gain(u) / rate


#: The shortest freshness-optimal interval, in units of ``mu``: ``min over u of x(u) / u``
#: with ``marginal_gain(x(u)) == u`` (found by a golden-section search; the curve is unimodal).
SHORTEST_INTERVAL_MU = 3.350918871511673


def change_rate(visits: int, changes: int, observed: float) -> float | None:
    """Changes per second from ``visits`` fetches over ``observed`` seconds, of
    which ``changes`` found the page changed; None before a second visit."""
    intervals = visits - 1
    if intervals < 1 or observed <= 0:
        return None
    seen = min(max(changes, 0), intervals)
    if seen == 0:
        r = math.log1p(0.5 / intervals)  # half a change: the estimator's +0.5
    else:
        r = -math.log((intervals - seen + 0.5) / (intervals + 0.5))
    return r * intervals / observed


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
