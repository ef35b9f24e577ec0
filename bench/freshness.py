"""Freshness of re-visit policies under a fixed fetch budget (simulated).

The comparison of Cho and Garcia-Molina ("Effective page refresh
policies", 2003), on a synthetic web: ``--pages`` pages, each changing as a
Poisson process whose rate is drawn log-uniformly between one change a
``--slowest`` and one a ``--fastest`` (hours), all change times drawn in
advance from ``--seed``. The crawler has a fixed budget: one fetch slot
every ``1 / B`` seconds, B = pages / ``--uniform`` hours; each slot fetches
the page with the earliest due time if it is due (a priority queue of due
times), else stays idle. All pages are due at time 0 (the first crawl).

Policies (the re-visit ones are :class:`extensions.revisit.policy.RevisitPolicy`,
fed each fetch's content fingerprint, deciding every due time):

* ``uniform``: every page every ``--uniform`` hours (the policy with
  minimum = initial = maximum): exactly the budget.
* ``proportional`` and ``optimal`` (oracles: they know the true rates):
  fixed intervals proportional to each page's change interval, and Cho and
  Garcia-Molina's freshness optimum (:func:`~extensions.revisit.estimate.optimal_interval`),
  each scaled to spend the budget.
* ``adaptive``: the Nutch/StormCrawler schedule (changed: x 0.8, unchanged:
  x 1.4), clamped to [minimum, ``--max-interval`` days], the minimum tuned
  (bisection) so the schedule uses the budget.
* ``estimate``: the change-rate estimate from each page's visit history and
  the freshness-optimal interval, clamped the same way, ``initial`` (which
  sets its budget) tuned the same way; ``estimate/4``: untuned, ``initial``
  a quarter of the uniform interval, so it asks for more fetches than the
  budget and due pages queue (what REVISIT_MAX_SHARE leaves to a crawl).

Measured exactly from the known change times, time-averaged over the
window after ``--warmup`` days: freshness (share of pages whose copy is up to
date) and age (hours a copy has been out of date, 0 while fresh), and the
fetches made. The table goes to stdout and ``--table``; freshness (and age)
over time to ``--out`` (PNG). Deterministic: no timing is measured.

    python -m bench.freshness --out bench/results/freshness.png --table bench/results/freshness.txt
"""

from __future__ import annotations

import argparse
import heapq
import math
import time
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from extensions.revisit.estimate import optimal_interval
from extensions.revisit.policy import RevisitPolicy

HOUR = 3600.0
DAY = 24 * HOUR


@dataclass(slots=True)
class Web:
    """The synthetic web: per page a change rate and its change times."""

    rates: np.ndarray
    changes: list[list[float]]


def synthetic_web(pages: int, fastest: float, slowest: float, horizon: float, seed: int) -> Web:
    """Rates log-uniform in [1/slowest, 1/fastest] per second; Poisson change times."""
    generator = np.random.default_rng(seed)
    rates = np.exp(generator.uniform(math.log(1 / slowest), math.log(1 / fastest), pages))
    changes = []
    for rate in rates:
        count = generator.poisson(rate * horizon)
        changes.append(sorted(generator.uniform(0.0, horizon, count).tolist()))
    return Web(rates=rates, changes=changes)


# -- schedules: when a page is due again ----------------------------------------

class PolicySchedule:
    """Due times from a RevisitPolicy; a page's content fingerprint is the
    number of changes it has had (a change: a new fingerprint)."""

    def __init__(self, policy: RevisitPolicy, pages: int) -> None:
        self.policy = policy
        self.records = [policy.first(page, 0.0) for page in range(pages)]

    def visit(self, page: int, now: float, content: int) -> float:
        record = self.policy.after_visit(self.records[page], now, status=200, content=content)
        self.records[page] = record
        return record.due


class FixedSchedule:
    """Each page at its own fixed interval (math.inf: never again)."""

    def __init__(self, intervals: list[float]) -> None:
        self.intervals = intervals

    def visit(self, page: int, now: float, content: int) -> float:
        return now + self.intervals[page]


# -- the simulation --------------------------------------------------------------

@dataclass
class Run:
    name: str
    freshness: float
    age_hours: float
    fetches: int
    slots: int
    note: str = ""
    times: list[float] = field(default_factory=list)
    fresh_curve: list[float] = field(default_factory=list)
    age_curve: list[float] = field(default_factory=list)


def _stale_integrals(fetched: float, change: float, until: float, start: float) -> tuple[float, float]:
    """Fresh seconds and age-seconds of a copy fetched at ``fetched`` (next
    change at ``change``) over [max(fetched, start), until]."""
    a, b = max(fetched, start), until
    if a >= b:
        return 0.0, 0.0
    fresh = max(0.0, min(change, b) - a)
    age = 0.0 if b <= change else ((b - change) ** 2 - max(0.0, a - change) ** 2) / 2
    return fresh, age


def simulate(web: Web, schedule: PolicySchedule | FixedSchedule, slot: float, horizon: float,
             warmup: float, sample: float, name: str = "", curve: bool = False) -> Run:
    """Fetch the earliest-due page in each slot it is due; measure over [warmup, horizon]."""
    pages = len(web.changes)
    heap = [(0.0, page) for page in range(pages)]
    heapq.heapify(heap)
    fetched_at = [0.0] * pages
    next_change = np.zeros(pages)  # first change after the copy was fetched (0: no copy yet)
    fresh_sum = age_sum = 0.0
    fetches = 0
    next_slot = 0
    samples = np.arange(0.0, horizon + sample / 2, sample) if curve else np.array([])
    sample_index = 0
    run = Run(name, 0.0, 0.0, 0, 0)
    while heap:
        due, page = heapq.heappop(heap)
        if due == math.inf:
            break
        index = max(next_slot, math.ceil(due / slot - 1e-9))
        now = index * slot
        if now > horizon:
            break
        while sample_index < len(samples) and samples[sample_index] <= now:
            moment = samples[sample_index]
            run.times.append(moment / DAY)
            run.fresh_curve.append(float(np.mean(next_change > moment)))
            run.age_curve.append(float(np.mean(np.maximum(0.0, moment - next_change))) / HOUR)
            sample_index += 1
        changes = web.changes[page]
        fresh, age = _stale_integrals(fetched_at[page], next_change[page], now, warmup)
        fresh_sum, age_sum = fresh_sum + fresh, age_sum + age
        seen = bisect_right(changes, now)
        fetched_at[page] = now
        next_change[page] = changes[seen] if seen < len(changes) else math.inf
        fetches += now >= warmup
        next_slot = index + 1
        heapq.heappush(heap, (schedule.visit(page, now, seen), page))
    for page in range(pages):
        fresh, age = _stale_integrals(fetched_at[page], next_change[page], horizon, warmup)
        fresh_sum, age_sum = fresh_sum + fresh, age_sum + age
    span = (horizon - warmup) * pages
    run.freshness, run.age_hours = fresh_sum / span, age_sum / span / HOUR
    run.fetches, run.slots = fetches, int((horizon - warmup) / slot)
    return run


# -- budgets -------------------------------------------------------------------------

def scaled(intervals: Callable[[float], list[float]], budget: float, low: float, high: float) -> list[float]:
    """``intervals(k)`` for the k in [low, high] whose fetch rate sum(1/I) is the budget."""
    for _ in range(100):
        middle = math.sqrt(low * high)
        rate = sum(1 / i for i in intervals(middle) if i < math.inf)
        low, high = (middle, high) if rate > budget else (low, middle)
    return intervals(high)


def tune(build: Callable[[float], PolicySchedule], web: Web, args: argparse.Namespace, slot: float,
         low: float, high: float) -> tuple[float, Run]:
    """The parameter in [low, high] (larger: fewer fetches) whose run uses
    between ``--fill`` and 100% of the slots, by bisection (log scale)."""
    best: tuple[float, Run] | None = None
    for _ in range(args.tune_steps):
        middle = math.sqrt(low * high)
        run = simulate(web, build(middle), slot, args.days * DAY, args.warmup * DAY, DAY)
        use = run.fetches / run.slots
        if use <= 0.999 and (best is None or use > best[1].fetches / best[1].slots):
            best = (middle, run)
        if use > 0.999:
            low = middle
        elif use < args.fill:
            high = middle
        else:
            break
    assert best is not None, "no parameter in range keeps within the budget"
    return best[0], best[1]


def runs(web: Web, args: argparse.Namespace) -> list[Run]:
    pages, horizon, warmup = len(web.rates), args.days * DAY, args.warmup * DAY
    uniform = args.uniform * HOUR
    slot, budget = uniform / pages, pages / uniform
    maximum, rates = args.max_interval * DAY, web.rates.tolist()

    def run(name: str, schedule: PolicySchedule | FixedSchedule, note: str = "") -> Run:
        result = simulate(web, schedule, slot, horizon, warmup, args.sample * HOUR, name, curve=True)
        result.note = note
        return result

    results = [run("uniform", PolicySchedule(RevisitPolicy(uniform, uniform, uniform), pages),
                   f"every {args.uniform:g} h")]
    proportional = scaled(lambda k: [k / r for r in rates], budget, 1e-6, 1e6)
    results.append(run("proportional", FixedSchedule(proportional), "oracle: I = k / rate"))
    optimal = scaled(lambda mu: [optimal_interval(r, mu) for r in rates], budget, 1.0, 1e9)
    abandoned = sum(i == math.inf for i in optimal)
    results.append(run("optimal", FixedSchedule(optimal), f"oracle; {abandoned} pages never re-visited"))

    def adaptive(minimum: float) -> PolicySchedule:
        initial = max(minimum, uniform)
        return PolicySchedule(RevisitPolicy(initial, minimum, maximum, schedule="adaptive"), pages)

    minimum, _ = tune(adaptive, web, args, slot, 60.0, uniform)
    results.append(run("adaptive", adaptive(minimum),
                       f"Nutch x0.8/x1.4, min {minimum / HOUR:.2f} h (tuned), max {args.max_interval:g} d"))

    def estimate(initial: float) -> PolicySchedule:
        return PolicySchedule(RevisitPolicy(initial, min(initial, args.min_interval * HOUR), maximum), pages)

    initial, _ = tune(estimate, web, args, slot, 60.0, maximum)
    results.append(run("estimate", estimate(initial),
                       f"initial {initial / HOUR:.2f} h (tuned), max {args.max_interval:g} d"))
    eager = uniform / 4  # asks for more than the budget: due pages wait, earliest due first
    results.append(run("estimate/4", estimate(eager),
                       f"initial {eager / HOUR:.2f} h (over budget: a backlog), max {args.max_interval:g} d"))
    return results


# -- report ---------------------------------------------------------------------------

def table(results: list[Run], args: argparse.Namespace) -> str:
    lines = [
        f"synthetic web: {args.pages} pages, Poisson change rates log-uniform between 1/{args.fastest:g} h "
        f"and 1/{args.slowest:g} h, seed {args.seed}",
        f"budget: {args.pages} fetches per {args.uniform:g} h; {args.days:g} simulated days, "
        f"measured after a {args.warmup:g}-day warm-up (exact, from the true change times)",
        f"{'policy':<13} {'freshness':>9} {'age (h)':>8} {'fetches':>8} {'of budget':>9}  notes",
    ]
    for run in results:
        lines.append(f"{run.name:<13} {run.freshness:>9.3f} {run.age_hours:>8.2f} {run.fetches:>8} "
                     f"{run.fetches / run.slots:>9.1%}  {run.note}")
    return "\n".join(lines)


def plot(results: list[Run], path: Path, args: argparse.Namespace) -> None:
    import matplotlib  # noqa: PLC0415 - only the benchmark draws

    matplotlib.use("Agg")
    from matplotlib import pyplot  # noqa: PLC0415

    figure, (top, bottom) = pyplot.subplots(2, 1, figsize=(8, 6.5), sharex=True)
    for run in results:
        style = ":" if run.name in ("proportional", "optimal") else "-"
        top.plot(run.times, run.fresh_curve, style, label=run.name, linewidth=1.2)
        bottom.plot(run.times, run.age_curve, style, label=run.name, linewidth=1.2)
    top.set_ylabel("freshness (share of fresh copies)")
    bottom.set_ylabel("mean age of copies (hours, log)")
    bottom.set_yscale("log")  # the oracles' never re-visited pages age without bound
    bottom.set_xlabel("simulated days")
    for axes in (top, bottom):
        axes.axvline(args.warmup, color="grey", linewidth=0.8, linestyle="--")
        axes.grid(alpha=0.3)
    top.set_title(f"{args.pages} pages, change rates 1/{args.fastest:g} h .. 1/{args.slowest:g} h, "
                  f"budget {args.pages} fetches per {args.uniform:g} h", fontsize=9)
    top.legend(fontsize=8, ncol=3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    pyplot.close(figure)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--fastest", type=float, default=1.0, help="hours between changes, fastest page")
    parser.add_argument("--slowest", type=float, default=30 * 24.0, help="hours between changes, slowest page")
    parser.add_argument("--uniform", type=float, default=24.0,
                        help="hours: the budget is --pages fetches per this long")
    parser.add_argument("--days", type=float, default=120.0, help="simulated days")
    parser.add_argument("--warmup", type=float, default=30.0, help="days not measured")
    parser.add_argument("--max-interval", type=float, default=30.0, help="days (adaptive, estimate)")
    parser.add_argument("--min-interval", type=float, default=1.0, help="hours (estimate)")
    parser.add_argument("--sample", type=float, default=6.0, help="hours between curve points")
    parser.add_argument("--fill", type=float, default=0.97, help="tuned policies use at least this share")
    parser.add_argument("--tune-steps", type=int, default=14)
    parser.add_argument("--seed", type=int, default=15)
    parser.add_argument("--out", type=Path, default=Path("freshness.png"))
    parser.add_argument("--table", type=Path, default=None)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    web = synthetic_web(args.pages, args.fastest * HOUR, args.slowest * HOUR, args.days * DAY, args.seed)
    results = runs(web, args)
    text = table(results, args)
    print(text)
    print(f"({time.perf_counter() - started:.0f} s)")
    if args.table:
        args.table.write_text(text + "\n")
    plot(results, args.out, args)


if __name__ == "__main__":
    main()
