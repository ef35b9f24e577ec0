"""``REVISIT_*`` settings to plain values for the re-visit components; invalid
values fail at start, naming the setting and its value.
"""

from __future__ import annotations

import math
from typing import Any

from extensions import defaults
from extensions.defaults import checked
from extensions.revisit.policy import SCHEDULES, RevisitPolicy

SECONDS = "a number of seconds > 0"


def policy_from_settings(settings: Any) -> RevisitPolicy:
    """The :class:`~.policy.RevisitPolicy` the ``REVISIT_*`` settings describe."""
    initial = checked(settings, "REVISIT_INITIAL_INTERVAL", lambda value: 0 < value < math.inf, SECONDS)
    minimum = checked(settings, "REVISIT_MIN_INTERVAL", lambda value: 0 < value <= initial,
                      f"{SECONDS} and <= REVISIT_INITIAL_INTERVAL ({initial!r})")
    maximum = checked(settings, "REVISIT_MAX_INTERVAL", lambda value: initial <= value < math.inf,
                      f"{SECONDS} and >= REVISIT_INITIAL_INTERVAL ({initial!r})")
    schedule = settings.get("REVISIT_SCHEDULE", defaults.REVISIT_SCHEDULE)
    if schedule not in SCHEDULES:
        raise ValueError(f"REVISIT_SCHEDULE must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    return RevisitPolicy(
        initial, minimum, maximum, schedule=schedule,
        gone_after=checked(settings, "REVISIT_GONE_AFTER", lambda value: value >= 1, "an integer >= 1", int),
        increase=checked(settings, "REVISIT_ADAPTIVE_INCREASE", lambda value: 0 <= value < math.inf, ">= 0"),
        decrease=checked(settings, "REVISIT_ADAPTIVE_DECREASE", lambda value: 0 <= value < 1, ">= 0 and < 1"),
    )


def max_share_from_settings(settings: Any) -> float:
    """``REVISIT_MAX_SHARE``, a share in [0, 1]."""
    return checked(settings, "REVISIT_MAX_SHARE", lambda value: 0 <= value <= 1, "between 0 and 1")
