"""64-bit content fingerprints (MurmurHash3 x64, first half) for the exact test: ``raw``
hashes the body bytes, ``normalised`` the visible text as UTF-8; unsigned, with
:func:`to_signed64` for SQLite's INTEGER."""

from __future__ import annotations

from typing import Final

import mmh3

RAW: Final = "raw"
NORMALISED: Final = "normalised"
MODES: Final = (RAW, NORMALISED)
SEED: Final = 0x5EEDC0DE


def bytes_fingerprint(data: bytes) -> int:
    """The unsigned 64-bit fingerprint of ``data``."""
    return mmh3.hash64(data, SEED, signed=False)[0]


def text_fingerprint(text: str) -> int:
    """The fingerprint of ``text`` as given, not normalised again: pass
    :func:`visible_text`'s output."""
    return bytes_fingerprint(text.encode("utf-8", "surrogatepass"))


def to_signed64(value: int) -> int:
    """An unsigned 64-bit value as SQLite's signed INTEGER."""
    return value - (1 << 64) if value >= (1 << 63) else value


def from_signed64(value: int) -> int:
    """The inverse of :func:`to_signed64`."""
    return value + (1 << 64) if value < 0 else value
