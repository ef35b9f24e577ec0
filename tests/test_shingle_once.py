"""Near-duplicate features from one tokenisation
(extensions.contentseen.resemblance.near_features over simhash.shingle_sets)
are identical to the features of two separate shingle passes, the raw and
the digit-folded, as computed before: on the test web's pages, on real
documentation pages and on texts built to stress the folding."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extensions.contentseen import simhash
from extensions.contentseen.resemblance import NearFeatures, near_features, sketch_of
from extensions.contentseen.simhash import CHUNK_BYTES, shingle_set, shingle_sets, simhash_of
from extensions.contentseen.text import visible_text
from tests.pagecorpus import real_pages, synthetic_pages


def reference_near_features(text: str) -> NearFeatures:
    """near_features as it was: the text shingled twice, raw and folded."""
    hashes = shingle_set(text)
    candidate = shingle_set(text, fold_digits=True)
    return NearFeatures(simhash_of(candidate), sketch_of(hashes), len(hashes))


def assert_same_features(texts: list[str]) -> None:
    assert texts
    for text in texts:
        assert near_features(text) == reference_near_features(text), text[:80]
        plain, folded = shingle_sets(text)
        assert plain.tolist() == shingle_set(text).tolist()
        assert folded.tolist() == shingle_set(text, fold_digits=True).tolist()


def test_features_are_identical_on_the_test_web() -> None:
    assert_same_features([visible_text(body, encoding) for _, body, encoding in synthetic_pages()])


def test_features_are_identical_on_real_documentation() -> None:
    pages = real_pages(every=6)
    assert_same_features([visible_text(body, "utf-8") for _, body, _ in pages])


def test_features_are_identical_across_chunks_with_and_without_digits() -> None:
    rng = random.Random(17)
    prose = " ".join(rng.choice(["river", "copper", "Straße", "naïve", "東京"]) for _ in range(CHUNK_BYTES // 4))
    figures = " ".join(f"v{rng.randint(0, 99999)}.{rng.randint(0, 9)}" for _ in range(CHUNK_BYTES // 6))
    unbroken = "x" * (CHUNK_BYTES + 10) + " 12 abc 3"
    assert_same_features([prose, figures, prose + " " + figures, figures + " " + prose, unbroken,
                          "", "   ", "0", "000 00 0", "7", "a1 b2 c3", "release 2.4.1 of 2024-05-01"])


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab 019\u00e9\u6771-.\n"), max_size=200))
def test_features_are_identical_on_any_text(text: str) -> None:
    assert near_features(text) == reference_near_features(text)


def test_prose_without_digits_is_shingled_once() -> None:
    plain, folded = shingle_sets("no figures in this text at all")
    assert folded is plain
    plain, folded = shingle_sets("one figure: 42 in this text")
    assert folded is not plain and len(folded) == len(plain)


def test_near_features_tokenise_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    original = simhash.normalised_bytes
    monkeypatch.setattr(simhash, "normalised_bytes", lambda *a: calls.append(1) or original(*a))
    near_features("release 2.4.1 of the river copper manual")
    assert calls == [1]


def test_words_hashed_in_python_equal_the_vectorised_hashes() -> None:
    # a page-length text takes the Python tokeniser (cached word hashes):
    # long words (not cached), non-ASCII, digits, and more distinct words
    # than the cache holds (it is cleared mid-text) give the numpy hashes
    rng = random.Random(5)
    long_word = "q" * 100 + "7"
    many = " ".join(f"w{n}z" for n in range(simhash.WORD_CACHE_SIZE + 50))
    texts = [f"{long_word} Straße naïve 東京 {long_word} 42", many[:simhash.SHORT_TEXT_BYTES],
             " ".join(rng.choice(["a1", "b", "9c", "ü", "0"]) for _ in range(2000))]
    for text in texts:
        assert len(simhash.normalised_bytes(text)) <= simhash.SHORT_TEXT_BYTES
        data = simhash.normalised_bytes(text).tobytes()
        hashes = [simhash._word_hash(word) for word in data.split()]
        assert hashes == simhash.token_hashes(simhash.normalised_bytes(text)).tolist()
    assert_same_features(texts + [many])
    assert len(simhash._word_terms(3)) <= simhash.WORD_CACHE_SIZE
