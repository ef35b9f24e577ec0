"""What the content-seen test needs of one document, computed where the body is.

The spider puts them on the item (``content_features``, never exported;
:class:`extensions.processors.content_features.ContentFeatureExtractor`);
:class:`~extensions.pipelines.contentseen.ContentSeenPipeline` judges from
them alone:

* ``fingerprint``: 64-bit; in ``normalised`` mode the visible text's
  (:func:`~extensions.contentseen.fingerprint.text_fingerprint`), in ``raw``
  mode, for a document that is not HTML or plain text, for a text document
  without visible text (``empty_text``: a frameset, an image-only page) and
  for one over ``max_text_bytes``, the body bytes';
* ``near``: simhash, resemblance sketch and distinct shingle count of the
  visible text (:func:`~extensions.contentseen.resemblance.near_features`);
  None for a document that is not text, has no visible text, or when the
  near-duplicate test is off.

The text is taken from at most the first ``max_text_bytes`` of the body;
what travels on the item is two integers and a sketch of at most 256 bytes.
Pure: no Scrapy.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from extensions.contentseen.fingerprint import MODES, NORMALISED, bytes_fingerprint, text_fingerprint
from extensions.contentseen.resemblance import NearFeatures, near_features
from extensions.contentseen.text import visible_text

TEXT_TYPES: Final = ("text/html", "application/xhtml+xml", "text/plain")


class ContentFeatures(NamedTuple):
    """One document's content-seen data (module docstring)."""

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
    """The features of ``body`` (``mime``: lower-case, without parameters).

    ``text``: the visible text of ``body[:max_text_bytes]`` when the caller
    has it already (the page's one parse); otherwise parsed here if wanted.
    """
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
