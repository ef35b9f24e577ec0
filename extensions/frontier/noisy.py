"""Noisy events: logged once, then only counted."""

from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger("extensions.frontier.scheduler")


class OnceLog:
    """Count ``frontier/<key>`` every time; log the first case of each key."""

    def __init__(self, stats: Any) -> None:
        self.stats = stats
        self.logged: set[str] = set()

    def note(self, key: str, message: str, *args: Any) -> None:
        self.stats.inc_value(f"frontier/{key}")
        if key not in self.logged:
            self.logged.add(key)
            logger.warning(message + " (further cases only counted in frontier/%s)", *args, key)
