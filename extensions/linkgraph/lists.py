"""A page's outlinks as one value: its targets' fingerprints, each once in
the order first found, packed as little-endian signed 64-bit integers (8
bytes a link). Every store keeps a page's list in this format."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_PACKED = np.dtype("<i8")


def pack_targets(targets: Sequence[int]) -> bytes:
    """``targets`` without repeats (first kept), as little-endian int64."""
    return np.array(list(dict.fromkeys(targets)), dtype=_PACKED).tobytes()


def unpack_targets(blob: bytes) -> list[int]:
    """The fingerprints :func:`pack_targets` packed."""
    return np.frombuffer(blob, dtype=_PACKED).tolist()
