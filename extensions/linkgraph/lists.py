"""A page's outlinks as one value: its targets' fingerprints, each once in
the order first found, packed as little-endian signed 64-bit integers (8
bytes a link). Every store keeps a page's list in this format."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence

_LITTLE = sys.byteorder == "little"


def pack_targets(targets: Sequence[int]) -> bytes:
    """``targets`` without repeats (first kept), as little-endian int64."""
    packed = array("q", dict.fromkeys(targets))
    if not _LITTLE:
        packed.byteswap()
    return packed.tobytes()


def unpack_targets(blob: bytes) -> list[int]:
    """The fingerprints :func:`pack_targets` packed."""
    values = array("q")
    values.frombytes(blob)
    if not _LITTLE:
        values.byteswap()
    return values.tolist()
