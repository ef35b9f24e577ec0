"""What the content-seen test needs of one document, computed where the body is.

``fingerprint``: the visible text's in ``normalised`` mode; else, and for a non-text,
textless (``empty_text``) or over-``max_text_bytes`` document, the body bytes'. ``near``:
the visible text's simhash, sketch and shingle count (None: not text, empty, or off)."""

from __future__ import annotations

from typing import Final, NamedTuple

from extensions.contentseen.fingerprint import MODES, NORMALISED, bytes_fingerprint, text_fingerprint
from extensions.contentseen.resemblance import NearFeatures, near_features
from extensions.contentseen.text import visible_text

TEXT_TYPES: Final = ("text/html", "application/xhtml+xml", "text/plain")


class ContentFeatures(NamedTuple):
    """One document's content-seen data (module docstring); travels on the item."""

    fingerprint: int
    near: NearFeatures | None = None
    empty_text: bool = False  # normalised mode: a text document without visible text


def wants_text(mime: str, mode: str, near: bool) -> bool:
    """Whether :func:`content_features` reads the visible text of a ``mime``
    document (raw mode without the near test uses no text: no parse)."""
    return mime in TEXT_TYPES and (near or mode == NORMALISED)


def content_features(body: bytes, encoding: str | None, mime: str, *, mode: str = NORMALISED,
                     max_text_bytes: int = 1 << 20, near: bool = True,
                     text: str | None = None) -> ContentFeatures:
    """The features of ``body`` (``mime``: lower-case, without parameters); ``text``: the
    visible text of ``body[:max_text_bytes]`` if the caller has it (else parsed here)."""
    if mode not in MODES:
        raise ValueError(f"fingerprint mode must be one of {MODES}, not {mode!r}")
    large = len(body) > max_text_bytes
    if not wants_text(mime, mode, near):
        text = None
    elif text is None:
        text = visible_text(body[:max_text_bytes] if large else body, encoding)
    if mode == NORMALISED and text and not large:
        fingerprint = text_fingerprint(text)
    else:
        fingerprint = bytes_fingerprint(body)
    return ContentFeatures(
        fingerprint,
        near_features(text) if near and text else None,
        mode == NORMALISED and text == "",
    )
