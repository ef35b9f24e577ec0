"""The near-duplicate index in Redis, shared by every crawler process of a crawl.

The look-up, answers and groups of
:class:`~extensions.contentseen.nearindex.NearDuplicateIndex` (permuted
tables of :class:`BlockLayout`), stored in Redis (keys:
:mod:`extensions.backends.redis.contentseen`). A table's key splits into its
top 8 bits (the partition ``{tN-Y}``) and the rest (the hash field, whose
value is the simhashes appended under that key). A look-up reads the
query's table fields in one round trip and the records of the candidates
within the distance in a second one, only when there are some. Document ids
are reserved in blocks per process: ties between equally close matches go
to the smallest id, and two near-duplicates judged at once by two
processes may both start a group.
"""

from __future__ import annotations

import struct
from collections import deque
from dataclasses import dataclass
from typing import Any

from extensions.backends.redis.contentseen import (
    SCHEMA_VERSION,
    RedisContentPart,
    RedisContentStore,
    Steps,
    decode_url,
    encode_url,
    pack64,
    unpack64,
)
from extensions.backends.redis.scripts import lua
from extensions.backends.redis.tables import MULTI_HMGET
from extensions.contentseen.exact import ContentStoreError
from extensions.contentseen.nearindex import (
    DEFAULT_BLOCKS,
    DEFAULT_DISTANCE,
    DEFAULT_MIN_RESEMBLANCE,
    TABLE_SHIFT,
    BlockLayout,
    Match,
    near_verdict,
    resembling,
)

TABLE_PARTITION_BITS = 8  # a table's partitions: the top 8 bits of its key
ID_BLOCK = 1024  # document ids reserved per INCRBY
_DOC = struct.Struct(">qqHI")  # id, group id, sketch and URL lengths; the sketch, then the URL follow

#: the scripts: lua/near_*.lua (each says its KEYS, ARGV and answer)
APPEND_RECORD, APPEND = lua("near_append_record"), lua("near_append")


@dataclass(frozen=True)
class Prefetched:
    """A simhash's candidates read ahead: the table fields' values, and
    :attr:`RedisNearDuplicateIndex.stored` when the read was sent (later
    stores of this process are added from memory)."""

    values: list[Any]
    since: int


class RedisNearDuplicateIndex(RedisContentPart):
    """Stored simhashes with their first URL and group, searchable within
    distance k: sees every document this process added before and every one
    other processes delivered; the keys keep the layout they were created with."""

    def __init__(self, store: RedisContentStore, layout: BlockLayout, id_block: int = ID_BLOCK,
                 min_resemblance: float = DEFAULT_MIN_RESEMBLANCE) -> None:
        if id_block < 1:
            raise ValueError(f"id_block must be >= 1, not {id_block}")
        if not 0.0 <= min_resemblance <= 1.0:
            raise ValueError(f"min_resemblance must be in 0..1, not {min_resemblance}")
        super().__init__(store, ("lookups", "candidates", "max_candidates", "near_duplicates", "identical",
                                 "dissimilar", "stored"))
        self.layout, self.id_block, self.min_resemblance = layout, id_block, min_resemblance
        try:
            self._check_layout()
        except BaseException:
            self.store.detach()
            raise
        self.keys = self.store.keys
        # per table: (bits below the partition, bytes of the field)
        self._shapes = []
        for table in layout.tables:
            rest = max(sum(layout.block_bits[block][1] for block in table) - TABLE_PARTITION_BITS, 0)
            self._shapes.append((rest, max((rest + 7) // 8, 1)))
        self.next_id, self.id_end = 0, 0
        self._prefetched: tuple[int, Prefetched] | None = None  # (simhash, its candidates)
        #: documents this process stored (numbered from 0), and the recent ones:
        #: (number, simhash, table fields), for reads sent before their store
        self.stored = 0
        self._recent: deque[tuple[int, int, frozenset[tuple[str, bytes]]]] = deque()

    @classmethod
    def open(cls, url: str, prefix: str = "web", distance: int = DEFAULT_DISTANCE,
             blocks: int = DEFAULT_BLOCKS, min_resemblance: float = DEFAULT_MIN_RESEMBLANCE,
             **options: Any) -> RedisNearDuplicateIndex:
        """An index on a connection of its own (``options``: :class:`RedisContentStore`'s)."""
        return cls(RedisContentStore(url, prefix, **options), BlockLayout(distance, blocks),
                   min_resemblance=min_resemblance)

    def match(self, simhash: int, sketch: bytes | None = None) -> Match | None:
        """The closest stored document within the distance and resembling
        (ties: the smallest id), or None."""
        return self.run(self.match_steps(simhash, sketch, self._take_prefetched(simhash)))

    def near(self, simhash: int, sketch: bytes | None = None) -> list[Match]:
        """Every stored document within the distance and resembling, closest
        (then smallest id) first."""
        return self.run(self._lookup(simhash, sketch, False, self._take_prefetched(simhash)))[0]

    def prefetch(self, simhash: int) -> None:
        """Read ``simhash``'s candidates (and a new block of ids, if needed)
        with the store's next round trip, for the :meth:`add_or_match` that
        will probably follow."""
        reads = self.candidate_reads(simhash)
        reserve = self.reserve_commands()
        since = self.stored

        def deliver(answers: list[Any]) -> None:
            if reserve:
                self._reserved(answers[-1])
            self._prefetched = (simhash, Prefetched(self.candidate_values(answers[:len(reads)]), since))

        self.store.ride(reads + reserve, deliver)

    def _take_prefetched(self, simhash: int) -> Prefetched | None:
        prefetched, self._prefetched = self._prefetched, None
        return prefetched[1] if prefetched is not None and prefetched[0] == simhash else None

    def reserve_commands(self) -> list[tuple[Any, ...]]:
        """A new block of document ids, if this process has none left."""
        return [("INCRBY", self.keys.ids, self.id_block)] if self.next_id >= self.id_end else []

    def _reserved(self, answer: Any) -> None:
        end = int(answer)
        self.next_id, self.id_end = end - self.id_block + 1, end + 1

    def add_or_match(self, simhash: int, url: str, sketch: bytes | None = None) -> tuple[int, str | None]:
        """``(group_id, near_duplicate_of)`` for a new document, which is
        stored: it joins the group of the closest resembling document within
        the distance, else starts its own."""
        found = self.run(self.add_or_match_steps(simhash, url, sketch, self._take_prefetched(simhash)))
        self.forget_stored(self.stored)  # every later read sees the documents stored so far
        return found

    def add_or_match_steps(self, simhash: int, url: str, sketch: bytes | None,
                           prefetched: Prefetched | None = None) -> Steps[tuple[int, str | None]]:
        """:meth:`add_or_match` as round trips."""
        matches, reserved = yield from self._lookup(simhash, sketch, True, prefetched, self.reserve_commands())
        if reserved:
            self._reserved(reserved[0])
        return near_verdict(self, matches[0] if matches else None,
                            lambda doc_id, group_id: self._store(simhash, doc_id, group_id, url, sketch))

    def match_steps(self, simhash: int, sketch: bytes | None,
                    prefetched: Prefetched | None = None) -> Steps[Match | None]:
        """:meth:`match` as round trips."""
        found, _ = yield from self._lookup(simhash, sketch, True, prefetched)
        return found[0] if found else None

    def forget_stored(self, before: int) -> None:
        """Documents stored before number ``before`` are visible to every read still to be answered."""
        while self._recent and self._recent[0][0] < before:
            self._recent.popleft()

    def stats(self) -> dict[str, int]:
        """Counters since open, plus the commands buffered (a gauge)."""
        return {**self.counters, "buffered": self.store.pending()}

    # -- look-up -------------------------------------------------------------------
    def _fields(self, simhash: int) -> list[tuple[str, bytes]]:
        """The (partition key, field) of each table for ``simhash``."""
        located = []
        for key, (rest, size) in zip(self.layout.keys(simhash), self._shapes):
            table, bits = key >> TABLE_SHIFT, key & ((1 << TABLE_SHIFT) - 1)
            located.append((self.keys.near_table(table, bits >> rest),
                            (bits & ((1 << rest) - 1)).to_bytes(size, "big")))
        return located

    def candidate_reads(self, simhash: int) -> list[tuple[Any, ...]]:
        """The reads of ``simhash``'s table fields (one script on a single Redis)."""
        fields = self._fields(simhash)
        if self.store.cluster:
            return [("HGET", key, field) for key, field in fields]
        return [("EVAL", MULTI_HMGET, len(fields), *[key for key, _ in fields],
                 *[part for _, field in fields for part in (1, field)])]

    def candidate_values(self, answers: list[Any]) -> list[Any]:
        """The table fields' values from the answers to :meth:`candidate_reads`."""
        if self.store.cluster:
            return answers
        return [found[0] for found in answers[0]] if answers else []

    def _lookup(self, simhash: int, sketch: bytes | None, closest: bool, prefetched: Prefetched | None,
                extra: list[tuple[Any, ...]] | None = None) -> Steps[tuple[list[Match], list[Any]]]:
        """Stored documents within the distance and resembling, sorted (only
        the closest if ``closest``), and the answers to ``extra``."""
        self.counters["lookups"] += 1
        if prefetched is not None:
            values, since = prefetched.values, prefetched.since
            extra_answers = (yield extra) if extra and self.next_id >= self.id_end else []
        else:
            since = self.stored
            reads = self.candidate_reads(simhash)
            answers = yield [*reads, *(extra or [])]
            values, extra_answers = self.candidate_values(answers[:len(reads)]), answers[len(reads):]
        candidates = {unpack64(value, offset) for value in values if value
                      for offset in range(0, len(value), 8)}
        if self._recent and self._recent[-1][0] >= since:
            # stored by this process after the read was sent: it could not see them
            fields = set(self._fields(simhash))
            candidates |= {other for number, other, at in self._recent if number >= since and fields & at}
        self.counters["candidates"] += len(candidates)
        self.counters["max_candidates"] = max(self.counters["max_candidates"], len(candidates))
        within = {other: (simhash ^ other).bit_count() for other in candidates}
        within = {other: distance for other, distance in within.items() if distance <= self.layout.distance}
        if not within:
            return [], extra_answers
        # every record within the distance: the closest may not resemble the query
        records = yield [("HGET", self.keys.near_doc(other), pack64(other)) for other in within]
        matches = []
        for (other, distance), record in zip(within.items(), records):
            # None: another process's table write arrived before its record
            for found in self._resembling_matches(record or b"", distance, sketch):
                matches.append(found)
        matches.sort(key=lambda found: (found.distance, found.doc_id))
        if closest and matches:
            matches = [found for found in matches if found.distance == matches[0].distance]
        return matches, extra_answers

    def _resembling_matches(self, records: bytes, distance: int, sketch: bytes | None) -> list[Match]:
        """The documents of one simhash's records that resemble ``sketch``."""
        matches, offset = [], 0
        while offset + _DOC.size <= len(records):
            doc_id, group_id, sketch_length, url_length = _DOC.unpack_from(records, offset)
            offset += _DOC.size
            other = records[offset:offset + sketch_length] if sketch_length else None
            url = decode_url(records[offset + sketch_length:offset + sketch_length + url_length])
            offset += sketch_length + url_length
            estimate = resembling(sketch, other, self.min_resemblance)
            if estimate is False:
                self.counters["dissimilar"] += 1
            else:
                matches.append(Match(doc_id, group_id, url, distance, estimate))
        return matches

    # -- storing -------------------------------------------------------------------
    def _store(self, simhash: int, doc_id: int, group_id: int, url: str, sketch: bytes | None) -> None:
        """Buffer the record, then the table entries (a reader skips an entry without its record)."""
        self.counters["stored"] += 1
        packed = pack64(simhash)
        sketch = sketch or b""
        encoded = encode_url(url)
        self.write("EVAL", APPEND_RECORD, 1, self.keys.near_doc(simhash), packed,
                   _DOC.pack(doc_id, group_id, len(sketch), len(encoded)) + sketch + encoded)
        fields = self._fields(simhash)
        for group in ([[item] for item in fields] if self.store.cluster else [fields]):
            self.write("EVAL", APPEND, len(group), *[key for key, _ in group],
                       *[part for _, field in group for part in (field, packed)])
        self._recent.append((self.stored, simhash, frozenset(fields)))
        self.stored += 1

    def _check_layout(self) -> None:
        """The crawl's keys keep the layout they were created with."""
        meta = self.store.keys.meta
        expected = {"schema": SCHEMA_VERSION, "distance": str(self.layout.distance),
                    "blocks": str(self.layout.blocks)}
        answers = self.store.call(*[("HSETNX", meta, name, value) for name, value in expected.items()],
                                  ("HMGET", meta, *expected))
        for (name, value), stored in zip(expected.items(), answers[-1]):
            if stored.decode() != value:
                raise ContentStoreError(
                    f"the content-seen keys at {self.store.location} have {name}={stored.decode()}, "
                    f"expected {value}: choose another FRONTIER_REDIS_PREFIX or delete them")
