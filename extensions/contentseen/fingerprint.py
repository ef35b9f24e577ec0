"""64-bit content fingerprints (MurmurHash3 x64, first half) for the exact test.

``raw`` hashes the body bytes as fetched; ``normalised`` hashes the visible
text (:func:`extensions.contentseen.text.visible_text`) as UTF-8, falling
back to the body bytes for a page without visible text. Fingerprints are
unsigned 64-bit; :func:`to_signed64` converts for SQLite's INTEGER.
"""

from __future__ import annotations

from typing import Final

import mmh3

from extensions.contentseen.text import visible_text

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


def body_fingerprint(body: bytes, mode: str = RAW, encoding: str | None = None) -> int:
    """The fingerprint of an HTML ``body`` in ``mode`` (``raw`` or ``normalised``).

    ``encoding`` (the response's) matters only to ``normalised``.
    """
    if mode == RAW:
        return bytes_fingerprint(body)
    if mode == NORMALISED:
        text = visible_text(body, encoding)
        return text_fingerprint(text) if text else bytes_fingerprint(body)
    raise ValueError(f"fingerprint mode must be one of {MODES}, not {mode!r}")


def to_signed64(value: int) -> int:
    """An unsigned 64-bit value as SQLite's signed INTEGER."""
    return value - (1 << 64) if value >= (1 << 63) else value


def from_signed64(value: int) -> int:
    """The inverse of :func:`to_signed64`."""
    return value + (1 << 64) if value < 0 else value
