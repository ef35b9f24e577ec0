"""The re-visit policy, the change-rate estimator and the freshness
estimates, with numbers: times are plain floats passed in (no clock, no
sleeps), change histories are seeded Poisson processes."""

from __future__ import annotations

import math
import random

import pytest
from scrapy.settings import Settings

from extensions import defaults
from extensions.frontier.config import max_share_from_settings, policy_from_settings
from extensions.revisit.estimate import (
    SHORTEST_INTERVAL_MU, Freshness, change_rate, crawl_freshness, expected_age, expected_freshness,
    marginal_gain, optimal_interval, record_rate,
)
from extensions.revisit.policy import RevisitPolicy
from extensions.frontier.store import RevisitRecord

HOUR = 3600.0
DAY = 24 * HOUR


def time_averaged_freshness(rate: float, interval: float) -> float:
    """Share of the time a page changing at ``rate``, fetched every
    ``interval`` seconds, is up to date: ``(1 - exp(-x)) / x``."""
    x = rate * interval
    return 1.0 if x <= 0 else -math.expm1(-x) / x


def time_averaged_age(rate: float, interval: float) -> float:
    """Mean age (seconds) of that page's copy:
    ``I/2 - 1/lambda + (1 - exp(-x)) / (lambda x)``."""
    x = rate * interval
    if x <= 0:
        return 0.0
    if x < 1e-4:  # series: the closed form cancels
        return interval * x / 6
    return interval / 2 - 1 / rate + -math.expm1(-x) / (rate * x)


def fetched(policy: RevisitPolicy, now: float = 0.0, content: int = 1, **fields: object) -> RevisitRecord:
    """A record after its first fetch (a 200 at ``now``)."""
    return policy.after_visit(policy.first(7, now), now, content=content, **fields)


def revisit(policy: RevisitPolicy, record: RevisitRecord, **outcome: object) -> RevisitRecord:
    """The record after a visit at its due time."""
    return policy.after_visit(record, record.due, **outcome)


# -- first visit and change detection ------------------------------------------------

def test_first_record_is_due_now_and_first_fetch_is_not_a_change() -> None:
    policy = RevisitPolicy(DAY, HOUR, 30 * DAY)
    record = policy.first(42, 1000.0)
    assert (record.fingerprint, record.due, record.interval, record.visits) == (42, 1000.0, DAY, 0)
    record = policy.after_visit(record, 1000.0, content=5, etag='"a"', last_modified="Mon")
    assert (record.visits, record.changes, record.first_visit, record.last_visit, record.last_change) == (
        1, 0, 1000.0, 1000.0, 1000.0)
    assert (record.content, record.etag, record.last_modified) == (5, '"a"', "Mon")
    assert record.due == 1000.0 + DAY


def test_a_new_content_fingerprint_is_a_change_the_same_one_is_not() -> None:
    policy = RevisitPolicy(DAY, HOUR, 30 * DAY)
    record = revisit(policy, fetched(policy, content=1), content=2)
    assert (record.visits, record.changes, record.last_change, record.content) == (2, 1, DAY, 2)
    record = revisit(policy, record, content=2)
    assert (record.visits, record.changes, record.last_change) == (3, 1, DAY)


def test_a_304_is_unchanged_and_keeps_the_copy_and_its_validators() -> None:
    policy = RevisitPolicy(DAY, HOUR, 30 * DAY)
    record = fetched(policy, content=9, etag='"v1"', last_modified="Mon")
    record = revisit(policy, record, not_modified=True, status=304)
    assert (record.visits, record.changes, record.content, record.etag, record.last_modified) == (
        2, 0, 9, '"v1"', "Mon")


def test_validators_decide_without_a_fingerprint_and_no_evidence_counts_as_changed() -> None:
    policy = RevisitPolicy(DAY, HOUR, 30 * DAY)
    record = fetched(policy, content=None, etag='"v1"')
    assert policy.changed(record, None, '"v2"', None)
    assert not policy.changed(record, None, '"v1"', None)
    dated = fetched(policy, content=None, last_modified="Mon")
    assert not policy.changed(dated, None, None, "Mon")
    assert policy.changed(dated, None, None, "Tue")
    assert policy.changed(fetched(policy, content=None), None, None, None)
    assert not policy.changed(fetched(policy, content=1, etag='"v1"'), 1, '"v2"', None)  # fingerprints before validators


# -- the adaptive schedule --------------------------------------------------------------

def test_adaptive_interval_shrinks_on_change_and_grows_when_unchanged_clamped() -> None:
    policy = RevisitPolicy(DAY, 10 * HOUR, 2 * DAY, schedule="adaptive", increase=0.4, decrease=0.2)
    record = fetched(policy, content=1)
    record = revisit(policy, record, content=2)
    assert record.interval == pytest.approx(0.8 * DAY)
    assert record.due == pytest.approx(DAY + 0.8 * DAY)
    record = revisit(policy, record, content=2)
    assert record.interval == pytest.approx(0.8 * 1.4 * DAY)
    for _ in range(5):
        record = revisit(policy, record, not_modified=True, status=304)
    assert record.interval == 2 * DAY  # clamped to the maximum
    for content in range(3, 20):
        record = revisit(policy, record, content=content)
    assert record.interval == 10 * HOUR  # clamped to the minimum


def test_equal_bounds_give_a_fixed_interval_whatever_happens() -> None:
    for schedule in ("adaptive", "estimate"):
        policy = RevisitPolicy(DAY, DAY, DAY, schedule=schedule)
        record = fetched(policy)
        for content in (2, 2, 3, 4, 4, 4):
            record = revisit(policy, record, content=content)
            assert record.interval == DAY


# -- the change-rate estimate and the freshness-optimal interval -----------------------

def test_estimator_is_cho_garcia_molina_and_finite_when_every_visit_changed() -> None:
    # 10 intervals of 1 hour, 4 changes: r = -log(6.5 / 10.5)
    assert change_rate(11, 4, 10 * HOUR) == pytest.approx(-math.log(6.5 / 10.5) / HOUR)
    assert change_rate(11, 10, 10 * HOUR) == pytest.approx(math.log(21) / HOUR)
    # no change seen: half a change assumed, not zero
    assert change_rate(11, 0, 10 * HOUR) == pytest.approx(math.log1p(0.05) / HOUR)
    assert change_rate(1, 0, 0.0) is None


@pytest.mark.parametrize("rate_interval", [0.1, 0.5, 1.0, 2.0])
def test_estimate_converges_to_the_true_rate_on_poisson_histories(rate_interval: float) -> None:
    """A page changing as a Poisson process (seeded), visited every hour by
    the policy itself for 3000 visits: the record's rate is within 6%."""
    rate = rate_interval / HOUR
    generator = random.Random(int(rate_interval * 1000))
    policy = RevisitPolicy(HOUR, HOUR, HOUR)
    record, next_change, content = fetched(policy, content=0), 0.0, 0
    next_change = generator.expovariate(rate)
    for _ in range(3000):
        while next_change <= record.due:
            content += 1
            next_change += generator.expovariate(rate)
        record = revisit(policy, record, content=content)
    assert record_rate(record) == pytest.approx(rate, rel=0.06)


def test_optimal_interval_meets_the_first_order_condition() -> None:
    mu = 2 * HOUR
    for rate in (1 / (30 * DAY), 1 / DAY, 1 / (8 * HOUR), 0.9 / mu):
        interval = optimal_interval(rate, mu)
        assert marginal_gain(rate * interval) == pytest.approx(mu * rate, rel=1e-9)
        assert interval >= SHORTEST_INTERVAL_MU * mu * (1 - 1e-9)
    assert optimal_interval(1 / mu, mu) == math.inf  # changes too often to be worth a visit
    assert optimal_interval(0.0, mu) == math.inf
    # slow pages: I ~ sqrt(2 mu / rate)
    slow = 1 / (1000 * DAY)
    assert optimal_interval(slow, mu) == pytest.approx(math.sqrt(2 * mu / slow), rel=0.01)


def test_optimal_intervals_beat_every_other_split_of_the_same_budget() -> None:
    """Two pages, one budget of fetches per second: the optimum's summed
    time-averaged freshness is not beaten by moving fetches between them."""
    fast, slow, mu = 1 / (6 * HOUR), 1 / (5 * DAY), 3 * HOUR
    first, second = optimal_interval(fast, mu), optimal_interval(slow, mu)
    budget = 1 / first + 1 / second
    best = time_averaged_freshness(fast, first) + time_averaged_freshness(slow, second)
    for share in (0.05, 0.2, 0.35, 0.5, 0.65, 0.8, 0.95):
        other = time_averaged_freshness(fast, 1 / (share * budget)) + time_averaged_freshness(
            slow, 1 / ((1 - share) * budget))
        assert other <= best + 1e-12


def test_estimate_schedule_grows_while_quiet_and_shrinks_on_change() -> None:
    policy = RevisitPolicy(DAY, HOUR, 30 * DAY)
    record = fetched(policy)
    assert record.interval == DAY
    intervals = []
    for _ in range(6):
        record = revisit(policy, record, content=1)
        intervals.append(record.interval)
    assert intervals == sorted(intervals) and intervals[0] > DAY
    before = record.interval
    record = revisit(policy, record, content=2)
    assert record.interval < before
    assert record.interval >= DAY  # initial is the estimate schedule's shortest interval


def test_a_page_changing_at_every_visit_is_not_chased_below_initial() -> None:
    """The adaptive schedule chases it down to the minimum; the estimate
    schedule never re-visits more often than ``initial`` and backs off, as
    no affordable interval keeps such a page fresh."""
    adaptive = RevisitPolicy(DAY, HOUR, 30 * DAY, schedule="adaptive")
    estimate = RevisitPolicy(DAY, HOUR, 30 * DAY)
    chased, estimated = fetched(adaptive, content=0), fetched(estimate, content=0)
    intervals = []
    for content in range(1, 30):
        chased = revisit(adaptive, chased, content=content)
        estimated = revisit(estimate, estimated, content=content)
        intervals.append(estimated.interval)
    assert chased.interval == HOUR
    assert min(intervals) >= DAY
    assert intervals[10:] == sorted(intervals[10:]) and intervals[-1] > 1.5 * DAY
    # seen changing at each of 40 visits a day apart: past the point of no return
    hopeless = RevisitRecord(1, math.inf, DAY, visits=41, changes=40, first_visit=0.0, last_visit=40 * DAY)
    assert estimate.next_interval(hopeless, True) == 30 * DAY


# -- gone pages ----------------------------------------------------------------------

@pytest.mark.parametrize("status", [404, 410])
def test_gone_after_n_confirmations_then_never_due_and_a_200_revives(status: int) -> None:
    policy = RevisitPolicy(DAY, HOUR, 30 * DAY, gone_after=3)
    record = fetched(policy, content=1)
    record = revisit(policy, record, status=status)
    assert (record.gone, record.visits, record.due) == (1, 2, 2 * DAY)
    record = revisit(policy, record, status=status)
    assert (record.gone, record.due) == (2, 3 * DAY)
    record = revisit(policy, record, status=status)
    assert (record.gone, record.due) == (3, math.inf)
    record = policy.after_visit(record, 10 * DAY, status=200, content=1)
    assert record.gone == 0 and record.due < math.inf and record.changes == 1


def test_a_200_between_missing_answers_restarts_the_count() -> None:
    policy = RevisitPolicy(DAY, HOUR, 30 * DAY, gone_after=2)
    record = revisit(policy, fetched(policy), status=404)
    record = revisit(policy, record, status=200, content=1)
    record = revisit(policy, record, status=404)
    assert (record.gone, record.due < math.inf) == (1, True)


def test_missing_without_ever_a_200_is_gone_at_once_and_other_statuses_carry_no_evidence() -> None:
    policy = RevisitPolicy(DAY, HOUR, 30 * DAY, gone_after=3)
    record = policy.after_visit(policy.first(1, 0.0), 0.0, status=404)
    assert (record.gone, record.due) == (1, math.inf)
    record = fetched(policy)
    for status in (301, 403, 429, 503):
        after = policy.after_visit(record, 5.0, status=status)
        assert after == record._replace(due=5.0 + record.interval)


# -- freshness and age ----------------------------------------------------------------

def test_expected_freshness_and_age_against_closed_forms() -> None:
    rate, t = 1 / HOUR, 2 * HOUR
    assert expected_freshness(rate, t) == pytest.approx(math.exp(-2))
    # age(t) = integral over s in [0, t] of P(changed by s) = t - (1 - e^-rate t) / rate
    steps = 20000
    integral = sum(1 - math.exp(-rate * (k + 0.5) * t / steps) for k in range(steps)) * t / steps
    assert expected_age(rate, t) == pytest.approx(integral, rel=1e-6)
    assert expected_age(rate, 1e-3) == pytest.approx(rate * 1e-6 / 2, rel=1e-3)
    assert expected_age(0.0, t) == 0.0 and expected_freshness(0.0, t) == 1.0
    # time averages over a re-visit interval are the means of the above
    interval = 3 * HOUR
    mean_fresh = sum(expected_freshness(rate, (k + 0.5) * interval / steps) for k in range(steps)) / steps
    mean_age = sum(expected_age(rate, (k + 0.5) * interval / steps) for k in range(steps)) / steps
    assert time_averaged_freshness(rate, interval) == pytest.approx(mean_fresh, rel=1e-6)
    assert time_averaged_age(rate, interval) == pytest.approx(mean_age, rel=1e-6)


def test_crawl_freshness_averages_the_copies_and_leaves_out_gone_and_unfetched() -> None:
    now = 100 * HOUR
    known = RevisitRecord(1, math.inf, HOUR, visits=11, changes=4, first_visit=0.0, last_visit=10 * HOUR)
    quiet = RevisitRecord(2, math.inf, HOUR, visits=11, changes=0, first_visit=0.0, last_visit=99 * HOUR)
    once = RevisitRecord(3, math.inf, HOUR, visits=1, first_visit=90 * HOUR, last_visit=90 * HOUR)
    gone = RevisitRecord(4, math.inf, HOUR, visits=5, changes=1, last_visit=50 * HOUR, gone=3)
    unfetched = RevisitRecord(5, 0.0, HOUR)
    result = crawl_freshness([known, quiet, once, gone, unfetched], now)
    rates = [change_rate(11, 4, 10 * HOUR), change_rate(11, 0, 99 * HOUR)]
    pooled = change_rate(21, 4, 109 * HOUR)  # the single-visit URL takes the crawl-wide rate
    elapsed = [90 * HOUR, HOUR, 10 * HOUR]
    pairs = list(zip([*rates, pooled], elapsed))
    assert result.urls == 3
    assert result.freshness == pytest.approx(sum(expected_freshness(r, t) for r, t in pairs) / 3)
    assert result.age_seconds == pytest.approx(sum(expected_age(r, t) for r, t in pairs) / 3)
    assert crawl_freshness([], now) == Freshness(1.0, 0.0, 0)


# -- settings -------------------------------------------------------------------------

def test_default_settings_build_the_documented_policy() -> None:
    policy = policy_from_settings(Settings())
    assert (policy.initial, policy.minimum, policy.maximum, policy.gone_after, policy.schedule) == (
        defaults.REVISIT_INITIAL_INTERVAL, defaults.REVISIT_MIN_INTERVAL, defaults.REVISIT_MAX_INTERVAL,
        defaults.REVISIT_GONE_AFTER, defaults.REVISIT_SCHEDULE)
    assert (policy.increase, policy.decrease) == (
        defaults.REVISIT_ADAPTIVE_INCREASE, defaults.REVISIT_ADAPTIVE_DECREASE)
    assert max_share_from_settings(Settings()) == defaults.REVISIT_MAX_SHARE
    # values from -s arrive as strings
    policy = policy_from_settings(Settings({"REVISIT_INITIAL_INTERVAL": "7200", "REVISIT_GONE_AFTER": "2",
                                            "REVISIT_SCHEDULE": "adaptive"}))
    assert (policy.initial, policy.gone_after, policy.schedule) == (7200.0, 2, "adaptive")


@pytest.mark.parametrize(("name", "value"), [
    ("REVISIT_INITIAL_INTERVAL", 0),
    ("REVISIT_INITIAL_INTERVAL", "soon"),
    ("REVISIT_MIN_INTERVAL", -1),
    ("REVISIT_MIN_INTERVAL", 2 * DAY),
    ("REVISIT_MAX_INTERVAL", HOUR),
    ("REVISIT_MAX_INTERVAL", "inf"),
    ("REVISIT_GONE_AFTER", 0),
    ("REVISIT_GONE_AFTER", 2.5),
    ("REVISIT_SCHEDULE", "random"),
    ("REVISIT_ADAPTIVE_DECREASE", 1.0),
    ("REVISIT_ADAPTIVE_INCREASE", -0.1),
    ("REVISIT_ADAPTIVE_INCREASE", "nan"),
])
def test_invalid_settings_raise_naming_the_setting_and_value(name: str, value: object) -> None:
    with pytest.raises(ValueError, match=name) as raised:
        policy_from_settings(Settings({name: value}))
    assert repr(value) in str(raised.value)


@pytest.mark.parametrize("value", [-0.1, 1.5, "half"])
def test_invalid_max_share_raises_naming_the_setting(value: object) -> None:
    with pytest.raises(ValueError, match="REVISIT_MAX_SHARE") as raised:
        max_share_from_settings(Settings({"REVISIT_MAX_SHARE": value}))
    assert repr(value) in str(raised.value)
