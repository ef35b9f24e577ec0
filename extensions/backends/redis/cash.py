"""AOPIC's cash rows and the content groups in Redis: the part of
:class:`~extensions.backends.redis.store.RedisStore` that reads and writes many
hashes at once (a page's links span several host tags).

Per URL, under its host tag ``{T}`` (:mod:`extensions.backends.redis.keys`):
``P:{T}:cash`` (fingerprint -> cash row, :mod:`extensions.backends.redis.rows`)
and ``P:{T}:groups`` (fingerprint -> ``"group_id,duplicate"``). On a single
Redis several hashes go as one script call (:data:`MULTI_HMGET`,
:data:`MULTI_HSET`); on a cluster, one command per key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from extensions.backends.redis.keys import Keys, tag_of
from extensions.backends.redis.rows import pack_cash, unpack_cash, unpack_entry
from extensions.backends.redis.scripts import MULTI_HMGET, MULTI_HSET, MULTI_LIMIT
from extensions.frontier.store import Entry

T = TypeVar("T")


def group_by_tag(items: Iterable[T], key: Callable[[T], str]) -> dict[str, list[T]]:
    """``items`` by tag, in first-seen order (one command per tag)."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


_group = group_by_tag


class RedisCashTable:
    """The CashTable and content groups over the store's pipeline; the
    store provides ``keys``, ``cluster`` and the pipeline calls."""

    keys: Keys
    cluster: bool

    def _call(self, *commands: tuple[Any, ...]) -> list[Any]:
        raise NotImplementedError

    def _write(self, *command: Any) -> None:
        raise NotImplementedError

    def _scan(self, pattern: str) -> Iterator[bytes]:
        raise NotImplementedError

    def _hscan(self, key: bytes, batch: int) -> Iterator[tuple[bytes, bytes]]:
        raise NotImplementedError

    # -- CashTable (AOPIC) ---------------------------------------------------------
    def get_cash(self, fingerprints: Sequence[int]) -> dict[int, tuple[float, float, float, int]]:
        if not fingerprints:
            return {}
        by_tag = _group(fingerprints, tag_of)
        answers = self._read_hashes([(self.keys.cash(tag), fps) for tag, fps in by_tag.items()])
        return {fp: unpack_cash(value) for fps, values in zip(by_tag.values(), answers)
                for fp, value in zip(fps, values) if value is not None}

    def call_with_entries(self, commands: Sequence[tuple[Any, ...]],
                          fingerprints: Sequence[int]) -> tuple[list[Any], dict[int, Entry]]:
        """``commands``' answers and the URL rows of ``fingerprints``, in one
        round trip (the shared AOPIC ledger's script and a page's links'
        rows, which a promotion rewrites)."""
        read_commands, rows_of = self.entry_reads(fingerprints)
        if not commands and not read_commands:
            return [], {}
        answers = self._call(*commands, *read_commands)
        return answers[:len(commands)], rows_of(answers[len(commands):])

    def entry_reads(self, fingerprints: Sequence[int]) -> tuple[
            list[tuple[Any, ...]], Callable[[list[Any]], dict[int, Entry]]]:
        """The commands reading the URL rows of ``fingerprints``, and how to
        turn their answers into entries (for a caller that sends them itself,
        such as the frontier's worker thread)."""
        by_tag = _group(list(dict.fromkeys(fingerprints)), tag_of)
        reads = [(self.keys.urls(tag), fps) for tag, fps in by_tag.items()]
        multi = self._multi(MULTI_HMGET, reads) if reads else None

        def rows_of(answers: list[Any]) -> dict[int, Entry]:
            found = answers[0] if multi is not None else answers
            return {fp: unpack_entry(fp, row) for fps, rows in zip(by_tag.values(), found)
                    for fp, row in zip(fps, rows) if row is not None}
        return ([multi] if multi is not None else [("HMGET", key, *fps) for key, fps in reads]), rows_of

    def get_cash_and_entries(self, fingerprints: Sequence[int]) -> tuple[
            dict[int, tuple[float, float, float, int]], dict[int, Entry]]:
        """:meth:`get_cash` and :meth:`get_many` of the same URLs in one round
        trip: a fetched page's links, whose cash AOPIC credits and whose rows
        a promotion rewrites."""
        if not fingerprints:
            return {}, {}
        by_tag = _group(list(dict.fromkeys(fingerprints)), tag_of)
        groups = list(by_tag.items())
        answers = self._read_hashes([(self.keys.cash(tag), fps) for tag, fps in groups]
                                    + [(self.keys.urls(tag), fps) for tag, fps in groups])
        cash = {fp: unpack_cash(value) for (_, fps), values in zip(groups, answers)
                for fp, value in zip(fps, values) if value is not None}
        entries = {fp: unpack_entry(fp, row) for (_, fps), rows in zip(groups, answers[len(groups):])
                   for fp, row in zip(fps, rows) if row is not None}
        return cash, entries

    def put_cash(self, rows: Sequence[tuple[int, float, float, float, int]]) -> None:
        by_tag = _group(rows, lambda row: tag_of(row[0]))
        writes = []
        for tag, tagged in by_tag.items():
            fields: list[Any] = []
            for fp, cash, history, mark, visits in tagged:
                fields += [fp, pack_cash(cash, history, mark, visits)]
            writes.append((self.keys.cash(tag), fields))
        self._write_hashes(writes)

    # -- several hashes in one command -------------------------------------------------
    def _read_hashes(self, reads: list[tuple[str, list[Any]]]) -> list[list[Any]]:
        """HMGET of each ``(key, fields)``: one script call on a single Redis
        (a page's links span several host tags), one HMGET per key on a cluster."""
        multi = self._multi(MULTI_HMGET, reads)
        if multi is None:
            return self._call(*[("HMGET", key, *fields) for key, fields in reads])
        return self._call(multi)[0]

    def _write_hashes(self, writes: list[tuple[str, list[Any]]]) -> None:
        """HSET of each ``(key, fields and values)``, buffered; as one script
        call on a single Redis, as :meth:`_read_hashes` does."""
        multi = self._multi(MULTI_HSET, writes)
        if multi is None:
            for key, fields in writes:
                self._write("HSET", key, *fields)
        else:
            self._write(*multi)

    def _multi(self, script: str, items: list[tuple[str, list[Any]]]) -> tuple[Any, ...] | None:
        """``script`` over every ``(key, arguments)`` as one EVAL, or None
        where it cannot or need not be one (a cluster, one key, too many arguments)."""
        if self.cluster or len(items) == 1 or sum(len(args) + 1 for _, args in items) > MULTI_LIMIT:
            return None
        flat: list[Any] = []
        for _, args in items:
            flat += [len(args), *args]
        return ("EVAL", script, len(items), *[key for key, _ in items], *flat)

    def cash_count(self) -> int:
        keys = list(self._scan(self.keys.cash_pattern))
        return sum(self._call(*[("HLEN", key) for key in keys])) if keys else 0

    def cash_totals(self) -> tuple[float, float, float]:
        cash = history = mark = 0.0
        for key in list(self._scan(self.keys.cash_pattern)):
            for _, value in self._hscan(key, 10_000):
                row = unpack_cash(value)
                cash, history, mark = cash + row[0], history + row[1], mark + row[2]
        return cash, history, mark

    # -- content groups (content-seen) -----------------------------------------------
    def set_content_group(self, fingerprint: int, group_id: int, duplicate: bool) -> None:
        self._write("HSET", self.keys.groups(tag_of(fingerprint)), fingerprint, f"{group_id},{int(duplicate)}")

    def content_group(self, fingerprint: int) -> int | None:
        value = self._call(("HGET", self.keys.groups(tag_of(fingerprint)), fingerprint))[0]
        return None if value is None else int(value.split(b",")[0])


