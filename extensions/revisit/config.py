"""``REVISIT_*`` settings to plain values for the re-visit components; invalid
values fail at start, naming the setting and its value.
"""

from __future__ import annotations

import math
from typing import Any

from extensions import defaults
from extensions.revisit.policy import SCHEDULES, RevisitPolicy


def _number(settings: Any, name: str) -> float:
    try:
        value = settings.getfloat(name)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number, got {settings.get(name)!r}") from err
    if math.isnan(value):
        raise ValueError(f"{name} must be a number, got {settings.get(name)!r}")
    return value


def _seconds(settings: Any, name: str) -> float:
    value = _number(settings, name)
    if not 0 < value < math.inf:
        raise ValueError(f"{name} must be a number of seconds > 0, got {settings.get(name)!r}")
    return value


def _intervals(settings: Any) -> tuple[float, float, float]:
    """(initial, minimum, maximum), with minimum <= initial <= maximum."""
    initial = _seconds(settings, "REVISIT_INITIAL_INTERVAL")
    minimum = _seconds(settings, "REVISIT_MIN_INTERVAL")
    maximum = _seconds(settings, "REVISIT_MAX_INTERVAL")
    if minimum > initial:
        raise ValueError(f"REVISIT_MIN_INTERVAL must be <= REVISIT_INITIAL_INTERVAL ({initial!r}), "
                         f"got {settings.get('REVISIT_MIN_INTERVAL')!r}")
    if maximum < initial:
        raise ValueError(f"REVISIT_MAX_INTERVAL must be >= REVISIT_INITIAL_INTERVAL ({initial!r}), "
                         f"got {settings.get('REVISIT_MAX_INTERVAL')!r}")
    return initial, minimum, maximum


def _gone_after(settings: Any) -> int:
    value = settings.get("REVISIT_GONE_AFTER")
    try:
        count = settings.getint("REVISIT_GONE_AFTER")
    except (TypeError, ValueError) as err:
        raise ValueError(f"REVISIT_GONE_AFTER must be an integer >= 1, got {value!r}") from err
    if count < 1 or (isinstance(value, float) and value != count):
        raise ValueError(f"REVISIT_GONE_AFTER must be an integer >= 1, got {value!r}")
    return count


def _adaptive_factors(settings: Any) -> tuple[float, float]:
    """(increase, decrease) of the "adaptive" schedule."""
    increase = _number(settings, "REVISIT_ADAPTIVE_INCREASE")
    if not 0 <= increase < math.inf:
        raise ValueError(f"REVISIT_ADAPTIVE_INCREASE must be >= 0, got "
                         f"{settings.get('REVISIT_ADAPTIVE_INCREASE')!r}")
    decrease = _number(settings, "REVISIT_ADAPTIVE_DECREASE")
    if not 0 <= decrease < 1:
        raise ValueError(f"REVISIT_ADAPTIVE_DECREASE must be >= 0 and < 1, got "
                         f"{settings.get('REVISIT_ADAPTIVE_DECREASE')!r}")
    return increase, decrease


def policy_from_settings(settings: Any) -> RevisitPolicy:
    """The :class:`~.policy.RevisitPolicy` the ``REVISIT_*`` settings describe."""
    settings = defaults.with_defaults(settings, "REVISIT_")
    initial, minimum, maximum = _intervals(settings)
    schedule = settings.get("REVISIT_SCHEDULE")
    if schedule not in SCHEDULES:
        raise ValueError(f"REVISIT_SCHEDULE must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    increase, decrease = _adaptive_factors(settings)
    return RevisitPolicy(initial, minimum, maximum, gone_after=_gone_after(settings), schedule=schedule,
                         increase=increase, decrease=decrease)


def max_share_from_settings(settings: Any) -> float:
    """``REVISIT_MAX_SHARE``, a share in [0, 1]."""
    settings = defaults.with_defaults(settings, "REVISIT_")
    share = _number(settings, "REVISIT_MAX_SHARE")
    if not 0 <= share <= 1:
        raise ValueError(f"REVISIT_MAX_SHARE must be between 0 and 1, got {settings.get('REVISIT_MAX_SHARE')!r}")
    return share
