"""The per-page fast paths of near-duplicate features give exactly what
the plain implementations give: the short-text shingler (cached word terms,
both rows from one look-up per word) against the vectorised tokeniser, and
simhash_of / sketch_of against their definitions, on the test web's texts,
real documentation, edge cases and random texts."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extensions.contentseen import simhash
from extensions.contentseen.resemblance import SKETCH_SIZE, near_features, sketch_of
from extensions.contentseen.simhash import (
    MAX_SHINGLE_WORDS,
    SHORT_TEXT_BYTES,
    WORD_CACHE_SIZE,
    normalised_bytes,
    shingle_hashes,
    shingle_sets,
    simhash_of,
    token_hashes,
)
from extensions.contentseen.text import visible_text
from tests.pagecorpus import real_pages, synthetic_pages


def vectorised_set(text: str, shingle_words: int, fold_digits: bool) -> list[int]:
    """The distinct shingle hashes from the numpy tokeniser (no word cache)."""
    with np.errstate(over="ignore"):
        tokens = token_hashes(normalised_bytes(text, fold_digits))
        return np.unique(shingle_hashes(tokens, shingle_words)).tolist()


def defined_simhash(hashes: list[int]) -> int:
    """Bit i is set when more than half of the hashes have it: Python ints."""
    return sum(1 << bit for bit in range(64) if 2 * sum(value >> bit & 1 for value in hashes) > len(hashes))


def defined_sketch(hashes: np.ndarray, size: int = SKETCH_SIZE) -> bytes:
    """The bottom-``size`` distinct top halves, big-endian (the old code)."""
    top = (hashes[:2 * size] >> np.uint64(32)).astype(np.uint32)
    return np.unique(top)[:size].astype(np.dtype(">u4")).tobytes()


def assert_as_defined(text: str, shingle_words: int = 3) -> None:
    plain, folded = shingle_sets(text, shingle_words)
    assert plain.tolist() == vectorised_set(text, shingle_words, False), text[:80]
    assert folded.tolist() == vectorised_set(text, shingle_words, True), text[:80]
    assert (folded is plain) == (normalised_bytes(text, True).tobytes() == normalised_bytes(text).tobytes())
    if shingle_words == 3:
        features = near_features(text)
        assert features.simhash == defined_simhash(folded.tolist())
        assert features.sketch == defined_sketch(plain)
        assert features.shingles == len(plain)


EDGE_TEXTS = [
    "", " ", "  \n\t ", "a", "7", "é", "東京", "a b", "1 2", "a b c", "a a a a a a", "0 00 000 0 00 000",
    "x" * 64, "x" * 65, "y" * 64 + "9", "z" * 300 + " 12 " + "z" * 300,
    "Straße naïve 東京 café 2024-05-01 v2.4.1", "\ufffd\ufffd \u00a0nbsp\u00a0 ok", "A-B_C.D/E 9",
    "the same words the same words the same words the same words",
    " ".join(["river copper 42"] * 50), " ".join(f"w{n}" for n in range(5000)),
]


def test_edge_texts_for_every_shingle_width() -> None:
    for shingle_words in (1, 2, 3, 4, 7, MAX_SHINGLE_WORDS):
        for text in EDGE_TEXTS:
            assert_as_defined(text, shingle_words)


def test_texts_either_side_of_the_short_text_limit() -> None:
    rng = random.Random(11)
    vocabulary = ["river", "copper", "Straße", "naïve", "東京", "v2", "1999", "x" * 80 + "3"]
    text = " ".join(rng.choice(vocabulary) for _ in range(SHORT_TEXT_BYTES // 3))
    for cut in (SHORT_TEXT_BYTES - 7, SHORT_TEXT_BYTES, SHORT_TEXT_BYTES + 1, SHORT_TEXT_BYTES + 500):
        sample = text[:cut]
        assert_as_defined(sample)
    assert len(normalised_bytes(text)) > SHORT_TEXT_BYTES


def test_word_cache_overflow_keeps_the_hashes() -> None:
    words = [f"q{n}x" for n in range(WORD_CACHE_SIZE + 300)]
    text = " ".join(words)[:SHORT_TEXT_BYTES]
    assert_as_defined(text)
    assert_as_defined(" ".join(reversed(words))[:SHORT_TEXT_BYTES])
    assert len(simhash._word_terms(3)) <= WORD_CACHE_SIZE


def test_the_test_web_texts() -> None:
    texts = [visible_text(body, encoding) for _, body, encoding in synthetic_pages(hosts=20, pages=20)]
    assert len(texts) > 100
    for text in texts:
        assert_as_defined(text)


def test_real_documentation_texts() -> None:
    pages = real_pages(every=8)
    for _, body, _ in pages:
        assert_as_defined(visible_text(body, "utf-8"))


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab 019\u00e9\u6771-.\n"), max_size=300),
       st.integers(min_value=1, max_value=5))
def test_random_texts(text: str, shingle_words: int) -> None:
    assert_as_defined(text, shingle_words)


@pytest.mark.parametrize("count", [0, 1, 2, 63, 64, 255, 256, 1023, 1024, 3000])
def test_simhash_of_is_the_bit_majority(count: int) -> None:
    rng = random.Random(count)
    values = sorted(rng.getrandbits(64) for _ in range(count))
    assert simhash_of(np.array(values, dtype=np.uint64)) == defined_simhash(values)
    biased = sorted(value | 0xF0F0 for value in values)  # bits voted by every hash
    assert simhash_of(np.array(biased, dtype=np.uint64)) == defined_simhash(biased)


@pytest.mark.parametrize("count", [0, 1, 5, 64, 65, 127, 128, 129, 500])
def test_sketch_with_and_without_repeated_top_halves(count: int) -> None:
    rng = random.Random(count)
    distinct = np.unique(np.array([rng.getrandbits(64) for _ in range(count)], dtype=np.uint64))
    assert sketch_of(distinct) == defined_sketch(distinct)
    # hashes that share their top 32 bits in pairs and runs
    shared = np.unique(np.array([(rng.getrandbits(8) << 32) | rng.getrandbits(32) for _ in range(count)],
                                dtype=np.uint64))
    assert sketch_of(shared) == defined_sketch(shared)
    assert sketch_of(shared, 8) == defined_sketch(shared, 8)
