"""64-bit simhash (Charikar) over word shingles, vectorised with numpy
(features and hashes: docs/reference/formats.md)."""

from __future__ import annotations

import sys
from operator import mul
from typing import Final

import numpy as np

DEFAULT_SHINGLE_WORDS: Final = 3
MAX_SHINGLE_WORDS: Final = 16
CHUNK_BYTES: Final = 1 << 16
#: Longest normalised text :func:`shingle_sets` tokenises in Python.
SHORT_TEXT_BYTES: Final = 1 << 14
#: Distinct words whose hashes the Python tokeniser keeps (a few MB at most).
WORD_CACHE_SIZE: Final = 8192
MASK64: Final = (1 << 64) - 1

_U64 = np.uint64
_PRIME: Final = 0x100000001B3  # odd, so invertible mod 2**64
_SPACE: Final = 32
_ZERO: Final = np.uint8(ord("0"))
_NINE: Final = np.uint8(ord("9"))
_SHIFT33: Final = _U64(33)
_FMIX1: Final = _U64(0xFF51AFD7ED558CCD)
_FMIX2: Final = _U64(0xC4CEB9FE1A85EC53)


def _translation(fold_digits: bool) -> bytes:
    """Byte map: A-Z to a-z, digits to 0 (if folding), other ASCII to a space."""
    table = bytearray(range(256))
    for code in range(128):
        char = chr(code)
        if char.isdigit() and fold_digits:
            table[code] = ord("0")
        elif char.isalpha():
            table[code] = ord(char.lower())
        elif not char.isdigit():
            table[code] = _SPACE
    return bytes(table)


_TRANSLATIONS: Final = {True: _translation(True), False: _translation(False)}


def _splitmix64(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & MASK64
    value = state
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & MASK64
    return state, value ^ (value >> 31)


def _multipliers(count: int, seed: int = 0x51A5) -> np.ndarray:
    values, state = [], seed
    for _ in range(count):
        state, value = _splitmix64(state)
        values.append(value | 1)
    return np.array(values, dtype=_U64)


_SHINGLE_MULTIPLIERS: Final = _multipliers(MAX_SHINGLE_WORDS)


def _power_table(base: int) -> np.ndarray:
    """``base ** j mod 2**64`` for ``j`` in ``0..CHUNK_BYTES``."""
    factors = np.full(CHUNK_BYTES + 1, base, dtype=_U64)
    factors[0] = 1
    return np.cumprod(factors, dtype=_U64)


_POWERS: Final = _power_table(_PRIME)
_INVERSE_POWERS: Final = _power_table(pow(_PRIME, -1, 1 << 64))
_CACHED_WORD_BYTES: Final = 64
_POWER_LIST: Final = [int(power) for power in _POWERS[:_CACHED_WORD_BYTES]]
_FOLD_DIGITS: Final = bytes.maketrans(b"123456789", b"000000000")

# bit b of byte value v, for turning per-byte histograms into per-bit counts
_BYTE_BITS: Final = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(np.int64)
_BYTE_OFFSETS: Final = np.arange(8, dtype=np.intp) * 256


def _fmix64(values: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser, element-wise (wraps mod 2**64), in place; returns ``values``."""
    shifted = values >> _SHIFT33
    values ^= shifted
    values *= _FMIX1
    np.right_shift(values, _SHIFT33, out=shifted)
    values ^= shifted
    values *= _FMIX2
    np.right_shift(values, _SHIFT33, out=shifted)
    values ^= shifted
    return values


def normalised_bytes(text: str, fold_digits: bool = False) -> np.ndarray:
    """``text`` lower-cased, UTF-8, separators as spaces (docs/reference/formats.md)."""
    data = text.lower().encode("utf-8", "surrogatepass").translate(_TRANSLATIONS[fold_digits])
    return np.frombuffer(data, dtype=np.uint8)


def token_hashes(data: np.ndarray) -> np.ndarray:
    """One 64-bit hash per word of :func:`normalised_bytes` output, in order."""
    return _token_hashes(data, fold_too=False)[0]


def _token_hashes(data: np.ndarray, fold_too: bool) -> tuple[np.ndarray, np.ndarray | None]:
    parts, start = [], 0
    while len(data) - start > CHUNK_BYTES:
        window = data[start:start + CHUNK_BYTES]
        spaces = np.flatnonzero(window == _SPACE)
        cut = start + (int(spaces[-1]) + 1 if len(spaces) else CHUNK_BYTES)
        parts.append(_chunk_token_hashes(data[start:cut], fold_too))
        start = cut
    parts.append(_chunk_token_hashes(data[start:], fold_too))
    if len(parts) == 1:
        return parts[0]
    plain = np.concatenate([part[0] for part in parts])
    if not fold_too:
        return plain, None
    if all(part[1] is part[0] for part in parts):
        return plain, plain
    return plain, np.concatenate([part[1] for part in parts])


def _chunk_token_hashes(data: np.ndarray, fold_too: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    length = len(data)
    padded = np.zeros(length + 2, dtype=bool)
    padded[1:-1] = data != _SPACE
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    starts, ends = edges[0::2], edges[1::2]
    plain = _word_hashes(data, starts, ends)
    if not fold_too:
        return plain, None
    # "1".."9" only come from digits: other ASCII is a letter or a space
    digits = (data > _ZERO) & (data <= _NINE)
    if not digits.any():
        return plain, plain
    return plain, _word_hashes(np.where(digits, _ZERO, data), starts, ends)


def _word_hashes(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The hash of each word ``data[starts[i]:ends[i]]``."""
    length = len(data)
    prefix = np.zeros(length + 1, dtype=_U64)
    np.multiply(data, _POWERS[:length], out=prefix[1:])
    np.cumsum(prefix[1:], out=prefix[1:])
    return _fmix64((prefix[ends] - prefix[starts]) * _INVERSE_POWERS[starts])


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """The distinct ``values``, sorted ascending, same dtype: ``np.unique``'s result by a sort
    (numpy 2's ``np.unique`` hashes first, slower on a page's shingles)."""
    ordered = np.sort(values)
    if len(ordered) < 2:
        return ordered
    first = np.empty(len(ordered), dtype=bool)  # first of its run of equal values
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered if first.all() else ordered[first]


def shingle_hashes(tokens: np.ndarray, shingle_words: int = DEFAULT_SHINGLE_WORDS) -> np.ndarray:
    """One 64-bit hash per overlapping ``shingle_words``-token shingle (fewer tokens: one
    shingle of all of them)."""
    if not 1 <= shingle_words <= MAX_SHINGLE_WORDS:
        raise ValueError(f"shingle_words must be 1..{MAX_SHINGLE_WORDS}, not {shingle_words}")
    if len(tokens) == 0:
        return tokens
    width = min(shingle_words, len(tokens))
    count = len(tokens) - width + 1
    mixed = tokens[:count] * _SHINGLE_MULTIPLIERS[0]
    for offset in range(1, width):
        mixed += tokens[offset:offset + count] * _SHINGLE_MULTIPLIERS[offset]
    return _fmix64(mixed)


def shingle_set(text: str, shingle_words: int = DEFAULT_SHINGLE_WORDS,
                fold_digits: bool = False) -> np.ndarray:
    """The distinct shingle hashes of ``text``, sorted ascending (``uint64``)."""
    with np.errstate(over="ignore"):
        tokens = token_hashes(normalised_bytes(text, fold_digits))
        return sorted_unique(shingle_hashes(tokens, shingle_words))


def shingle_sets(text: str, shingle_words: int = DEFAULT_SHINGLE_WORDS) -> tuple[np.ndarray, np.ndarray]:
    """:func:`shingle_set` of ``text`` without and with ``fold_digits``,
    tokenised once; the second is the first (same object) when the text has
    no digit."""
    if not 1 <= shingle_words <= MAX_SHINGLE_WORDS:
        raise ValueError(f"shingle_words must be 1..{MAX_SHINGLE_WORDS}, not {shingle_words}")
    data = normalised_bytes(text)
    if len(data) <= SHORT_TEXT_BYTES:  # array arithmetic only: uint64 wraps without a warning
        return _short_shingle_sets(data.tobytes(), shingle_words)
    with np.errstate(over="ignore"):
        plain, folded = _token_hashes(data, fold_too=True)
        hashes = sorted_unique(shingle_hashes(plain, shingle_words))
        if folded is plain:
            return hashes, hashes
        return hashes, sorted_unique(shingle_hashes(folded, shingle_words))


def _short_shingle_sets(data: bytes, shingle_words: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`shingle_sets` of :func:`normalised_bytes` output, words hashed
    in Python from cached per-word terms; both sets' shingles in one two-row array."""
    words = data.split()  # the runs of non-spaces: every other ASCII byte is a space now
    if not words:
        empty = np.empty(0, dtype=_U64)
        return empty, empty
    same = data.translate(_FOLD_DIGITS) == data
    joined = b"".join(map(_word_terms(shingle_words).__getitem__, words))
    terms = np.frombuffer(joined, dtype=_U64).reshape(len(words), 2, shingle_words)
    width = min(shingle_words, len(words))
    count = len(words) - width + 1
    mixed = np.empty((2, count), dtype=_U64)  # row 0 plain, row 1 folded
    if width == 1:
        mixed[:] = terms[:, :, 0].T
    else:
        np.add(terms[:count, :, 0].T, terms[1:count + 1, :, 1].T, out=mixed)
        for offset in range(2, width):
            mixed += terms[offset:offset + count, :, offset].T
    _fmix64(mixed)
    mixed.sort(axis=1)
    repeats = mixed[:, 1:] == mixed[:, :-1]
    if not np.count_nonzero(repeats):  # no shingle repeats (the common case): the rows are the sets
        hashes = mixed[0]
        return (hashes, hashes) if same else (hashes, mixed[1])
    first = np.ones(mixed.shape, dtype=bool)  # first of its run of equal values
    np.logical_not(repeats, out=first[:, 1:])
    hashes = mixed[0][first[0]]
    return (hashes, hashes) if same else (hashes, mixed[1][first[1]])


def _word_hash(word: bytes) -> int:
    """:func:`token_hashes`' hash of one word, in Python integers."""
    if len(word) <= len(_POWER_LIST):
        value = sum(map(mul, word, _POWER_LIST)) & MASK64
    else:
        value = 0
        for byte in reversed(word):  # Horner's rule: the same polynomial
            value = (value * _PRIME + byte) & MASK64
    value ^= value >> 33
    value = (value * 0xFF51AFD7ED558CCD) & MASK64
    value ^= value >> 33
    value = (value * 0xC4CEB9FE1A85EC53) & MASK64
    return value ^ (value >> 33)


class _WordTermCache(dict):
    """Word (normalised bytes) -> its and its digit-folded form's
    :func:`_word_hash` times each shingle multiplier, as native ``uint64``
    bytes; cleared at :data:`WORD_CACHE_SIZE` words, long words not kept."""

    def __init__(self, shingle_words: int) -> None:
        super().__init__()
        self.multipliers = [int(value) for value in _SHINGLE_MULTIPLIERS[:shingle_words]]

    def __missing__(self, word: bytes) -> bytes:
        terms = b"".join([((value * multiplier) & MASK64).to_bytes(8, sys.byteorder)
                          for value in (_word_hash(word), _word_hash(word.translate(_FOLD_DIGITS)))
                          for multiplier in self.multipliers])
        if len(word) <= _CACHED_WORD_BYTES:
            if len(self) >= WORD_CACHE_SIZE:
                self.clear()
            self[word] = terms
        return terms


_WORD_TERMS: Final[dict[int, _WordTermCache]] = {}


def _word_terms(shingle_words: int) -> _WordTermCache:
    """The term cache for ``shingle_words``-word shingles (one per width used)."""
    cache = _WORD_TERMS.get(shingle_words)
    if cache is None:
        cache = _WORD_TERMS[shingle_words] = _WordTermCache(shingle_words)
    return cache


def bit_votes(hashes: np.ndarray) -> np.ndarray:
    """How many of ``hashes`` have each of the 64 bits set (index = bit)."""
    as_bytes = hashes.view(np.uint8)
    if len(hashes) < 1024:  # unpacking is cheaper than a 2048-bin histogram
        bits = np.unpackbits(as_bytes, bitorder="little").reshape(-1, 64)
        return np.add.reduce(bits, axis=0, dtype=np.uint32).astype(np.int64)
    indexes = as_bytes.reshape(-1, 8).astype(np.intp)
    indexes += _BYTE_OFFSETS
    histogram = np.bincount(indexes.ravel(), minlength=2048)
    return (histogram.reshape(8, 256) @ _BYTE_BITS).ravel()


def simhash_of(hashes: np.ndarray) -> int:
    """The simhash of feature hashes (``uint64``, little-endian host assumed)."""
    if not len(hashes):
        return 0
    majority = bit_votes(hashes) > len(hashes) >> 1  # votes * 2 > count, in integers
    return int.from_bytes(np.packbits(majority, bitorder="little").tobytes(), "little")


def simhash(text: str, shingle_words: int = DEFAULT_SHINGLE_WORDS, fold_digits: bool = False) -> int:
    """The unsigned 64-bit simhash of ``text``'s distinct shingles (0 for text without words)."""
    return simhash_of(shingle_set(text, shingle_words, fold_digits))
