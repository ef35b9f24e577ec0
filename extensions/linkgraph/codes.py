"""Instantaneous codes and bit streams, as WebGraph writes them.

Bits are written MSB-first (big-endian, WebGraph's ``OutputBitStream``).
Unary ``x`` is ``x`` zeros and a one; gamma and zeta_k are the codes
of Boldi and Vigna ("The WebGraph Framework II: Codes for the World-Wide
Web", and ``dsi-bitstream``), all for naturals (``x >= 0``).

Every code here starts with zeros and a one, so one code is one
``(value, length)`` pair: ``length`` bits holding ``value`` with its leading
zeros. Writers build arrays of such pairs (numpy, vectorised) and
:class:`BitPacker` packs them; :class:`BitReader` decodes one short stretch
(a successor list) with Python integers, which is what a random-access query
needs.
"""

from __future__ import annotations

import numpy as np

_U64 = np.uint64


def nat2int(x: int) -> int:
    """A natural unfolded into a signed integer (0, 1, 2, 3 ... -> 0, -1, 1, -2 ...)."""
    return x >> 1 if x & 1 == 0 else -((x + 1) >> 1)


# -- vectorised: arrays of naturals to arrays of (value, length) -------------


def _bit_length(v: np.ndarray) -> np.ndarray:
    """Bit length of positive uint64 values (exact: no float rounding)."""
    v = v.astype(_U64, copy=False)
    out = np.zeros(v.shape, dtype=np.int64)
    for shift in (32, 16, 8, 4, 2, 1):
        big = v >= (_U64(1) << _U64(shift))
        out += big * shift
        v = np.where(big, v >> _U64(shift), v)
    return out + (v > 0)


def gamma_array(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Gamma codes of an array of naturals (< 2^63)."""
    v = np.asarray(x, dtype=np.int64).astype(_U64) + _U64(1)
    return v, 2 * _bit_length(v) - 1


def zeta_array(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Zeta_k codes of an array of naturals (< 2^62)."""
    v = np.asarray(x, dtype=np.int64).astype(_U64) + _U64(1)
    h = (_bit_length(v) - 1) // k
    left = _U64(1) << (h * k).astype(_U64)
    y = v - left
    small = y < left
    plen = h * k + k - 1 + (~small)
    payload = np.where(small, y, y + left)
    value = (_U64(1) << plen.astype(_U64)) | payload
    return value, h + 1 + plen


def int2nat_array(x: np.ndarray) -> np.ndarray:
    """Signed integers folded into naturals (:func:`nat2int`'s inverse)."""
    x = np.asarray(x, dtype=np.int64)
    return np.where(x >= 0, 2 * x, -2 * x - 1)


# -- writing -----------------------------------------------------------------


class BitPacker:
    """Packs ``(value, length)`` code arrays MSB-first into bytes, in chunks.

    Lengths may exceed 64 (the extra leading bits are zeros); values must fit
    in 64 bits. ``bits`` counts the bits written so far.
    """

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.carry = np.zeros(0, dtype=np.uint8)
        self.bits = 0

    def write(self, values: np.ndarray, lengths: np.ndarray, batch: int = 1 << 22) -> None:
        """Append the codes in order."""
        values = np.asarray(values, dtype=_U64)
        lengths = np.asarray(lengths, dtype=np.int64)
        for lo in range(0, len(values), batch):
            self._write_batch(values[lo:lo + batch], lengths[lo:lo + batch])

    def _write_batch(self, values: np.ndarray, lengths: np.ndarray) -> None:
        total = int(lengths.sum())
        if total == 0:
            return
        code = np.repeat(np.arange(len(lengths)), lengths)
        starts = np.cumsum(lengths) - lengths
        shift = lengths[code] - 1 - (np.arange(total) - starts[code])
        inside = shift < 64
        bits = (values[code] >> np.minimum(shift, 63).astype(_U64)) & _U64(1)
        bits = (bits.astype(np.uint8)) * inside
        bits = np.concatenate([self.carry, bits])
        whole = len(bits) - len(bits) % 8
        self.chunks.append(np.packbits(bits[:whole]).tobytes())
        self.carry = bits[whole:]
        self.bits += total

    def getvalue(self) -> bytes:
        """All bytes so far, the last one padded with zeros."""
        tail = np.packbits(self.carry).tobytes() if len(self.carry) else b""
        return b"".join(self.chunks) + tail


# -- reading -----------------------------------------------------------------


class BitReader:
    """Reads codes from ``nbits`` bits held in a Python integer (MSB first)."""

    __slots__ = ("value", "nbits")

    def __init__(self, value: int, nbits: int) -> None:
        self.value = value
        self.nbits = nbits

    @classmethod
    def from_bytes(cls, data: bytes, start: int, end: int) -> BitReader:
        """The bits ``[start, end)`` of ``data``."""
        first, last = start >> 3, (end + 7) >> 3
        word = int.from_bytes(data[first:last], "big")
        word >>= (last << 3) - end
        nbits = end - start
        return cls(word & ((1 << nbits) - 1), nbits)

    def read_bits(self, count: int) -> int:
        self.nbits -= count
        out = self.value >> self.nbits
        self.value &= (1 << self.nbits) - 1
        return out

    def read_unary(self) -> int:
        zeros = self.nbits - self.value.bit_length()
        if zeros >= self.nbits:
            raise EOFError("unary code runs past the end of the stream")
        self.nbits -= zeros + 1
        self.value &= (1 << self.nbits) - 1
        return zeros

    def read_gamma(self) -> int:
        zeros = self.nbits - self.value.bit_length()
        if 2 * zeros >= self.nbits:
            raise EOFError("gamma code runs past the end of the stream")
        return self.read_bits(2 * zeros + 1) - 1

    def read_zeta(self, k: int) -> int:
        h = self.read_unary()
        left = 1 << (h * k)
        y = self.read_bits(h * k + k - 1)
        if y >= left:
            y = ((y << 1) | self.read_bits(1)) - left
        return left + y - 1


def read_gamma_stream(data: bytes, count: int) -> np.ndarray:
    """Decode ``count`` consecutive gamma codes from the start of ``data``."""
    out = np.empty(count, dtype=np.int64)
    total = len(data) * 8
    window_bits = 4096
    pos = 0
    i = 0
    while i < count:
        end = min(total, pos + window_bits)
        window = BitReader.from_bytes(data, pos, end)
        nbits = window.nbits
        while i < count:
            zeros = window.nbits - window.value.bit_length()
            if 2 * zeros + 1 > window.nbits:
                break
            out[i] = window.read_bits(2 * zeros + 1) - 1
            i += 1
        consumed = nbits - window.nbits
        if consumed == 0:
            if end == total:
                raise EOFError("gamma stream ended early")
            window_bits *= 2  # a code longer than the window
        pos += consumed
    return out
