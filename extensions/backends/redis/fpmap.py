"""A value per fingerprint, packed per host tag in extendible hash tables: the fpmap
(string buckets) and the hashmap (Redis-hash buckets); layout: docs/reference/redis-layout.md."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.fpset import MEMBER_BITS
from extensions.backends.redis.keys import found_values, group_by_tag
from extensions.backends.redis.rows import expand_row, read_varint, tag_of
from extensions.backends.redis.scripts import lua

FPMAP_GET, FPMAP_PUT = lua("map_get", GET="fpmap_get"), lua("map_put", SET="fpmap_set")
HASHMAP_GET, HASHMAP_PUT = lua("map_get", GET="hashmap_get"), lua("map_put", SET="hashmap_set")
ROW_GET, ROW_PUT = lua("map_get", GET="row_get"), lua("map_put", SET="row_set")


def records(bucket: bytes) -> Iterator[tuple[bytes, bytes]]:
    """The ``(member, value)`` records of one bucket."""
    at = 0
    while at < len(bucket):
        length, first = read_varint(bucket, at + 5)
        yield bucket[at:at + 5], bucket[first:first + length]
        at = first + length


def fingerprint_of(key: bytes, member: bytes) -> int:
    """The signed fingerprint of ``member`` in the map of ``key`` (its tag in braces)."""
    fingerprint = int(key[key.index(b"{") + 1:key.index(b"}")], 16) << MEMBER_BITS | int.from_bytes(member, "big")
    return fingerprint - (1 << 64) if fingerprint >= 1 << 63 else fingerprint


class FingerprintMaps:
    """The fpmaps ``key_of(tag)`` of every tag, over the store's connection
    (``bucket_size``: a bucket's most bytes)."""

    GET, PUT = FPMAP_GET, FPMAP_PUT

    def __init__(self, key_of: Callable[[str], str], pattern: str,
                 connection: Callable[[], RedisConnection], bucket_size: int) -> None:
        self.key_of, self.pattern, self._connection = key_of, pattern, connection
        self.bucket_size = bucket_size

    def _commands(self, script: str, head: list[Any], items: list[tuple[str, list[Any]]]) -> list[tuple[Any, ...]]:
        """``script`` over ``(key, arguments)`` items: one call per key on a cluster, else one."""
        groups = [[item] for item in items] if self._connection().cluster else [items] if items else []
        return [("EVAL", script, len(group), *[key for key, _ in group], *head,
                 *[arg for _, args in group for arg in (len(args), *args)]) for group in groups]

    def reads(self, fingerprints: Sequence[int]) -> tuple[list[tuple[Any, ...]], Callable[[list[Any]], dict[int, bytes]]]:
        """The commands reading the values of ``fingerprints``, and how to
        turn their answers into ``fingerprint -> value`` (missing ones left out)."""
        by_tag = group_by_tag(list(dict.fromkeys(fingerprints)), tag_of)
        commands = self._commands(self.GET, [], [(self.key_of(tag), fps) for tag, fps in by_tag.items()])

        def values(answers: list[Any]) -> dict[int, bytes]:
            per_key = [values for answer in answers for values in answer]
            return found_values(by_tag.values(), [[v if v else None for v in vs] for vs in per_key])
        return commands, values

    def get(self, fingerprints: Sequence[int]) -> dict[int, bytes]:
        if not fingerprints:
            return {}
        commands, values = self.reads(fingerprints)
        return values(self._connection().call(*commands))

    def put(self, values: Sequence[tuple[int, bytes]]) -> None:
        """Set each ``(fingerprint, value)`` (buffered)."""
        items = [(self.key_of(tag), [a for fp, value in tagged for a in (fp, value)])
                 for tag, tagged in group_by_tag(values, lambda item: tag_of(item[0])).items()]
        connection = self._connection()
        for command in self._commands(self.PUT, [self.bucket_size], items):
            connection.write(*command)

    def count(self) -> int:
        """Values over every tag's map (a SCAN)."""
        keys = list(self._connection().scan(self.pattern))
        return sum(int(n or 0) for n in self._connection().call(*[("HGET", key, "N") for key in keys])) if keys else 0

    def buckets(self, batch: int = 1000, field: str | None = None) -> Iterator[tuple[bytes, bytes, Any]]:
        """``(directory key, bucket, the directory's field)`` of every tag's map
        (a SCAN of the bucket keys; the field read in the bucket's round trip)."""
        connection = self._connection()
        keys = list(connection.scan(self.pattern + ":*"))
        for start in range(0, len(keys), batch):
            chunk = keys[start:start + batch]
            directories = [key.rsplit(b":", 2)[0] for key in chunk]
            reads = [("HGET", key, field) for key in directories] if field is not None else []
            answers = connection.call(*[("GET", key) for key in chunk], *reads)
            fields = answers[len(chunk):] if reads else [None] * len(chunk)
            for directory, bucket, value in zip(directories, answers, fields):
                if bucket:
                    yield directory, bucket, value

    def items(self, batch: int = 1000) -> Iterator[tuple[int, bytes]]:
        """Every ``(fingerprint, value)`` of every tag's map (a SCAN)."""
        for key, bucket, _ in self.buckets(batch):
            for member, value in records(bucket):
                yield fingerprint_of(key, member), value


class URLRowMaps(FingerprintMaps):
    """The URL rows' fpmaps, read and written whole through ``lua/include/rows.lua``
    (which leaves a row's host out when it is its tag's, field ``H``)."""

    GET, PUT = ROW_GET, ROW_PUT

    def items(self, batch: int = 1000) -> Iterator[tuple[int, bytes]]:
        """Every ``(fingerprint, whole row)``; a bucket whose map another
        process deleted between the reads (``H`` gone) is skipped."""
        for key, bucket, host in self.buckets(batch, "H"):
            try:
                rows = [(fingerprint_of(key, member), expand_row(value, host)) for member, value in records(bucket)]
            except ValueError:
                continue
            yield from rows


class HashMaps(FingerprintMaps):
    """The hashmaps ``key_of(tag)`` of every tag (``bucket_size``: a bucket's most fields)."""

    GET, PUT = HASHMAP_GET, HASHMAP_PUT

    def items(self, batch: int = 1000) -> Iterator[tuple[int, bytes]]:
        connection = self._connection()
        for pattern in (self.pattern, self.pattern + ":*"):  # the directories (first buckets), the buckets
            for key in connection.scan(pattern):
                for member, value in connection.hscan(key, batch):
                    if len(member) == MEMBER_BITS // 8:  # not '', D or N
                        yield fingerprint_of(key, member), value
