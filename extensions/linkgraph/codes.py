"""Instantaneous codes (unary, gamma, zeta_k) as ``(value, length)`` pairs in numpy arrays,
and :class:`BitPacker`'s MSB-first bit streams, as WebGraph writes them."""

from __future__ import annotations

import numpy as np

_U64 = np.uint64


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
    """Signed integers folded into naturals (0, -1, 1, -2 ... -> 0, 1, 2, 3 ...)."""
    x = np.asarray(x, dtype=np.int64)
    return np.where(x >= 0, 2 * x, -2 * x - 1)


# -- writing -----------------------------------------------------------------


class BitPacker:
    """Packs ``(value, length)`` code arrays MSB-first into bytes; ``bits`` counts bits written."""

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
