"""Every Lua script of the Redis backend: the files in ``lua/``, each saying its KEYS, ARGV and
answer in its first comment. :func:`lua` reads one, its ``--- @include "NAME"`` lines and ``$NAME``
parameters filled in, and registers it (called by SHA)."""

from __future__ import annotations

import re
from importlib import resources

from extensions.backends.redis.connection import sha_of
from extensions.backends.redis.rows import LUA_PARAMETERS

_INCLUDE = re.compile(r'^--- @include "([\w-]+)"$', re.MULTILINE)
_PARAMETER = re.compile(r"\$([A-Z][A-Z0-9_]*)")
_FILES = resources.files(__package__) / "lua"
NAMES: dict[str, str] = {}  # SHA -> the script's name, for diagnostics (bench.distributed --scripts)


def source(name: str, **parameters: object) -> str:
    """The text of ``lua/NAME.lua``, includes and parameters filled in."""
    values = {**LUA_PARAMETERS, **parameters}
    included: set[str] = set()

    def include(match: re.Match[str]) -> str:
        if match[1] in included:
            return ""
        included.add(match[1])
        return _INCLUDE.sub(include, (_FILES / "include" / f"{match[1]}.lua").read_text())

    def value(match: re.Match[str]) -> str:
        if match[1] not in values:
            raise KeyError(f"lua/{name}.lua: no value for ${match[1]}")
        return str(values[match[1]])

    return _PARAMETER.sub(value, _INCLUDE.sub(include, (_FILES / f"{name}.lua").read_text()))


def lua(name: str, **parameters: object) -> str:
    """:func:`source`, registered (send it as ``("EVAL", it, ...)``)."""
    text = source(name, **parameters)
    named = [str(value) for value in parameters.values() if isinstance(value, str)]
    NAMES[sha_of(text)] = f"{name}({', '.join(named)})" if named else name
    return text
