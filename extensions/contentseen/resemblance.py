"""Resemblance of two pages from bottom-k sketches (Broder 1997; the sketch:
docs/reference/formats.md)."""

from __future__ import annotations

from typing import Final, NamedTuple

import numpy as np

from extensions.contentseen.simhash import (
    DEFAULT_SHINGLE_WORDS,
    shingle_sets,
    simhash_of,
    sorted_unique,
)

SKETCH_SIZE: Final = 64
#: significant bits of a sketch's largest value that a comparison keeps
SKETCH_VALUE_BITS: Final = 16
_BIG_U32 = np.dtype(">u4")
_SHIFT32 = np.uint64(32)


class NearFeatures(NamedTuple):
    """What the near-duplicate test needs of a page."""

    simhash: int
    sketch: bytes  # bottom-k sketch, SKETCH_SIZE big-endian uint32 at most
    shingles: int  # distinct shingles of the page


def sketch_of(hashes: np.ndarray, size: int = SKETCH_SIZE) -> bytes:
    """The bottom-``size`` sketch of sorted distinct shingle hashes (``uint64``)."""
    # several 64-bit hashes may share their top 32 bits: take a few more, keep the distinct
    top = (hashes[:2 * size] >> _SHIFT32).astype(_BIG_U32)
    if np.count_nonzero(top[1:] == top[:-1]):
        top = sorted_unique(top)
    return top[:size].tobytes()


def near_features(text: str, shingle_words: int = DEFAULT_SHINGLE_WORDS) -> NearFeatures:
    """The simhash, sketch and distinct shingle count of ``text``: the
    simhash (candidates only) is taken with digits folded; the sketch and
    count keep the numbers."""
    hashes, candidate = shingle_sets(text, shingle_words)
    return NearFeatures(simhash_of(candidate), sketch_of(hashes), len(hashes))


def sketch_shift(largest: int, bits: int = SKETCH_VALUE_BITS) -> int:
    """The low bits a sketch whose largest value is ``largest`` may drop:
    every comparison drops at least as many."""
    return max(0, largest.bit_length() - bits)


def resemblance(first: bytes, second: bytes, size: int = SKETCH_SIZE, bits: int = SKETCH_VALUE_BITS) -> float:
    """Estimated resemblance (0.0 .. 1.0) of two :func:`sketch_of` sketches of one ``size``,
    compared at ``bits`` significant bits (:func:`sketch_shift`); an empty one resembles nothing."""
    ours = np.frombuffer(first, dtype=_BIG_U32)
    theirs = np.frombuffer(second, dtype=_BIG_U32)
    if len(ours) and len(theirs):
        shift = np.uint32(sketch_shift(int(max(ours.max(), theirs.max())), bits))
        if shift:
            ours, theirs = sorted_unique(ours >> shift), sorted_unique(theirs >> shift)
    union = sorted_unique(np.concatenate((ours, theirs)))[:size]
    if len(union) == 0:
        return 0.0
    both = np.intersect1d(ours, theirs, assume_unique=True)
    return int(np.count_nonzero(both <= union[-1])) / len(union)
