"""Which store, from the settings: the backend choices and the readers of
their settings, for :mod:`extensions.store.factory` and
:mod:`extensions.store.redis_factory` (which builds the Redis ones). Invalid
values raise ``ValueError`` naming the setting and its value.
"""

from __future__ import annotations

from typing import Any

from extensions import defaults

BACKENDS = ("sqlite", "redis", "memory")
CONTENT_BACKENDS = ("auto", "sqlite", "redis")


def setting(settings: Any, name: str) -> Any:
    """A setting with our default (the crawler may run without the add-on)."""
    value = settings.get(name)
    return getattr(defaults, name) if value is None else value


def number_setting(settings: Any, name: str, minimum: float, kind: type = float) -> Any:
    """A number setting (with our default), checked against ``minimum``."""
    raw = setting(settings, name)
    try:
        value = kind(raw)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a number >= {minimum}, got {raw!r}") from err
    if value < minimum:
        raise ValueError(f"{name} must be a number >= {minimum}, got {raw!r}")
    return value


def flag_setting(settings: Any, name: str) -> bool:
    """A boolean setting with our default."""
    return settings.getbool(name, getattr(defaults, name))


# -- which store ---------------------------------------------------------------------
def frontier_backend(settings: Any) -> str:
    """``FRONTIER_BACKEND``, checked; ``FRONTIER_STORE`` is refused."""
    if settings.get("FRONTIER_STORE"):
        raise ValueError(f"FRONTIER_STORE ({settings.get('FRONTIER_STORE')!r}) is no longer supported: "
                         'set FRONTIER_BACKEND to "sqlite", "redis" or "memory"')
    backend = setting(settings, "FRONTIER_BACKEND") or "sqlite"
    if backend not in BACKENDS:
        raise ValueError(f'FRONTIER_BACKEND must be "sqlite", "redis" or "memory", got {backend!r}')
    return backend


def seen_backend(settings: Any) -> str:
    """``FRONTIER_SEEN_BACKEND``: "exact" or "bloom"."""
    backend = setting(settings, "FRONTIER_SEEN_BACKEND")
    if backend not in ("exact", "bloom"):
        raise ValueError(f'FRONTIER_SEEN_BACKEND must be "exact" or "bloom", got {backend!r}')
    return backend


def content_backend(settings: Any) -> str:
    """``CONTENTSEEN_BACKEND`` resolved: "sqlite" or "redis" ("auto" follows
    ``FRONTIER_BACKEND``, so processes sharing a frontier share the sets)."""
    backend = setting(settings, "CONTENTSEEN_BACKEND")
    if backend not in CONTENT_BACKENDS:
        raise ValueError(f'CONTENTSEEN_BACKEND must be "auto", "sqlite" or "redis", got {backend!r}')
    if backend == "auto":
        return "redis" if settings.get("FRONTIER_BACKEND") == "redis" else "sqlite"
    return backend
