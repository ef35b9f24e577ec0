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
#: a top-level definition starts at a ``local`` in the first column, with the comment lines above it
_DEFINITION = re.compile(r"^(?=(?:--[^\n]*\n)*local )", re.MULTILINE)
_DECLARES = re.compile(r"(?:--[^\n]*\n)*local (?:function )?([\w, ]+?)\s*(?:[=(\n]|$)")
_NAMES = re.compile(r"\s*,\s*")
_WORD = re.compile(r"[A-Za-z_]\w*")
_COMMENTS = re.compile(r"(?:\s*--[^\n]*\n?)*\s*")
NAMES: dict[str, str] = {}  # SHA -> the script's name, for diagnostics (bench.distributed --scripts)


def source(name: str, **parameters: object) -> str:
    """The text of ``lua/NAME.lua``, its includes' definitions that it reaches
    first (all of them for ``include/NAME``), and parameters filled in."""
    values = {**LUA_PARAMETERS, **parameters}
    included: list[str] = []
    seen: set[str] = set()

    def include(match: re.Match[str]) -> str:
        if match[1] not in seen:
            seen.add(match[1])
            included.append(_INCLUDE.sub(include, (_FILES / "include" / f"{match[1]}.lua").read_text()))
        return ""

    def value(match: re.Match[str]) -> str:
        if match[1] not in values:
            raise KeyError(f"lua/{name}.lua: no value for ${match[1]}")
        return str(values[match[1]])

    body = _PARAMETER.sub(value, _INCLUDE.sub(include, (_FILES / f"{name}.lua").read_text()))
    definitions = _PARAMETER.sub(value, "".join(included))
    if name.startswith("include/"):  # a library for the caller's own code: whole
        return definitions + body
    return reached(definitions, body) + body


def reached(definitions: str, body: str) -> str:
    """The top-level ``local`` definitions of ``definitions`` that ``body``
    reaches by name, directly or through others, in their order: a script
    does not re-create on every call the functions it never calls."""
    chunks = [chunk for chunk in _DEFINITION.split(definitions) if chunk.strip()]
    names = [set(_NAMES.split(match[1])) if (match := _DECLARES.match(chunk)) else None for chunk in chunks]
    words, kept = set(_WORD.findall(body)), [False] * len(chunks)
    grown = True
    while grown:
        grown = False
        for i, chunk in enumerate(chunks):
            if not kept[i] and (names[i] is None and not _COMMENTS.fullmatch(chunk) or names[i] and names[i] & words):
                kept[i], grown = True, True
                words |= set(_WORD.findall(chunk))
    return "".join(chunk for chunk, keep in zip(chunks, kept) if keep)


def lua(name: str, **parameters: object) -> str:
    """:func:`source`, registered (send it as ``("EVAL", it, ...)``)."""
    text = source(name, **parameters)
    named = [str(value) for value in parameters.values() if isinstance(value, str)]
    NAMES[sha_of(text)] = f"{name}({', '.join(named)})" if named else name
    return text
