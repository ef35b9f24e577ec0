"""The Redis store's tables (protocols of :mod:`extensions.frontier.store`),
over the crawler's one connection (``connection`` returns it, raising the
store's error when the store is not open). Scripts: ``lua/store_*.lua``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from extensions.backends.redis.bloom import BloomLayout
from extensions.backends.redis.connection import RedisConnection
from extensions.backends.redis.fpmap import FingerprintMaps, HashMaps, URLRowMaps
from extensions.backends.redis.fpset import FingerprintSetLayout
from extensions.backends.redis.keys import FINISHED_FIELD, Keys, group_by_tag, host_tag, positions_by, scatter
from extensions.backends.redis.rows import (
    CASH_BUCKET_FIELDS,
    ROW_BUCKET_BYTES,
    STATUS_BYTE,
    fetched_bytes,
    pack_row,
    read_varint,
    row_head,
    row_status,
    tag_of,
    unpack_cash,
    unpack_entry,
    varint,
)
from extensions.backends.redis.scripts import lua
from extensions.backends.redis.tail import tail_records
from extensions.frontier.store import Entry, Status

Connection = Callable[[], RedisConnection]
CashRow = tuple[float, float, float, int]
#: a URL-seen set kept beside the URL rows, tested inside the row scripts
#: (``lua/include/seen.lua``); without one the rows are the set
SeenLayout = BloomLayout | FingerprintSetLayout
INSERT_NEW, REQUEUE = lua("store_insert_new"), lua("store_requeue")
SET_STATUS, TRIM = lua("store_set_status"), lua("store_trim")
SEQ_BLOCK = 1024  # discovery-order numbers reserved per INCRBY
SCAN_BATCH = 10_000


class URLCounters:
    """Discovery-order numbers (``P:seq``, reserved in blocks) and the count
    of URLs known (``P:known``): shared by the URL table and the host leases."""

    def __init__(self, keys: Keys, connection: Connection) -> None:
        self.keys, self._connection = keys, connection
        self.reset()

    def reset(self) -> None:
        """Forget the reserved numbers and the count (the crawl's keys are gone)."""
        self._next, self._end, self._known = 1, 0, 0

    def sequence_numbers(self, count: int) -> range:
        """``count`` discovery-order numbers."""
        if self._next + count - 1 > self._end:
            block = max(SEQ_BLOCK, count)
            end = self._connection().call(("INCRBY", self.keys.seq, block))[0]
            self._next, self._end = end - block + 1, end
        start = self._next
        self._next += count
        return range(start, start + count)

    def count_known(self, new: int) -> None:
        """``new`` URLs were inserted (added to ``P:known`` by :meth:`add_known`)."""
        self._known += new

    def add_known(self) -> None:
        """Buffer the count of the URLs inserted since the last call."""
        if self._known:
            self._connection().write("INCRBY", self.keys.known, self._known)
            self._known = 0


class RedisURLTable:
    """URL rows in ``P:{T}:urls``, per-host counts in ``P:{T}:host_urls``. With ``seen`` (a URL-seen
    set tested inside the insert scripts) a row goes when its URL is finished unless ``keep_rows``
    (:attr:`trims`); without, the rows are the set."""

    def __init__(self, keys: Keys, connection: Connection, counters: URLCounters,
                 seen: SeenLayout | None, keep_rows: bool = False) -> None:
        self.keys, self._connection = keys, connection
        self.counters = counters
        self.rows = URLRowMaps(keys.urls, keys.urls_pattern, connection, ROW_BUCKET_BYTES)
        self.tails = False  # hosts keep queued URLs in tails (meta "tails": the shared dispatch's window)
        self.use(seen, keep_rows)

    def use(self, seen: SeenLayout | None, keep_rows: bool) -> None:
        """Test URLs against ``seen`` from now on (the store adopts its crawl's layout at open)."""
        self.seen, self.trims = seen, seen is not None and not keep_rows

    def tail_rows(self, hosts: Iterable[str]) -> Iterator[tuple[int, bytes]]:
        """``(fingerprint, row)`` of the URLs in the tails of ``hosts`` (lua/include/tail.lua)."""
        connection, hosts = self._connection(), list(dict.fromkeys(hosts))
        for start in range(0, len(hosts), 100):
            batch = hosts[start:start + 100]
            answers = connection.call(*[("GET", self.keys.tail(host)) for host in batch])
            for host, data in zip(batch, answers):
                for fp, _, row in tail_records(host_tag(host), data):
                    yield fp, row

    def _tail_hosts(self, tags: Iterable[str] | None = None) -> list[str]:
        """The hosts with a tail (of ``tags``; None: of every tag)."""
        if tags is None:
            keys = self._connection().scan(self.keys.tails_pattern)
            return [self.keys.host_of(key, "tail") for key in keys]
        tags = list(tags)
        found = self._connection().call(*[("HKEYS", self.keys.host_urls(tag)) for tag in tags])
        return [field.decode() for fields in found for field in fields if b"#" not in field]

    def _with_tails(self, rows: dict[int, bytes], fingerprints: Sequence[int]) -> dict[int, bytes]:
        """``rows`` and, with tails, the rows of ``fingerprints`` found in them."""
        missing = {fp for fp in fingerprints if fp not in rows}
        if not self.tails or not missing:
            return rows
        for fp, row in self.tail_rows(self._tail_hosts({tag_of(fp) for fp in missing})):
            if fp in missing:
                rows.setdefault(fp, row)
        return rows

    def insert_new(self, entries: Sequence[Entry], now: float) -> list[bool]:
        if not entries:
            return []
        seqs = self.counters.sequence_numbers(len(entries))
        by_tag = positions_by(entries, lambda entry: tag_of(entry.fingerprint))
        seen = self.seen
        head = [] if seen is None else seen.args()
        commands = []
        for tag, indexes in by_tag.items():
            args: list[Any] = [*self._keys(tag), *head]
            for i in indexes:
                entry = entries[i]
                args += [entry.fingerprint, pack_row(entry, Status.QUEUED, seqs[i]), entry.host]
                if seen is not None:
                    args += seen.member_args(entry.fingerprint)
            commands.append(("EVAL", INSERT_NEW, 2 if seen is None else 3, *args))
        new = scatter(by_tag, self._connection().call(*commands), len(entries))
        self.counters.count_known(sum(new))
        return new

    def requeue(self, entry: Entry, now: float) -> None:
        seq = self.counters.sequence_numbers(1)[0]
        keys = self._keys(tag_of(entry.fingerprint))
        args = [entry.fingerprint, pack_row(entry, Status.QUEUED, seq), entry.host]
        if self.seen is not None:  # a later enqueue of the URL must find it seen
            args += [*self.seen.args(), *self.seen.member_args(entry.fingerprint)]
        self._connection().write("EVAL", REQUEUE, len(keys), *keys, *args)

    def _keys(self, tag: str) -> list[str]:
        """The keys of a row script on ``tag``: rows, host counts and the URL-seen set, if any."""
        keys = [self.keys.urls(tag), self.keys.host_urls(tag)]
        return keys if self.seen is None else [*keys, self.seen.key(self.keys, tag)]

    def get_many(self, fingerprints: Sequence[int]) -> dict[int, Entry]:
        if not fingerprints:
            return {}
        rows = self._with_tails(self.rows.get(fingerprints), fingerprints)
        return {fp: unpack_entry(fp, row) for fp, row in rows.items()}

    def set_status(self, fingerprints: Iterable[int], status: Status,
                   now: float | None = None, only_from: Status | None = None) -> None:
        connection = self._connection()
        guard = b"" if only_from is None else STATUS_BYTE[only_from]
        fetched = b"" if now is None else fetched_bytes(now)
        for tag, fps in group_by_tag(fingerprints, tag_of).items():
            if self.trims and status in FINISHED_FIELD:
                connection.write("EVAL", TRIM, 2, self.keys.urls(tag), self.keys.host_urls(tag),
                                 FINISHED_FIELD[status], guard, fetched, *fps)
            else:
                connection.write("EVAL", SET_STATUS, 1, self.keys.urls(tag), STATUS_BYTE[status], guard, fetched, *fps)

    def status_of(self, fingerprint: int) -> Status | None:
        row = self._with_tails(self.rows.get([fingerprint]), [fingerprint]).get(fingerprint)
        return None if row is None else row_status(row)

    def all_rows(self, batch: int = SCAN_BATCH) -> Iterator[tuple[int, bytes]]:
        """Every row: the URL rows, then the tails' (a URL requeued by force while in its tail: twice)."""
        yield from self.rows.items(max(1, batch // 16))
        if self.tails:
            yield from self.tail_rows(self._tail_hosts())

    def iter_all(self, batch: int = SCAN_BATCH) -> Iterator[tuple[int, int]]:
        for fp, row in self.all_rows(batch):
            yield fp, row_head(row)[3]

    def count_host(self, fingerprint: int, host: str) -> int:
        count = self._connection().call(("HGET", self.keys.host_urls(tag_of(fingerprint)), host))[0]
        return 0 if count is None else int(count)

    def count_host_then(self, io: Any, fingerprint: int, host: str, then: Callable[[int], None]) -> None:
        """:meth:`count_host` through ``io`` (a worker): ``then`` gets the count on the reactor thread."""
        io.submit([("HGET", self.keys.host_urls(tag_of(fingerprint)), host)],
                  lambda answers: then(0 if answers[0] is None else int(answers[0])))

    def take_deferred(self) -> list[int]:
        rows = self.rows.items(max(1, SCAN_BATCH // 16))  # not the tails': their URLs are all queued
        found = [fp for fp, row in rows if row_status(row) == Status.DEFERRED]
        for start in range(0, len(found), SCAN_BATCH):
            by_tag = group_by_tag(found[start:start + SCAN_BATCH], tag_of)
            self._connection().call(*[
                ("EVAL", SET_STATUS, 1, self.keys.urls(tag), STATUS_BYTE[Status.QUEUED],
                 STATUS_BYTE[Status.DEFERRED], b"", *fps) for tag, fps in by_tag.items()])
        return found

    def count_by_status(self) -> dict[Status, int]:
        """Rows by status, plus the rows trimmed in each finished status."""
        counts = Counter(row_status(row) for _, row in self.all_rows())
        connection, fields = self._connection(), list(FINISHED_FIELD.values())
        keys = list(connection.scan(self.keys.host_urls_pattern))
        for start in range(0, len(keys), 1000):
            for answer in connection.call(*[("HMGET", key, *fields) for key in keys[start:start + 1000]]):
                for status, value in zip(FINISHED_FIELD, answer):
                    counts[status] += int(value or 0)
        return {status: count for status, count in counts.items() if count}

    # -- for the shared AOPIC ledger (no protocol: Redis round trips) ----------------
    def entry_reads(self, fingerprints: Sequence[int]) -> tuple[
            list[tuple[Any, ...]], Callable[[list[Any]], dict[int, Entry]]]:
        """The commands reading the rows of ``fingerprints``, and how to turn their answers into entries."""
        reads, values = self.rows.reads(fingerprints)

        def rows_of(answers: list[Any]) -> dict[int, Entry]:
            return {fp: unpack_entry(fp, row) for fp, row in values(answers).items()}
        return reads, rows_of


class RedisHostTable:
    """``P:hosts`` (a set), ``P:crawl_delays``, ``P:widened`` and ``P:deferrals`` (hashes)."""

    def __init__(self, keys: Keys, connection: Connection) -> None:
        self.keys, self._connection = keys, connection

    def add_hosts(self, hosts: Iterable[str], now: float = 0.0) -> None:
        hosts = list(hosts)
        if hosts:  # sent with the next round trip: the reactor does not wait for it
            self._connection().write("SADD", self.keys.hosts, *hosts)

    def host_count(self) -> int:
        return int(self._connection().call(("SCARD", self.keys.hosts))[0])

    def set_crawl_delay(self, host: str, seconds: float | None) -> None:
        connection = self._connection()
        connection.write("SADD", self.keys.hosts, host)
        if seconds is None:
            connection.write("HDEL", self.keys.crawl_delays, host)
        else:
            connection.write("HSET", self.keys.crawl_delays, host, repr(float(seconds)))

    def crawl_delays(self) -> dict[str, float]:
        found = self._connection().call(("HGETALL", self.keys.crawl_delays))[0]
        return {host.decode(): float(delay) for host, delay in found.items()}

    def set_widened(self, host: str, seconds: float) -> None:
        self._connection().write("HSET", self.keys.widened, host, repr(float(seconds)))

    def widened(self) -> dict[str, float]:
        found = self._connection().call(("HGETALL", self.keys.widened))[0]
        return {host.decode(): float(delay) for host, delay in found.items()}

    def defer_origin(self, origin: str, reason: str, now: float) -> None:
        self._connection().write("HSET", self.keys.deferrals, origin, f"{now!r} {reason}")

    def deferrals(self) -> dict[str, tuple[str, float]]:
        found = self._connection().call(("HGETALL", self.keys.deferrals))[0]
        parsed = {origin.decode(): value.decode().split(" ", 1) for origin, value in found.items()}
        return {origin: (reason, float(at)) for origin, (at, reason) in parsed.items()}

    def clear_deferrals(self) -> None:
        self._connection().write("DEL", self.keys.deferrals)


class RedisCashTable:
    """AOPIC's cash rows in the hashmaps ``P:{T}:cash``, written only by the shared
    ledger's scripts (settled at mark 0: read as ``(u, history, 0.0, visits)``)."""

    def __init__(self, keys: Keys, connection: Connection) -> None:
        self.maps = HashMaps(keys.cash, keys.cash_pattern, connection, CASH_BUCKET_FIELDS)

    def get_cash(self, fingerprints: Sequence[int]) -> dict[int, CashRow]:
        return {fp: unpack_cash(value) for fp, value in self.maps.get(fingerprints).items()}

    def cash_count(self) -> int:
        return self.maps.count()


class RedisContentGroups:
    """Content-seen verdicts in the fpmaps ``P:{T}:groups``: fingerprint -> ``group_id * 2 + duplicate``."""

    def __init__(self, keys: Keys, connection: Connection) -> None:
        self.maps = FingerprintMaps(keys.groups, keys.groups_pattern, connection, ROW_BUCKET_BYTES)

    def set_content_group(self, fingerprint: int, group_id: int, duplicate: bool) -> None:
        if group_id < 0:
            raise ValueError(f"a content group is a document id (>= 0), not {group_id}")
        self.maps.put([(fingerprint, varint(group_id * 2 + duplicate))])

    def content_group(self, fingerprint: int) -> int | None:
        value = self.maps.get([fingerprint]).get(fingerprint)
        return None if value is None else read_varint(value, 0)[0] >> 1
