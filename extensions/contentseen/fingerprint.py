"""64-bit content fingerprints for the exact content-seen test.

Two modes, chosen by the caller (a ``CONTENT_SEEN_*`` setting):

* ``raw``: MurmurHash3 (x64, 128-bit, first half) of the body bytes as
  fetched; any byte of difference makes a different document.
* ``normalised``: the same hash of the visible text with whitespace runs
  collapsed (:func:`extensions.contentseen.text.visible_text`), as UTF-8:
  pages that differ only in whitespace, markup, comments or scripts are one
  document. A page without visible text falls back to its body bytes (all
  such pages share the empty text and would otherwise be copies of the
  first one).

Fingerprints are unsigned 64-bit ``int``; :func:`to_signed64` and
:func:`from_signed64` convert for SQLite's signed INTEGER. Pure: no Scrapy.
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
