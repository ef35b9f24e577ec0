"""A host's tail in Redis: its queued URLs past its window, without a row or a
back-queue entry of their own (the format: docs/reference/redis-layout.md). Pure: no I/O."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from extensions.backends.redis.fpmap import fingerprint_of
from extensions.backends.redis.fpset import member as member_of
from extensions.backends.redis.rows import read_varint, row_url, varint
from extensions.frontier.fingerprint import default_fingerprint

STRING_BYTES = 384  # appended records past this go into the newest block
BLOCK_BYTES = 4096  # a block's records at most (before compression)
MEMBER = 5  # bytes of a record's member (fpmap.py's)
#: deflate's window: 8 KB holds a whole block, and a smaller window and hash
#: table make a compressor cheaper to set up than its 32 KB default
WINDOW_BITS = 13


@dataclass(slots=True)
class Tail:
    """A tail string parsed: its blocks (compressed) and its appended records."""

    blocks: list[bytes] = field(default_factory=list)
    records: bytes = b""

    @classmethod
    def parse(cls, data: bytes | None) -> Tail:
        if not data:
            return cls()
        end, at = read_varint(data, 0)
        end += at
        blocks = []
        while at < end:
            length, at = read_varint(data, at)
            blocks.append(data[at:at + length])
            at += length
        return cls(blocks, data[end:])

    def encode(self) -> bytes:
        """The string (``b""`` for an empty tail)."""
        if not self.blocks and not self.records:
            return b""
        packed = b"".join(varint(len(block)) + block for block in self.blocks)
        return varint(len(packed)) + packed + self.records

    def compacted(self) -> Tail:
        """The records merged into the newest block (a new one past :data:`BLOCK_BYTES`)."""
        if not self.records:
            return self
        newest = unpack_block(self.blocks[-1]) if self.blocks else None
        if newest is None or len(newest) + len(self.records) > BLOCK_BYTES:
            return Tail([*self.blocks, pack_block(self.records)])
        return Tail([*self.blocks[:-1], pack_block(newest + self.records)])

    def take(self, count: int) -> tuple[bytes, Tail]:
        """The first ``count`` records (as appended: the scripts' form) and the tail without them."""
        if not self.blocks:
            cut = record_end(self.records, count)
            return self.records[:cut], Tail([], self.records[cut:])
        oldest = unpack_block(self.blocks[0])
        cut = record_end(oldest, count)
        rest = [pack_block(oldest[cut:])] if cut < len(oldest) else []
        return oldest[:cut], Tail([*rest, *self.blocks[1:]], self.records)

    def all_records(self) -> bytes:
        return b"".join(map(unpack_block, self.blocks)) + self.records


def record_code(fingerprint: int, url: str, level: int) -> int:
    """A record's code: its level, and whether it needs its member (the fingerprint is not ``url``'s default)."""
    return level * 2 + (default_fingerprint(url) != fingerprint)


def _records(data: bytes) -> Iterator[tuple[int, int, bytes | None, int, int]]:
    """Each record of ``data``: where it starts, its level, its member (None:
    left out), where its row starts and ends."""
    at = 0
    while at < len(data):
        code, row = read_varint(data, at)
        member = None
        if code & 1:
            member, row = data[row:row + MEMBER], row + MEMBER
        length, row = read_varint(data, row)
        yield at, code >> 1, member, row, row + length
        at = row + length


def record_end(data: bytes, count: int) -> int:
    """Where the first ``count`` records of ``data`` end (all of them: its length)."""
    for number, (at, _, _, _, _) in enumerate(_records(data)):
        if number == count:
            return at
    return len(data)


def _fingerprint(key: bytes, member: bytes | None, row: bytes) -> int:
    return fingerprint_of(key, member) if member is not None else default_fingerprint(row_url(row))


def with_members(tag: str, records: bytes) -> bytes:
    """``records`` as the refill script takes them: each with its member."""
    key, out = f"{{{tag}}}".encode(), []
    for _, level, member, row, end in _records(records):
        out += [varint(level * 2 + 1), member or member_of(_fingerprint(key, member, records[row:end])),
                varint(end - row), records[row:end]]
    return b"".join(out)


def pack_block(records: bytes) -> bytes:
    """Records as a block (raw deflate)."""
    packer = zlib.compressobj(6, zlib.DEFLATED, -WINDOW_BITS, 5)
    return packer.compress(records) + packer.flush()


def unpack_block(block: bytes) -> bytes:
    """A block's records."""
    return zlib.decompress(block, -15)


def tail_records(tag: str, data: bytes | None) -> Iterator[tuple[int, int, bytes]]:
    """``(fingerprint, level, row)`` of every URL of the tail string ``data``, oldest first;
    ``tag`` the host's."""
    records, key = Tail.parse(data).all_records(), f"{{{tag}}}".encode()
    for _, level, member, row, end in _records(records):
        yield _fingerprint(key, member, records[row:end]), level, records[row:end]
