"""Simhash over word shingles (extensions.contentseen.simhash)."""

from __future__ import annotations

import itertools
import random
import statistics

import numpy as np
import pytest

from extensions.contentseen.simhash import (
    bit_votes,
    normalised_bytes,
    shingle_hashes,
    simhash,
    sorted_unique,
    token_hashes,
)

VOCABULARY_SIZE = 5000


def hamming(first: int, second: int) -> int:
    return (first ^ second).bit_count()


def vocabulary(rng: random.Random) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choice(letters) for _ in range(rng.randint(2, 10))) for _ in range(VOCABULARY_SIZE)]


ZIPF = list(itertools.accumulate(1 / rank for rank in range(1, VOCABULARY_SIZE + 1)))


def zipf_words(rng: random.Random, words: list[str], count: int) -> list[str]:
    """Words with natural-language (Zipf) frequencies: the commonest is about 11 %."""
    return rng.choices(words, cum_weights=ZIPF, k=count)


def test_identical_text_gives_identical_simhash_in_every_process():
    text = "The harbour lantern festival opens with music in the old market square."
    assert simhash(text) == simhash(str(text))
    assert 0 < simhash(text) < 1 << 64


def test_case_punctuation_and_whitespace_do_not_matter():
    assert simhash("Hello, World! How are you?") == simhash("hello world   how are you")


def test_numbers_are_tokens_unless_folding_is_asked_for():
    # issue 12: folding digits to 0 made every page of tables or code alike
    first, second = "opens on 2026-03-11 at 10:00 in the square", "opens on 2026-03-21 at 11:30 in the square"
    assert simhash(first) != simhash(second)
    assert simhash(first, fold_digits=True) == simhash(second, fold_digits=True)
    assert simhash("page 7 of the report", fold_digits=True) != simhash("page 2026 of the report", fold_digits=True)


def test_repeated_shingles_count_once():
    # a phrase repeated in every row of a table must not outvote the rest of the page
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa"
    assert simhash(text + " 0 0 0" * 50) == simhash(text + " 0 0 0")


def test_token_hashes_depend_on_the_word_only():
    tokens = token_hashes(normalised_bytes("Foo bar, foo; BAR x"))
    assert len(tokens) == 5
    assert tokens[0] == tokens[2] and tokens[1] == tokens[3] and tokens[0] != tokens[1]


def test_long_text_is_chunked_without_changing_tokens():
    words = [f"w{i % 977}x" for i in range(40000)]  # about 250 kB: several chunks
    tokens = token_hashes(normalised_bytes(" ".join(words)))
    assert len(tokens) == len(words)
    assert tokens[0] == tokens[977] == tokens[977 * 40]


def test_shingles_overlap_and_short_texts_make_one_shingle():
    tokens = token_hashes(normalised_bytes("a b c d e"))
    assert len(shingle_hashes(tokens, 3)) == 3
    assert len(shingle_hashes(tokens[:2], 3)) == 1
    assert len(shingle_hashes(tokens[:0], 3)) == 0
    with pytest.raises(ValueError):
        shingle_hashes(tokens, 0)


@pytest.mark.parametrize("count", [10, 255, 256, 5000])
def test_bit_votes_count_each_bit(count):
    values = np.random.default_rng(count).integers(0, 2**64 - 1, count, dtype=np.uint64, endpoint=True)
    expected = [sum((int(v) >> bit) & 1 for v in values) for bit in range(64)]
    assert bit_votes(values).tolist() == expected


def test_empty_text_hashes_to_zero():
    assert simhash("") == 0
    assert simhash(" ,.;! ") == 0


def one_word_edit_distances(length: int, trials: int = 200) -> list[int]:
    rng = random.Random(length)
    words = vocabulary(rng)
    distances = []
    for _ in range(trials):
        original = zipf_words(rng, words, length)
        edited = list(original)
        edited[rng.randrange(length)] = rng.choice(words)
        distances.append(hamming(simhash(" ".join(original)), simhash(" ".join(edited))))
    return distances


# One changed word changes 3 of the page's shingles; each bit flips with
# probability about atan(sqrt(6 / words)) / pi, so the share within distance 3
# rises with the page length (measured: ~0.7 at 300 words, ~0.93 at 1000,
# ~0.99 at 3000).
@pytest.mark.parametrize(("length", "share"), [(1000, 0.85), (3000, 0.95)])
def test_one_word_edits_stay_within_distance_3_on_typical_pages(length, share):
    distances = one_word_edit_distances(length)
    within = sum(distance <= 3 for distance in distances) / len(distances)
    assert within >= share, (within, statistics.median(distances))
    assert statistics.median(distances) <= 1


def test_distance_grows_with_the_size_of_the_edit():
    rng = random.Random(5)
    words = vocabulary(rng)
    original = zipf_words(rng, words, 1000)
    medians = []
    for edits in (1, 30, 300):
        distances = []
        for _ in range(30):
            edited = list(original)
            for position in rng.sample(range(len(original)), edits):
                edited[position] = rng.choice(words)
            distances.append(hamming(simhash(" ".join(original)), simhash(" ".join(edited))))
        medians.append(statistics.median(distances))
    assert medians[0] <= 3 < medians[1] < medians[2]


def test_case_spacing_and_punctuation_changes_keep_the_simhash():
    text = "Opening hours: 09:00 to 17:30. Last updated 2026-05-17, 1,234 visitors."
    assert simhash(text) == simhash("opening  HOURS 09 00 to 17 30 -- last updated 2026/05/17; 1 234 visitors")


def test_unrelated_texts_are_far_apart():
    rng = random.Random(11)
    words = vocabulary(rng)
    hashes = [simhash(" ".join(zipf_words(rng, words, rng.randint(100, 2000)))) for _ in range(300)]
    distances = [hamming(a, b) for i, a in enumerate(hashes) for b in hashes[i + 1:]]
    assert min(distances) > 3
    assert 28 <= statistics.mean(distances) <= 36  # about half the bits


@pytest.mark.parametrize("size", [0, 1, 2, 5, 64, 5000])
def test_sorted_unique_is_numpys_unique(size):
    rng = np.random.default_rng(size)
    values = rng.integers(0, 1 << 20, size, dtype=np.uint64)  # repeats at the larger sizes
    values = np.concatenate((values, values[: size // 3]))
    for array in (values, values.astype(">u4")):
        got = sorted_unique(array)
        assert got.dtype == array.dtype
        assert got.tolist() == np.unique(array).tolist()
