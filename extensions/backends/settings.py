"""Readers of the backends' settings with our defaults (the crawler may run without the
add-on); an invalid value raises ``ValueError`` naming the setting and its value."""

from __future__ import annotations

from typing import Any

from extensions import defaults
from extensions.defaults import number_setting  # noqa: F401 - the backends' readers, in one place


def setting(settings: Any, name: str) -> Any:
    """A setting with our default (the crawler may run without the add-on)."""
    value = settings.get(name)
    return getattr(defaults, name) if value is None else value


def flag_setting(settings: Any, name: str) -> bool:
    return settings.getbool(name, getattr(defaults, name))


# -- choices inside a backend ---------------------------------------------------------
def seen_backend(settings: Any) -> str:
    """``FRONTIER_SEEN_BACKEND``: "exact" or "bloom"."""
    backend = setting(settings, "FRONTIER_SEEN_BACKEND")
    if backend not in ("exact", "bloom"):
        raise ValueError(f'FRONTIER_SEEN_BACKEND must be "exact" or "bloom", got {backend!r}')
    return backend
