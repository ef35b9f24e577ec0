"""Flat keyword values for a :class:`~extensions.frontier.scheduler.Frontier`
built by hand (tests and benchmarks): :func:`frontier_arguments` sorts them
into its parts, its :class:`~extensions.frontier.options.FrontierOptions` and
its :class:`~extensions.frontier.options.Runtime`. A crawl's frontier gets
them from its settings (``extensions/frontier/config.py``)."""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from extensions.frontier.options import FrontierOptions, Runtime

PARTS = ("dispatch", "prioritizer", "politeness", "hostkey", "ledger", "bloom", "revisit_schedule")
OPTIONS = frozenset(field.name for field in fields(FrontierOptions))
RUNTIME = frozenset(field.name for field in fields(Runtime))


def frontier_arguments(**values: Any) -> dict[str, Any]:
    """Flat keyword values as ``Frontier.__init__``'s keyword arguments; unknown: TypeError."""
    unknown = set(values) - OPTIONS - RUNTIME - set(PARTS)
    if unknown:
        raise TypeError(f"unknown frontier arguments: {', '.join(sorted(unknown))}")
    arguments = {name: values[name] for name in PARTS if name in values}
    arguments["options"] = FrontierOptions(**{k: v for k, v in values.items() if k in OPTIONS})
    arguments["runtime"] = Runtime(**{k: v for k, v in values.items() if k in RUNTIME})
    return arguments
