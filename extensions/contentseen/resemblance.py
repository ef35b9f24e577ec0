"""Resemblance of two pages from small bottom-k sketches (Broder 1997).

The simhash index (:mod:`extensions.contentseen.nearindex`) finds
candidates; short or templated pages land near each other by chance, so a
candidate is a near-duplicate only when the pages' estimated resemblance
(Jaccard similarity of their sets of distinct word 3-shingles,
``|A & B| / |A | B|``) reaches a threshold.

Sketch: the :data:`SKETCH_SIZE` smallest distinct values among the top 32
bits of a page's shingle hashes (the hashes are uniform after MurmurHash's
finaliser, so the smallest ones are a uniform sample of the set), packed as
big-endian ``uint32``: 256 bytes. A page with fewer distinct shingles keeps
them all, so for short pages, where the simhash is least reliable, the
estimate is exact. Estimate (Broder's): the ``k`` smallest values of the
union of the two sketches are the ``k`` smallest of the union of the sets,
and the share of them found in both sketches estimates the resemblance,
with standard deviation about ``sqrt(r (1 - r) / k)``. Pure: numpy only,
no Scrapy.
"""

from __future__ import annotations

from typing import Final, NamedTuple

import numpy as np

from extensions.contentseen.simhash import DEFAULT_SHINGLE_WORDS, shingle_set, shingle_sets, simhash_of

SKETCH_SIZE: Final = 64
_BIG_U32 = np.dtype(">u4")
_SHIFT32 = np.uint64(32)


class NearFeatures(NamedTuple):
    """What the near-duplicate test needs of a page."""

    simhash: int
    sketch: bytes  # bottom-k sketch, SKETCH_SIZE big-endian uint32 at most
    shingles: int  # distinct shingles of the page


def sketch_of(hashes: np.ndarray, size: int = SKETCH_SIZE) -> bytes:
    """The bottom-``size`` sketch of sorted distinct shingle hashes (``uint64``)."""
    # several 64-bit hashes may share their top 32 bits: take a few more
    # than needed, then keep the distinct ones (sorted: a repeat is next to
    # its twin, and rarely there is one)
    top = (hashes[:2 * size] >> _SHIFT32).astype(_BIG_U32)
    if np.count_nonzero(top[1:] == top[:-1]):
        top = np.unique(top)
    return top[:size].tobytes()


def near_features(text: str, shingle_words: int = DEFAULT_SHINGLE_WORDS,
                  candidate_fold_digits: bool = True) -> NearFeatures:
    """The simhash, sketch and distinct shingle count of ``text``.

    The sketch and the count take numbers as tokens; with
    ``candidate_fold_digits`` the simhash (which only finds candidates) is
    taken with digits folded, so pages that differ in numbers stay within
    the distance while the sketch still tells unrelated tables apart.
    """
    if candidate_fold_digits:  # one tokenisation for both sets
        hashes, candidate = shingle_sets(text, shingle_words)
    else:
        candidate = hashes = shingle_set(text, shingle_words)
    return NearFeatures(simhash_of(candidate), sketch_of(hashes), len(hashes))


def resemblance(first: bytes, second: bytes, size: int = SKETCH_SIZE) -> float:
    """Estimated resemblance of two pages from their sketches (0.0 .. 1.0).

    Both sketches must come from :func:`sketch_of` with the same ``size``;
    an empty sketch resembles nothing.
    """
    ours = np.frombuffer(first, dtype=_BIG_U32)
    theirs = np.frombuffer(second, dtype=_BIG_U32)
    union = np.union1d(ours, theirs)[:size]
    if len(union) == 0:
        return 0.0
    both = np.intersect1d(ours, theirs, assume_unique=True)
    return int(np.count_nonzero(both <= union[-1])) / len(union)


def exact_resemblance(first: np.ndarray, second: np.ndarray) -> float:
    """The exact resemblance of two shingle sets (:func:`shingle_set` output)."""
    union = len(np.union1d(first, second))
    return len(np.intersect1d(first, second, assume_unique=True)) / union if union else 0.0
