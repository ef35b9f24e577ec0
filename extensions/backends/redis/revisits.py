"""Per-URL re-visit history in Redis: the RevisitTable of
:class:`~extensions.backends.redis.store.RedisStore` (layout: docs/reference/redis-layout.md)."""

from __future__ import annotations

import calendar
import heapq
import math
import struct
import uuid
from collections.abc import Callable, Iterator, Sequence
from email.utils import formatdate, parsedate
from typing import Any

from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.keys import Keys, found_values, group_by_tag
from extensions.backends.redis.rows import tag_of
from extensions.backends.redis.scripts import lua
from extensions.frontier.store import RevisitCounts, RevisitRecord

Command = tuple[Any, ...]
CLUSTER_SHARDS = 16  # due-order shards on a Redis Cluster (one on a single Redis)

_TIMES = struct.Struct("<Bddd")  # flags, first visit, last visit, last change
_SMALL, _LARGE = struct.Struct("<BBB"), struct.Struct("<IIH")  # visits, changes, gone
_FLOAT, _DOUBLE = struct.Struct("<f"), struct.Struct("<d")  # the interval
# flag bits: which forms and optional parts follow
_CONTENT, _DATE, _TEXT_DATE, _ETAG, _SMALL_COUNTS, _FLOAT_INTERVAL = 1, 2, 4, 8, 16, 32
_INT64, _UINT32, _UINT16 = struct.Struct("<q"), struct.Struct("<I"), struct.Struct("<H")
_UTF8 = "surrogatepass"  # any str round-trips

TAKE = lua("revisit_take")


def _http_date(text: str) -> int | None:
    """``text`` as unix seconds if it is an IMF-fixdate that formats back to it, else None."""
    if len(text) != 29 or not text.endswith(" GMT"):
        return None
    parsed = parsedate(text)
    if parsed is None:
        return None
    seconds = calendar.timegm(parsed)
    if not 0 <= seconds < 1 << 32 or formatdate(seconds, usegmt=True) != text:
        return None
    return seconds


def _exact_float32(value: float) -> bool:
    try:
        return _FLOAT.unpack(_FLOAT.pack(value))[0] == value
    except OverflowError:
        return False


def pack_record(record: RevisitRecord) -> bytes:
    """Every field of ``record`` but the fingerprint and ``due``, packed small."""
    flags, tail = 0, []
    if _exact_float32(record.interval):
        flags |= _FLOAT_INTERVAL
        tail.append(_FLOAT.pack(record.interval))
    else:
        tail.append(_DOUBLE.pack(record.interval))
    if all(0 <= count < 256 for count in (record.visits, record.changes, record.gone)):
        flags |= _SMALL_COUNTS
        tail.append(_SMALL.pack(record.visits, record.changes, record.gone))
    else:
        tail.append(_LARGE.pack(record.visits, record.changes, record.gone))
    if record.content is not None:
        flags |= _CONTENT
        tail.append(_INT64.pack(record.content))
    seconds = None if record.last_modified is None else _http_date(record.last_modified)
    if seconds is not None:
        flags |= _DATE
        tail.append(_UINT32.pack(seconds))
    elif record.last_modified is not None:
        flags |= _TEXT_DATE
    if record.etag is not None:
        flags |= _ETAG
        etag = record.etag.encode("utf-8", _UTF8)
        tail += [_UINT16.pack(len(etag)), etag] if flags & _TEXT_DATE else [etag]  # else the rest of the value
    if flags & _TEXT_DATE:
        tail.append(record.last_modified.encode("utf-8", _UTF8))
    return _TIMES.pack(flags, record.first_visit, record.last_visit, record.last_change) + b"".join(tail)


def unpack_record(fingerprint: int, due: float, value: bytes) -> RevisitRecord:
    """The record :func:`pack_record` packed."""
    flags, first, last, change = _TIMES.unpack_from(value)
    at, content, etag, modified = _TIMES.size, None, None, None
    interval_form = _FLOAT if flags & _FLOAT_INTERVAL else _DOUBLE
    interval = interval_form.unpack_from(value, at)[0]
    at += interval_form.size
    counts_form = _SMALL if flags & _SMALL_COUNTS else _LARGE
    visits, changes, gone = counts_form.unpack_from(value, at)
    at += counts_form.size
    if flags & _CONTENT:
        content = _INT64.unpack_from(value, at)[0]
        at += 8
    if flags & _DATE:
        modified = formatdate(_UINT32.unpack_from(value, at)[0], usegmt=True)
        at += 4
    if flags & _ETAG and flags & _TEXT_DATE:
        size = _UINT16.unpack_from(value, at)[0]
        etag = value[at + 2:at + 2 + size].decode("utf-8", _UTF8)
        at += 2 + size
    elif flags & _ETAG:
        etag = value[at:].decode("utf-8", _UTF8)
    if flags & _TEXT_DATE:
        modified = value[at:].decode("utf-8", _UTF8)
    return RevisitRecord(fingerprint, due, float(interval), visits, changes, first, last, change,
                         content, etag, modified, gone)


def _pairs(answer: list[Any]) -> list[tuple[int, float]]:
    """A script's flat ``member, score, ...`` answer as (fingerprint, score) (redis-py gives
    a ZRANGE ... WITHSCORES as such pairs already)."""
    return [(int(answer[i]), float(answer[i + 1])) for i in range(0, len(answer), 2)]


class RedisRevisitTable:
    """The re-visit table over the store's connection."""

    def __init__(self, keys: Keys, connection: Callable[[], RedisConnection],
                 writable: Callable[[], bool]) -> None:
        self.keys, self._connection, self._writable = keys, connection, writable
        self._owner, self._takes = uuid.uuid4().hex, 0
        self._shards: int | None = None

    # -- shards ----------------------------------------------------------------------
    @property
    def shards(self) -> int:
        """The crawl's due-order shard count (fixed when first used)."""
        if self._shards is None:
            connection = self._connection()
            default = CLUSTER_SHARDS if connection.cluster else 1
            if self._writable():
                connection.write("HSETNX", self.keys.meta, "revisit_shards", default)
            recorded = connection.call(("HGET", self.keys.meta, "revisit_shards"))[0]
            self._shards = default if recorded is None else int(recorded)
        return self._shards

    def _shard(self, fingerprint: int) -> int:
        return int(tag_of(fingerprint), 16) % self.shards

    # -- RevisitTable ------------------------------------------------------------------
    def get(self, fingerprints: Sequence[int]) -> dict[int, RevisitRecord]:
        if not fingerprints:
            return {}
        fingerprints = list(dict.fromkeys(fingerprints))
        by_tag = group_by_tag(fingerprints, tag_of)
        reads, dues_of = self._due_reads(fingerprints)
        answers = self._connection().call(
            *[("HMGET", self.keys.revisit(tag), *fps) for tag, fps in by_tag.items()], *reads)
        dues = dues_of(answers[len(by_tag):])
        return {fp: unpack_record(fp, dues[fp], value) for fp, value in found_values(by_tag.values(), answers).items()}

    def put(self, records: Sequence[RevisitRecord]) -> None:
        if not records:
            return
        latest = {record.fingerprint: record for record in records}  # the last of a fingerprint wins
        connection = self._connection()
        for tag, group in group_by_tag(latest.values(), lambda r: tag_of(r.fingerprint)).items():
            fields = [part for record in group for part in (record.fingerprint, pack_record(record))]
            connection.write("HSET", self.keys.revisit(tag), *fields)
        for shard, group in group_by_tag(latest.values(), lambda r: str(self._shard(r.fingerprint))).items():
            scores = [part for r in group for part in ("+inf" if math.isinf(r.due) else repr(r.due), r.fingerprint)]
            connection.write("ZADD", self.keys.revisit_due(int(shard)), *scores)
            gone = [r.fingerprint for r in group if r.gone > 0]
            alive = [r.fingerprint for r in group if r.gone <= 0]
            if gone:
                connection.write("SADD", self.keys.revisit_gone(int(shard)), *gone)
            if alive:
                connection.write("SREM", self.keys.revisit_gone(int(shard)), *alive)

    def take_due(self, now: float, limit: int) -> list[RevisitRecord]:
        if limit < 1:
            return []
        wanted = self._plan(now, limit)
        if not wanted:
            return []
        commands = []
        for shard, count in wanted.items():
            self._takes += 1  # the call's id: a retry sends the same one
            commands.append(("EVAL", TAKE, 2, self.keys.revisit_due(shard), self.keys.revisit_taken(shard),
                             repr(float(now)), count, self._owner, self._takes))
        taken = sorted((due, fp) for answer in self._connection().call(*commands)
                       for fp, due in _pairs(answer))
        found = self._records([fp for _, fp in taken])
        # a due entry whose record is missing (a crash between the two writes) is dropped
        return [unpack_record(fp, due, found[fp]) for due, fp in taken if fp in found]

    def _plan(self, now: float, limit: int) -> dict[int, int]:
        """How many to take from each shard: the ``limit`` earliest due entries across shards."""
        if self.shards == 1:
            return {0: limit}
        heads = self._connection().call(*[
            ("ZRANGE", self.keys.revisit_due(shard), "-inf", repr(float(now)), "BYSCORE", "LIMIT", 0, limit,
             "WITHSCORES") for shard in range(self.shards)])
        entries = heapq.nsmallest(limit, ((due, shard) for shard, answer in enumerate(heads)
                                          for _, due in answer))
        wanted: dict[int, int] = {}
        for _, shard in entries:
            wanted[shard] = wanted.get(shard, 0) + 1
        return wanted

    def _records(self, fingerprints: list[int]) -> dict[int, bytes]:
        """The packed records of ``fingerprints`` (one round trip)."""
        if not fingerprints:
            return {}
        by_tag = group_by_tag(fingerprints, tag_of)
        answers = self._connection().call(*[("HMGET", self.keys.revisit(tag), *fps) for tag, fps in by_tag.items()])
        return found_values(by_tag.values(), answers)

    def next_due(self) -> float | None:
        heads = self._connection().call(*[("ZRANGE", self.keys.revisit_due(shard), 0, 0, "WITHSCORES")
                                          for shard in range(self.shards)])
        dues = [due for answer in heads for _, due in answer if not math.isinf(due)]
        return min(dues) if dues else None

    def count_due(self, now: float) -> int:
        return sum(self._connection().call(*[("ZCOUNT", self.keys.revisit_due(shard), "-inf", repr(float(now)))
                                             for shard in range(self.shards)]))

    def counts(self) -> RevisitCounts:
        commands: list[tuple[Any, ...]] = []
        for shard in range(self.shards):
            due = self.keys.revisit_due(shard)
            commands += [("ZCARD", due), ("ZCOUNT", due, "-inf", "(+inf"), ("SCARD", self.keys.revisit_gone(shard))]
        answers = self._connection().call(*commands)
        return RevisitCounts(sum(answers[0::3]), sum(answers[1::3]), sum(answers[2::3]))

    def scan(self, batch: int = 10_000) -> Iterator[list[RevisitRecord]]:
        connection, batch = self._connection(), max(1, batch)
        found: list[tuple[int, bytes]] = []
        for key in list(connection.scan(self.keys.revisit_pattern)):
            for field, value in connection.hscan(key, batch):
                found.append((int(field), value))
                if len(found) >= batch:
                    yield self._with_dues(found)
                    found = []
        if found:
            yield self._with_dues(found)

    def _with_dues(self, packed: list[tuple[int, bytes]]) -> list[RevisitRecord]:
        reads, dues_of = self._due_reads([fp for fp, _ in packed])
        dues = dues_of(self._connection().call(*reads))
        return [unpack_record(fp, dues[fp], value) for fp, value in packed]

    def _due_reads(self, fingerprints: list[int]) -> tuple[list[Command], Callable[[list[Any]], dict[int, float]]]:
        """The ZMSCORE reads of the due times, and their answers as ``fingerprint -> due``."""
        by_shard = group_by_tag(fingerprints, lambda fp: str(self._shard(fp)))

        def dues(answers: list[Any]) -> dict[int, float]:
            return {fp: math.inf if score is None else float(score)
                    for fps, scores in zip(by_shard.values(), answers) for fp, score in zip(fps, scores)}
        return [("ZMSCORE", self.keys.revisit_due(int(shard)), *fps) for shard, fps in by_shard.items()], dues
