"""The ``.ef`` file webgraph-rs maps for random access: the offsets as an
Elias-Fano sequence (layout: docs/reference/formats.md)."""

from __future__ import annotations

import struct

import numpy as np

MAGIC = b"epserde "
VERSION = (2, 0)
TYPE_HASH = bytes.fromhex("2104224edfab29a9b7f197f9bc1e1f0893fe9a213877443ffefcdd3047a04395")
ALIGN_HASH = bytes.fromhex("ffb987f6d9bb2fd34b4936c9086e280208ec2ab94322eb39081763e18788cd18")
TYPE_NAME = (
    "sux::dict::elias_fano::EliasFano<u64, sux::rank_sel::select_adapt_const::SelectAdaptConst<"
    "sux::bits::bit_vec::BitVec<alloc::boxed::Box<[usize]>>, alloc::boxed::Box<[usize]>, 11, 3>, "
    "sux::bits::bit_field_vec::BitFieldVecU<alloc::boxed::Box<[u64]>>>"
)
LOG2_ONES_PER_INVENTORY = 11
LOG2_WORDS_PER_SUBINVENTORY = 3
_ONES_PER_INVENTORY = 1 << LOG2_ONES_PER_INVENTORY
_WORDS_PER_SUB = 1 << LOG2_WORDS_PER_SUBINVENTORY
_LOG2_ONES_PER_SUB16 = LOG2_ONES_PER_INVENTORY - (LOG2_WORDS_PER_SUBINVENTORY + 2)
_LOCAL_U32S = 2 * (_WORDS_PER_SUB - 1)


class _Writer:
    """epserde's serialisation: primitives raw, slices as length + aligned data."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.pos = 0

    def raw(self, data: bytes) -> None:
        self.parts.append(data)
        self.pos += len(data)

    def usize(self, value: int) -> None:
        self.raw(struct.pack("<Q", value))

    def words(self, array: np.ndarray) -> None:
        self.usize(len(array))
        self.raw(b"\0" * (-self.pos % 8))
        self.raw(np.asarray(array, dtype="<u8").tobytes())


def _set_bits(num_bits: int, positions: np.ndarray) -> np.ndarray:
    """A bit vector (LSB-first 64-bit words) with ones at ``positions``."""
    bits = np.zeros(num_bits + 7 >> 3, dtype=np.uint8)
    np.bitwise_or.at(bits, positions >> 3, (1 << (positions & 7)).astype(np.uint8))
    bits = np.concatenate([bits, np.zeros(-len(bits) % 8, dtype=np.uint8)])
    return bits.view("<u8")


def _pack_fields(values: np.ndarray, width: int) -> np.ndarray:
    """sux's BitFieldVec words: value ``i`` at bits ``[i * width, (i + 1) * width)``."""
    needed = (len(values) * width + 63) // 64
    if width == 0:
        return np.zeros(max(1, needed), dtype="<u8")
    bit_of = np.arange(width, dtype=np.uint64)
    ones = ((values[:, None].astype(np.uint64) >> bit_of) & np.uint64(1)).astype(bool).ravel()
    positions = np.flatnonzero(ones)
    words = _set_bits(needed * 64, positions)
    return np.concatenate([words, np.zeros(1, dtype="<u8")])  # BitFieldVecU's padding word


def _select_inventory(ones: np.ndarray, num_bits: int) -> tuple[np.ndarray, np.ndarray]:
    """SelectAdaptConst<_, _, 11, 3>'s inventory and spill for the given one positions."""
    num_ones = len(ones)
    blocks = -(-num_ones // _ONES_PER_INVENTORY)
    per_block = _WORDS_PER_SUB + 1
    inventory = np.zeros(blocks * per_block + 1, dtype=np.uint64)
    starts = ones[::_ONES_PER_INVENTORY].astype(np.uint64)
    inventory[0:blocks * per_block:per_block] = starts
    inventory[-1] = max(1, num_bits)
    spill: list[int] = []
    for block in range(blocks):
        base = block * per_block
        start = int(starts[block])
        span = int(inventory[base + per_block]) - start
        first = block * _ONES_PER_INVENTORY
        count = min(num_ones - first, _ONES_PER_INVENTORY)
        if span <= 0x10000:
            quantum = 1 << _LOG2_ONES_PER_SUB16
            entries = ones[first:first + count:quantum] - start
            sub = np.zeros(4 * _WORDS_PER_SUB, dtype="<u2")
            sub[1:len(entries)] = entries[1:]
            inventory[base + 1:base + per_block] = sub.view("<u8")
        elif span <= 1 << 32:
            quantum = 1 << max(0, _LOG2_ONES_PER_SUB16 - ((span >> 15).bit_length() - 1 + 1))
            entries = ones[first:first + count:quantum] - start
            inventory[base] |= np.uint64(1 << 63)
            inventory[base + 1] = len(spill)
            local = np.zeros(_LOCAL_U32S, dtype="<u4")
            local[1:min(len(entries), _LOCAL_U32S)] = entries[1:_LOCAL_U32S]
            inventory[base + 2:base + per_block] = local.view("<u8")
            extra = np.asarray(entries[_LOCAL_U32S:], dtype="<u4")
            if len(extra):
                extra = np.concatenate([extra, np.zeros(len(extra) % 2, dtype="<u4")])
                spill.extend(extra.view("<u8").tolist())
        else:
            raise ValueError("offsets too sparse for a 32-bit select index")
    return inventory, np.array(spill, dtype=np.uint64)


def ef_bytes(offsets: np.ndarray, upper_bound: int) -> bytes:
    """The ``.ef`` file of nondecreasing ``offsets`` (bit positions) below ``upper_bound``."""
    values = np.asarray(offsets, dtype=np.int64)
    n = len(values)
    low_width = (upper_bound // n).bit_length() - 1 if n and upper_bound >= n else 0
    high_len = n + 1 + (upper_bound >> low_width if n else 0)
    ones = (values >> low_width) + np.arange(n)
    high = _set_bits(high_len, ones)
    inventory, spill = _select_inventory(ones, high_len)
    low = values & ((1 << low_width) - 1)
    out = _Writer()
    out.raw(MAGIC + struct.pack("<HHB", *VERSION, 8) + TYPE_HASH + ALIGN_HASH)
    name = TYPE_NAME.encode()
    out.usize(len(name))
    out.raw(name)
    out.usize(n)
    out.usize(upper_bound)
    out.usize(low_width)
    out.usize(int(values[0]) if n else (1 << 64) - 1)
    out.usize(int(values[-1]) if n else 0)
    out.words(_pack_fields(low, low_width))
    out.usize(low_width)
    out.usize((1 << low_width) - 1)
    out.usize(n)
    out.words(high)
    out.usize(high_len)
    out.words(inventory)
    out.words(spill)
    return b"".join(out.parts)
