"""Key layout of the Redis store (pure: no I/O).

 (``P`` is ``FRONTIER_REDIS_PREFIX``, default ``web``; ``T`` is a
host tag, six hex digits: the top 24 bits of a fingerprint, which
:mod:`extensions.frontier.fingerprint` makes a hash of the URL's host)::

    P:{T}:urls        hash  URL rows (status, fetched, seq, entry) per fingerprint,
                      packed in buckets (extensions/backends/redis/fpmap.py)
    P:{T}:seen        hash  the tag's exact URL-seen set: its fingerprints' low 40
                      bits, packed in buckets (FRONTIER_SEEN_BACKEND "exact",
                      see extensions/backends/redis/fpset.py)
    P:{T}:host_urls   hash  host -> how many URLs of that host are known; and
                      #done, #failed, #excluded, #refused: rows trimmed in that
                      status; #fetched, #first, #last: how many trimmed rows were
                      fetched, when first and last; HOST#done, HOST#last: a host's
                      trimmed done rows and its last fetch (for the census)
    P:{bloom-N}:bloom string the URL-seen Bloom filter's shard for the slot of
                      the tags {T} it serves (FRONTIER_SEEN_BACKEND "bloom",
                      see extensions/backends/redis/bloom.py)
    P:{T}:cash        hash  AOPIC's cash row per fingerprint (settled at dividend 0, rows.py):
                      the directory (D, N) of the bucket hashes P:{T}:cash:d:p, and
                      the first bucket's rows until it splits
                      (extensions/backends/redis/fpmap.py, HashMaps)
    P:{T}:groups      hash  content-seen group per fingerprint (group id * 2 +
                      duplicate, a varint), an fpmap as the URL rows
    P:{T}:revisit     hash  fingerprint of a fetched URL -> its re-visit record
                      (packed, without its due time; extensions/backends/redis/revisits.py)
    P:{revisit-N}:due zset  fingerprint -> due time (+inf: not scheduled), in shards
    P:{revisit-N}:gone set  fingerprints of records with gone > 0; and
    P:{revisit-N}:taken hash process -> its last take of due records (retry-safe)
    P:{aopic}:ledger  hash  AOPIC's shared scalars: lambda, dividend, put_in,
                      rows, crawls (extensions/backends/redis/ledger.py)
    P:{T}:lease:HOST  hash  a host's lease and politeness state, shared by
                      several crawler processes (owner, expires, next, listed, ver),
                      and its back queue's directory: URLs queued per level
                      (lLEVEL) and parked (p), in the lists
    P:{T}:bq:HOST:L   list  its queued fingerprints of level L, in discovery order,
                      each its low 40 bits (5 bytes), and (L = p) its parked
                      ones, "fingerprint level"
                      (extensions/backends/redis/lua/include/backq.lua)
    P:{T}:tail:HOST   str   the host's queued URLs past its window (FRONTIER_REDIS_QUEUE_WINDOW):
                      compressed blocks, then records appended
                      (extensions/backends/redis/tail.py)
    P:{T}:inflight:HOST zset the host's fingerprints handed to a crawler, not
                      finished, scored by level
    P:{heap-N}:heap   zset  host -> when another process may next look at it (the
                      shared host heap, in shards); the last four are the
                      multi-process frontier's, see extensions/backends/redis/leases.py
    P:queue:NAME      list  fingerprints of one front or back queue (FIFO)
    P:hosts           set   every host seen (host_count)
    P:crawl_delays    hash  host -> robots.txt Crawl-delay (seconds)
    P:deferrals       hash  origin -> "when reason" of a deferred origin
    P:widened         hash  host -> its delay widened after pushback (seconds)
    P:{holds}:origins hash  origin -> "until reason" of an origin held now, and
    P:{holds}:active  str   the last time some process had work no hold keeps
                      back (both ms; the multi-process frontier's idle close,
                      see extensions/backends/redis/leases.py)
    P:meta            hash  schema, clean, front_queues, back_queues, ...
    P:seq             int   discovery-order counter (reserved in blocks)
    P:known           int   URLs inserted as new (for memory per URL)
    P:processes       zset  crawler process id -> heartbeat expiry (ms)
    P:stats           hash  stats summed over the crawler processes
    P:start_urls      list  seeds pushed to a running crawl (scrapy-redis'
                      convention; kept when the crawl's keys are deleted)

``{T}`` is a Redis Cluster hash tag: every key of one host sits in one slot.
It is the host's hash, not its name, because a fingerprint carries it, so a
lookup by fingerprint finds its slot without a host-name index (hosts whose
hashes collide share a tag; rows stay apart). The other keys are global,
each in a slot of its own. Row formats: :mod:`extensions.backends.redis.rows`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from typing import Any, TypeVar

from extensions.frontier.fingerprint import host_hash
from extensions.frontier.store import Status
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

SCHEMA_VERSION = "11"  # 2: the exact URL-seen set of fpset.py beside trimmed rows; 3: rows and cash in fpmaps; 4: cash in hashmaps; 5: back queues in lists; 6: a row leaves out its tag's host; 7: a row leaves out its fields that are 0 or None; 8: back-queue lists of 5-byte members, a Referer without the bytes it shares with its URL, content groups in fpmaps; 9: a cash map's first bucket in its directory hash, a back queue's directory in its host's lease hash, a row's flags with FLAG_HAS_DEPTH flipped; 10: a host's queued URLs past its window in its tail; 11: a tail record without the member its URL gives, a back queue's first members per level in its host's lease hash, an extendible-hash set's or map's buckets in strings of their own, a cash row never fetched in single precision

#: Finished statuses, and the ``host_urls`` field counting their trimmed rows.
FINISHED_FIELD = {Status.DONE: "#done", Status.FAILED: "#failed", Status.EXCLUDED: "#excluded",
                  Status.REFUSED: "#refused"}

T = TypeVar("T")
_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")
_BAD_PREFIX = re.compile(r"[{}\s]")


def glob_escape(text: str) -> str:
    """``text`` as a literal in a SCAN MATCH pattern."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def group_by_tag(items: Iterable[T], key: Callable[[T], str]) -> dict[str, list[T]]:
    """``items`` by tag, in first-seen order (one command per tag)."""
    groups: dict[str, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    return groups


def positions_by(items: Sequence[T], key: Callable[[T], str]) -> dict[str, list[int]]:
    """The positions of ``items`` grouped by ``key``, in first-seen order."""
    return group_by_tag(range(len(items)), lambda i: key(items[i]))


def scatter(groups: dict[str, list[int]], answers: Iterable[Iterable[Any]], count: int) -> list[bool]:
    """Per-group answers (a flag per position of :func:`positions_by`) in item order."""
    flags = [False] * count
    for positions, answer in zip(groups.values(), answers):
        for i, flag in zip(positions, answer):
            flags[i] = bool(flag)
    return flags


def found_values(groups: Iterable[list[int]], answers: Iterable[list[Any]]) -> dict[int, Any]:
    """``fingerprint -> value`` from per-group HMGET answers, missing ones left out."""
    return {fp: value for fps, values in zip(groups, answers) for fp, value in zip(fps, values) if value is not None}


def host_tag(host: str) -> str:
    """The tag of every fingerprint of ``host`` (and of its per-host keys)."""
    return f"{host_hash(host):06x}"


@cache
def _slot_tags() -> tuple[str, ...]:
    """For every slot, the first ``bloom-N`` that hashes to it (once per process)."""
    tags: list[str | None] = [None] * REDIS_CLUSTER_HASH_SLOTS
    missing, number = REDIS_CLUSTER_HASH_SLOTS, 0
    while missing:
        slot = key_slot(b"bloom-%d" % number)
        if tags[slot] is None:
            tags[slot] = f"bloom-{number}"
            missing -= 1
        number += 1
    return tuple(tags)  # type: ignore[arg-type]


def shard_tag(host_tag: str) -> str:
    """The hash tag of the Bloom shard in the slot of ``host_tag``."""
    return _slot_tags()[key_slot(host_tag.encode())]


class Keys:
    """Every key name of one crawl (one prefix)."""

    def __init__(self, prefix: str) -> None:
        if not prefix or _BAD_PREFIX.search(prefix):
            raise ValueError(
                f"FRONTIER_REDIS_PREFIX must be non-empty, without braces or spaces, got {prefix!r}")
        self.prefix = prefix
        self.meta = f"{prefix}:meta"
        self.seq = f"{prefix}:seq"
        self.hosts = f"{prefix}:hosts"
        self.crawl_delays = f"{prefix}:crawl_delays"
        self.deferrals = f"{prefix}:deferrals"
        self.widened = f"{prefix}:widened"
        self.held_origins = f"{prefix}:{{holds}}:origins"
        self.active = f"{prefix}:{{holds}}:active"
        self.queue_prefix = f"{prefix}:queue:"
        literal = glob_escape(prefix)
        self.urls_pattern = f"{literal}:{{*}}:urls"
        self.host_urls_pattern = f"{literal}:{{*}}:host_urls"
        self.bloom_pattern = f"{literal}:{{*}}:bloom"
        self.seen_pattern = f"{literal}:{{*}}:seen"
        self.known = f"{prefix}:known"
        self.cash_pattern = f"{literal}:{{*}}:cash"
        self.groups_pattern = f"{literal}:{{*}}:groups"
        self.revisit_pattern = f"{literal}:{{*}}:revisit"
        self.queue_pattern = f"{glob_escape(self.queue_prefix)}*"
        self.lease_pattern = f"{literal}:{{*}}:lease:*"
        self.back_lists_pattern = f"{literal}:{{*}}:bq:*"
        self.tails_pattern = f"{literal}:{{*}}:tail:*"
        self.processes = f"{prefix}:processes"
        self.stats = f"{prefix}:stats"
        self.ledger = f"{prefix}:{{aopic}}:ledger"
        self.start_urls = f"{prefix}:start_urls"
        #: what deleting the crawl removes (SCHEDULER_PERSIST off, a flush)
        self.all_patterns = (f"{literal}:{{*}}:*", self.queue_pattern)
        self.singles = (self.meta, self.seq, self.hosts, self.crawl_delays, self.processes, self.stats,
                        self.known, self.deferrals, self.widened)

    def urls(self, tag: str) -> str:
        return f"{self.prefix}:{{{tag}}}:urls"

    def host_urls(self, tag: str) -> str:
        return f"{self.prefix}:{{{tag}}}:host_urls"

    def seen(self, tag: str) -> str:
        """The tag's exact URL-seen set."""
        return f"{self.prefix}:{{{tag}}}:seen"

    def cash(self, tag: str) -> str:
        return f"{self.prefix}:{{{tag}}}:cash"

    def groups(self, tag: str) -> str:
        return f"{self.prefix}:{{{tag}}}:groups"

    def revisit(self, tag: str) -> str:
        return f"{self.prefix}:{{{tag}}}:revisit"

    def revisit_due(self, shard: int) -> str:
        return f"{self.prefix}:{{revisit-{shard}}}:due"

    def revisit_gone(self, shard: int) -> str:
        return f"{self.prefix}:{{revisit-{shard}}}:gone"

    def revisit_taken(self, shard: int) -> str:
        return f"{self.prefix}:{{revisit-{shard}}}:taken"

    def bloom(self, tag: str) -> str:
        return f"{self.prefix}:{{{shard_tag(tag)}}}:bloom"

    def lease(self, host: str) -> str:
        return f"{self.prefix}:{{{host_tag(host)}}}:lease:{host}"

    def back(self, host: str) -> str:
        """The host's back-queue directory: its lease hash (the fields differ)."""
        return self.lease(host)

    def back_list(self, host: str, level: str) -> str:
        """One list of :meth:`back` (a level's, or ``p``: the parked)."""
        return f"{self.prefix}:{{{host_tag(host)}}}:bq:{host}:{level}"

    def tail(self, host: str) -> str:
        """The host's tail: records past its window, appended."""
        return f"{self.prefix}:{{{host_tag(host)}}}:tail:{host}"

    def inflight(self, host: str) -> str:
        return f"{self.prefix}:{{{host_tag(host)}}}:inflight:{host}"

    def host_of_tail(self, key: bytes | str) -> str:
        """The host of a :meth:`tail` key."""
        key = key.decode() if isinstance(key, bytes) else key
        return key.split("}:tail:", 1)[1]

    def host_of_lease(self, key: bytes | str) -> str:
        """The host of a :meth:`lease` key."""
        key = key.decode() if isinstance(key, bytes) else key
        return key.split("}:lease:", 1)[1]

    def host_heap(self, shard: int) -> str:
        return f"{self.prefix}:{{heap-{shard}}}:heap"

    def queue(self, name: str) -> str:
        return self.queue_prefix + name

    def last_pop(self, name: str) -> str:
        """The last batch popped from queue ``name``, in the queue's slot."""
        return f"{self.prefix}:{{{self.queue(name)}}}:last_pop"

    def queue_name(self, key: bytes | str) -> str:
        key = key.decode() if isinstance(key, bytes) else key
        return key[len(self.queue_prefix):]
