"""Every key name of the Redis store (pure: no I/O); the layout is in
docs/reference/redis-layout.md."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from functools import cache
from typing import Any, TypeVar

from extensions.frontier.fingerprint import host_hash
from extensions.frontier.store import Status
from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

SCHEMA_VERSION = "11"  # P:meta "schema" (docs/reference/redis-layout.md; its changes: CHANGELOG.md)

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
        literal = glob_escape(prefix)
        self.urls_pattern = f"{literal}:{{*}}:urls"
        self.host_urls_pattern = f"{literal}:{{*}}:host_urls"
        self.known = f"{prefix}:known"
        self.cash_pattern = f"{literal}:{{*}}:cash"
        self.groups_pattern = f"{literal}:{{*}}:groups"
        self.revisit_pattern = f"{literal}:{{*}}:revisit"
        self.lease_pattern = f"{literal}:{{*}}:lease:*"
        self.tails_pattern = f"{literal}:{{*}}:tail:*"
        self.processes = f"{prefix}:processes"
        self.stats = f"{prefix}:stats"
        self.ledger = f"{prefix}:{{aopic}}:ledger"
        #: what deleting the crawl removes (SCHEDULER_PERSIST off, a flush)
        self.all_patterns = (f"{literal}:{{*}}:*",)
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
        """The host's lease hash, also its back queue's directory (other fields)."""
        return f"{self.prefix}:{{{host_tag(host)}}}:lease:{host}"

    def tail(self, host: str) -> str:
        """The host's tail: records past its window, appended."""
        return f"{self.prefix}:{{{host_tag(host)}}}:tail:{host}"

    def inflight(self, host: str) -> str:
        return f"{self.prefix}:{{{host_tag(host)}}}:inflight:{host}"

    def host_of(self, key: bytes | str, kind: str) -> str:
        """The host of a per-host key of ``kind`` (``lease``, ``tail``)."""
        key = key.decode() if isinstance(key, bytes) else key
        return key.split(f"}}:{kind}:", 1)[1]

    def host_heap(self, shard: int) -> str:
        return f"{self.prefix}:{{heap-{shard}}}:heap"
