"""The near-duplicate index in Redis, shared by every crawler process of a crawl:
:class:`~extensions.contentseen.nearindex.NearDuplicateIndex`'s look-up, answers and
groups over permuted tables in Redis (layout: docs/reference/redis-layout.md). A look-up
is one round trip (which also adds the simhash to the tables when the document is to be
stored), and a second for the records when some members are within the distance.
Document ids are reserved in blocks per process: ties go to the smallest id, and two
near-duplicates judged at once by two processes may both start a group."""

from __future__ import annotations

import struct
from collections import deque
from functools import lru_cache
from itertools import pairwise
from typing import Any

from extensions.backends.redis.contentseen import (
    BUCKET_BYTES,
    SCHEMA_VERSION,
    RedisContentPart,
    RedisContentStore,
    Steps,
    decode_url,
    encode_url,
    member_of,
    pack64,
    read_records,
    unpack64,
)
from extensions.backends.redis.rows import read_varint, varint
from extensions.backends.redis.scripts import lua
from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.nearindex import (
    DEFAULT_MIN_RESEMBLANCE,
    TABLE_SHIFT,
    BlockLayout,
    Match,
    near_verdict,
    resembling,
)
from extensions.contentseen.resemblance import SKETCH_VALUE_BITS, sketch_shift

TABLE_PARTITION_BITS = 8  # a table's partitions: the top 8 bits of its key (more past 32 bits)
TABLE_BUCKET = 256  # members of a table partition's bucket before it splits
ID_BLOCK = 1024  # document ids reserved per INCRBY
_TOP_BITS = 24  # a member's first 3 bytes: the table key below the partition

APPEND_RECORD, READ = lua("near_append_record"), lua("near_read")

_EMPTY, _RAW = 0xFE, 0xFF  # no sketch; a sketch kept as it came (not ascending uint32 values)
_FIRST = (SKETCH_VALUE_BITS + 7) // 8  # bytes of a packed sketch's first value


def rice_code(gaps: list[int], bits: int = SKETCH_VALUE_BITS) -> tuple[int, bytes]:
    """``gaps`` as Rice codes (Golomb with a power of two: the quotient in
    unary, then ``k`` low bits; bits low first), with the ``k`` that takes fewest bits."""
    guess = (sum(gaps) // max(len(gaps), 1)).bit_length()  # the best is 0 to 2 below the mean's bit length
    k = min(range(max(guess - 2, 0), min(guess, bits) + 1),
            key=lambda width: sum(gap >> width for gap in gaps) + len(gaps) * width)
    packed, at, low = 0, 0, (1 << k) - 1
    for gap in gaps:
        ones = gap >> k
        packed |= ((1 << ones) - 1) << at  # then a zero
        at += ones + 1
        packed |= (gap & low) << at
        at += k
    return k, packed.to_bytes((at + 7) // 8, "little")


def rice_decode(data: bytes, offset: int, count: int, k: int) -> tuple[list[int], int]:
    """``count`` gaps Rice-coded at ``offset`` with ``k`` low bits, and the offset after them."""
    end = offset + (count * (SKETCH_VALUE_BITS + 1) + 7) // 8  # at most: every gap below 2^bits
    packed, at, gaps, low = int.from_bytes(data[offset:end], "little"), 0, [], (1 << k) - 1
    for _ in range(count):
        ones = (packed ^ (packed + 1)).bit_length() - 1  # trailing ones
        packed >>= ones + 1
        gaps.append(ones << k | packed & low)
        packed >>= k
        at += ones + 1 + k
    return gaps, offset + (at + 7) // 8


def pack_sketch(sketch: bytes, bits: int = SKETCH_VALUE_BITS) -> bytes:
    """A sketch of ascending big-endian uint32 values without the low :func:`sketch_shift` bits
    of its largest, its gaps Rice-coded (any other bytes as they are; docs/reference/redis-layout.md).
    ``bits`` other than the default: a size to compare, not for :func:`unpack_sketch`."""
    if not sketch:
        return bytes((_EMPTY,))
    count = len(sketch) // 4
    values = struct.unpack(f">{count}I", sketch) if len(sketch) % 4 == 0 else ()
    if not values or any(later < earlier for earlier, later in pairwise(values)):
        return bytes((_RAW,)) + varint(len(sketch)) + sketch
    shift = sketch_shift(values[-1], bits)
    kept = [value >> shift for value in values]
    k, gaps = rice_code([later - earlier for earlier, later in pairwise(kept)], bits)
    return b"".join((bytes((shift,)), varint(count), kept[0].to_bytes((bits + 7) // 8, "big"), bytes((k,)), gaps))


def unpack_sketch(data: bytes, offset: int) -> tuple[bytes, int]:
    """The sketch packed at ``offset`` (its values without the bits
    :func:`pack_sketch` dropped: the same resemblance to any other), and the offset after it."""
    shift = data[offset]
    if shift == _EMPTY:
        return b"", offset + 1
    count, offset = read_varint(data, offset + 1)
    if shift == _RAW:
        return data[offset:offset + count], offset + count
    value = int.from_bytes(data[offset:offset + _FIRST], "big")
    gaps, offset = rice_decode(data, offset + _FIRST + 1, count - 1, data[offset + _FIRST])
    values = [value << shift]
    for gap in gaps:
        value += gap
        values.append(value << shift)
    return struct.pack(f">{count}I", *values), offset


def pack_record(doc_id: int, group_id: int, sketch: bytes, url: bytes | int) -> bytes:
    """A document's record under its simhash; ``url``: its URL, or its content fingerprint
    (the exact set's field holding the URL)."""
    delta = doc_id - group_id
    where = b"\0" + pack64(url) if isinstance(url, int) else varint(len(url) + 1) + url
    return b"".join((varint(doc_id), varint(delta << 1 if delta >= 0 else (-delta << 1) - 1),
                     pack_sketch(sketch), where))


def unpack_records(data: bytes) -> list[tuple[int, int, bytes, bytes | int]]:
    """Every ``(doc_id, group_id, sketch, url or content fingerprint)`` of one simhash's records."""
    records, offset = [], 0
    while offset < len(data):
        doc_id, offset = read_varint(data, offset)
        delta, offset = read_varint(data, offset)
        group_id = doc_id - (delta >> 1 if not delta & 1 else -((delta + 1) >> 1))
        sketch, offset = unpack_sketch(data, offset)
        length, offset = read_varint(data, offset)
        if length:
            records.append((doc_id, group_id, sketch, data[offset:offset + length - 1]))
            offset += length - 1
        else:
            records.append((doc_id, group_id, sketch, unpack64(data, offset)))
            offset += 8
    return records


class TableGeometry:
    """Where a simhash sits in each permuted table of ``layout``: the
    partition (the key's top bits), the member's top (the key's other bits,
    left-aligned in 24) and its rest (the simhash's bits outside the key)."""

    def __init__(self, layout: BlockLayout) -> None:
        self.layout = layout
        blocks = layout.block_bits
        self.tables: list[tuple[int, int, list[tuple[int, int, int]], list[tuple[int, int]]]] = []
        rest_bytes = 1
        for table in layout.tables:
            widths = [blocks[block][1] for block in table]
            key_bits = sum(widths)
            low_bits = key_bits - max(min(TABLE_PARTITION_BITS, key_bits), key_bits - _TOP_BITS)
            outside = [block for block in range(layout.blocks) if block not in table]
            rest_bits = 64 - key_bits
            # (start, width, shift in the key) of each key block; (start, width) of the others
            keyed = [(blocks[block][0], blocks[block][1], sum(widths[place + 1:]))
                     for place, block in enumerate(table)]
            self.tables.append((low_bits, _TOP_BITS - low_bits, keyed, [blocks[block] for block in outside]))
            rest_bytes = max(rest_bytes, (rest_bits + 7) // 8)
        self.width = 3 + rest_bytes

    def located(self, simhash: int) -> list[tuple[int, int, int]]:
        """Per table: ``(partition, top, rest)`` of ``simhash``."""
        places = []
        for key, (low_bits, align, _, outside) in zip(self.layout.keys(simhash), self.tables):
            bits = key & ((1 << TABLE_SHIFT) - 1)
            rest = 0
            for start, width in outside:
                rest = rest << width | (simhash >> start) & ((1 << width) - 1)
            places.append((bits >> low_bits, (bits & ((1 << low_bits) - 1)) << align, rest))
        return places

    def member(self, top: int, rest: int) -> bytes:
        return top.to_bytes(3, "big") + rest.to_bytes(self.width - 3, "big")

    def simhashes(self, table: int, partition: int, top: int, members: bytes) -> list[int]:
        """The simhashes of ``members`` (each with ``top``) of one table's partition."""
        low_bits, align, keyed, outside = self.tables[table]
        key = partition << low_bits | top >> align
        base = 0
        for start, width, shift in keyed:
            base |= (key >> shift & ((1 << width) - 1)) << start
        found = []
        for offset in range(0, len(members), self.width):
            rest = int.from_bytes(members[offset + 3:offset + self.width], "big")
            simhash = base
            for start, width in reversed(outside):
                simhash |= (rest & ((1 << width) - 1)) << start
                rest >>= width
            found.append(simhash)
        return found


#: a simhash's candidates read ahead: the table fields' values, and
#: :attr:`RedisNearDuplicateIndex.stored` when the read was sent (later
#: stores of this process are added from memory)
Prefetched = tuple[list[Any], int]


class RedisNearDuplicateIndex(RedisContentPart):
    """Stored simhashes with their first URL and group, searchable within distance k: sees every
    document this process added and every one other processes delivered; the keys keep their layout."""

    def __init__(self, store: RedisContentStore, layout: BlockLayout,
                 min_resemblance: float = DEFAULT_MIN_RESEMBLANCE) -> None:
        if not 0.0 <= min_resemblance <= 1.0:
            raise ValueError(f"min_resemblance must be in 0..1, not {min_resemblance}")
        super().__init__(store, ("lookups", "candidates", "max_candidates", "near_duplicates", "identical",
                                 "dissimilar", "stored"))
        self.layout, self.min_resemblance = layout, min_resemblance
        try:
            geometry = TableGeometry(layout)
            self._check_layout()
        except BaseException:
            self.store.detach()
            raise
        self.keys = self.store.keys
        self.geometry = geometry
        self._places = lru_cache(maxsize=256)(self._places)  # a page asks up to four times
        self._located = lru_cache(maxsize=256)(geometry.located)  # and for its candidates
        self.next_id, self.id_end = 0, 0
        self._prefetched: tuple[int, Prefetched] | None = None  # (simhash, its candidates)
        #: documents this process stored (numbered from 0), and the recent ones:
        #: (number, simhash, table fields), for reads sent before their store
        self.stored = 0
        self._recent: deque[tuple[int, int, frozenset[tuple[str, int]]]] = deque()

    def match(self, simhash: int, sketch: bytes | None = None) -> Match | None:
        """The closest resembling document within the distance (ties: the smallest id), or None."""
        return self.run(self.match_steps(simhash, sketch, self._take_prefetched(simhash)))

    def near(self, simhash: int, sketch: bytes | None = None) -> list[Match]:
        """Every resembling document within the distance, closest (then smallest id) first."""
        return self.run(self._lookup(simhash, sketch, False, self._take_prefetched(simhash)))[0]

    def prefetch(self, simhash: int) -> None:
        """Read ``simhash``'s candidates (and a new block of ids, if needed) with the store's
        next round trip, for the :meth:`add_or_match` that will probably follow."""
        reads = self.candidate_reads(simhash, add=True)
        reserve = self.reserve_commands()
        since = self.stored

        def deliver(answers: list[Any]) -> None:
            if reserve:
                self._reserved(answers[-1])
            self._prefetched = (simhash, (self.candidate_values(answers[:len(reads)]), since))

        self.store.ride(reads + reserve, deliver)

    def _take_prefetched(self, simhash: int) -> Prefetched | None:
        prefetched, self._prefetched = self._prefetched, None
        return prefetched[1] if prefetched is not None and prefetched[0] == simhash else None

    def reserve_commands(self) -> list[tuple[Any, ...]]:
        """A new block of document ids, if this process has none left."""
        return [("INCRBY", self.keys.ids, ID_BLOCK)] if self.next_id >= self.id_end else []

    def _reserved(self, answer: Any) -> None:
        end = int(answer)
        self.next_id, self.id_end = end - ID_BLOCK + 1, end + 1

    def add_or_match(self, simhash: int, url: str, sketch: bytes | None = None) -> tuple[int, str | None]:
        """``(group_id, near_duplicate_of)`` for a new document, stored: it joins the group of
        the closest resembling document within the distance, else starts its own."""
        found = self.run(self.add_or_match_steps(simhash, url, sketch, self._take_prefetched(simhash)))
        self.forget_stored(self.stored)  # every later read sees the documents stored so far
        return found

    def add_or_match_steps(self, simhash: int, url: str, sketch: bytes | None,
                           prefetched: Prefetched | None = None,
                           fingerprint: int | None = None) -> Steps[tuple[int, str | None]]:
        """:meth:`add_or_match` as round trips; with the page's content
        ``fingerprint``, already recorded with ``url`` in the exact set, the
        record keeps the fingerprint instead of the URL."""
        matches, reserved = yield from self._lookup(simhash, sketch, True, prefetched, self.reserve_commands(),
                                                    add=True)
        if reserved:
            self._reserved(reserved[0])
        return near_verdict(self, matches[0] if matches else None,
                            lambda doc_id, group_id: self._store(simhash, doc_id, group_id,
                                                                 url if fingerprint is None else fingerprint, sketch))

    def match_steps(self, simhash: int, sketch: bytes | None, prefetched: Prefetched | None = None,
                    named: bool = True) -> Steps[Match | None]:
        """:meth:`match` as round trips; without ``named`` the match's URL
        may be its content fingerprint (one round trip fewer)."""
        found, _ = yield from self._lookup(simhash, sketch, True, prefetched, named=named)
        return found[0] if found else None

    def forget_stored(self, before: int) -> None:
        """Documents stored before number ``before`` are visible to every read still to be answered."""
        while self._recent and self._recent[0][0] < before:
            self._recent.popleft()

    def stats(self) -> dict[str, int]:
        """Counters since open, plus the commands buffered (a gauge)."""
        return {**self.counters, "buffered": self.store.pending()}

    # -- look-up -------------------------------------------------------------------
    def _places(self, simhash: int) -> list[tuple[str, int, int]]:
        """Per table: the partition key, the member's top and rest of ``simhash``."""
        return [(self.keys.near_table(table, partition), top, rest)
                for table, (partition, top, rest) in enumerate(self._located(simhash))]

    def candidate_reads(self, simhash: int, add: bool) -> list[tuple[Any, ...]]:
        """The reads of ``simhash``'s table members (one script; one per table on a cluster);
        with ``add``, each then adds ``simhash`` to its table (a document about to be stored:
        every one but an identical one, whose simhash is there already)."""
        head = (TABLE_BUCKET if add else 0, self.geometry.width)
        members = [(key, self.geometry.member(top, rest)) for key, top, rest in self._places(simhash)]
        groups = [[item] for item in members] if self.store.connection.cluster else [members]
        return [("EVAL", READ, len(group), *[key for key, _ in group], *head, *[member for _, member in group])
                for group in groups]

    def candidate_values(self, answers: list[Any]) -> list[Any]:
        """Per table, the members read by :meth:`candidate_reads`."""
        return [found for answer in answers for found in answer]

    def _candidates(self, simhash: int, values: list[Any]) -> set[int]:
        """The simhashes in the tables' members read for ``simhash``."""
        found: set[int] = set()
        for table, ((partition, top, _), members) in enumerate(zip(self._located(simhash), values)):
            if members:
                found.update(self.geometry.simhashes(table, partition, top, members))
        return found

    def _lookup(self, simhash: int, sketch: bytes | None, closest: bool, prefetched: Prefetched | None,
                extra: list[tuple[Any, ...]] | None = None,
                named: bool = True, add: bool = False) -> Steps[tuple[list[Match], list[Any]]]:
        """Stored documents within the distance and resembling, sorted (only
        the closest if ``closest``), with their URLs if ``named``, and the answers to ``extra``;
        ``add``: the read adds ``simhash`` to the tables (:meth:`candidate_reads`)."""
        self.counters["lookups"] += 1
        if prefetched is not None:
            values, since = prefetched
            extra_answers = (yield extra) if extra and self.next_id >= self.id_end else []
        else:
            since = self.stored
            reads = self.candidate_reads(simhash, add)
            answers = yield [*reads, *(extra or [])]
            values, extra_answers = self.candidate_values(answers[:len(reads)]), answers[len(reads):]
        candidates = self._candidates(simhash, values)
        if self._recent and self._recent[-1][0] >= since:
            # stored by this process after the read was sent: it could not see them
            fields = frozenset((key, top) for key, top, _ in self._places(simhash))
            candidates |= {other for number, other, at in self._recent if number >= since and fields & at}
        self.counters["candidates"] += len(candidates)
        self.counters["max_candidates"] = max(self.counters["max_candidates"], len(candidates))
        within = {other: (simhash ^ other).bit_count() for other in candidates}
        within = {other: distance for other, distance in within.items() if distance <= self.layout.distance}
        if not within:
            return [], extra_answers
        # every record within the distance: the closest may not resemble the query
        records = yield [read_records(self.keys.near_doc(other), other) for other in within]
        matches: list[Match] = []
        for (other, distance), record in zip(within.items(), records):
            # None: another process's table write arrived before its record
            matches += self._resembling_matches(record[0] or b"", distance, sketch)
        matches.sort(key=lambda found: (found.distance, found.doc_id))
        if closest and matches:
            matches = [found for found in matches if found.distance == matches[0].distance]
        referred = [found for found in matches if isinstance(found.url, int)]
        if referred and named:  # their URLs are in the exact set
            urls = yield [read_records(self.keys.exact(found.url), found.url) for found in referred]
            named = {found.doc_id: decode_url(url[0]) for found, url in zip(referred, urls) if url[0] is not None}
            matches = [found if not isinstance(found.url, int) else found._replace(url=named[found.doc_id])
                       for found in matches if not isinstance(found.url, int) or found.doc_id in named]
        return matches, extra_answers

    def _resembling_matches(self, records: bytes, distance: int, sketch: bytes | None) -> list[Match]:
        """The documents of one simhash's records that resemble ``sketch``."""
        matches = []
        for doc_id, group_id, other, url in unpack_records(records):
            estimate = resembling(sketch, other or None, self.min_resemblance)
            if estimate is False:
                self.counters["dissimilar"] += 1
            else:  # a content fingerprint in place of the URL until _lookup reads it
                matches.append(Match(doc_id, group_id, url if isinstance(url, int) else decode_url(url),
                                     distance, estimate))
        return matches

    # -- storing -------------------------------------------------------------------
    def _store(self, simhash: int, doc_id: int, group_id: int, url: str | int, sketch: bytes | None) -> None:
        """Buffer the record (its table members were added by the read; a reader skips a member
        without its record)."""
        self.counters["stored"] += 1
        self.write("EVAL", APPEND_RECORD, 1, self.keys.near_doc(simhash), BUCKET_BYTES, member_of(simhash),
                   pack_record(doc_id, group_id, sketch or b"", url if isinstance(url, int) else encode_url(url)))
        self._recent.append((self.stored, simhash, frozenset((key, top) for key, top, _ in self._places(simhash))))
        self.stored += 1

    def _check_layout(self) -> None:
        """The crawl's keys keep the layout they were created with."""
        meta = self.store.keys.meta
        expected = {"schema": SCHEMA_VERSION, "distance": str(self.layout.distance),
                    "blocks": str(self.layout.blocks)}
        answers = self.store.call(*[("HSETNX", meta, name, value) for name, value in expected.items()],
                                  ("HMGET", meta, *expected))
        for (name, value), stored in zip(expected.items(), answers[-1]):
            if name == "schema" and stored.decode() != value:
                raise ContentStoreError(
                    f"the content-seen keys at {self.store.location} were written in layout "
                    f"{stored.decode()}, this release reads layout {value} only: finish that crawl with "
                    "the release that began it, or start it over (SCHEDULER_FLUSH_ON_START=True deletes "
                    "its keys) or under another FRONTIER_REDIS_PREFIX")
            if stored.decode() != value:
                raise ContentStoreError(
                    f"the content-seen keys at {self.store.location} have {name}={stored.decode()}, "
                    f"expected {value}: choose another FRONTIER_REDIS_PREFIX or delete them")
