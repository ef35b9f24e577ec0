"""Host leases in Redis: several crawler processes share one polite frontier
(per-host keys: docs/reference/redis-layout.md). Scripts read the server's clock."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from extensions.backends.redis.keys import FINISHED_FIELD, host_tag
from extensions.backends.redis.rows import (
    STATUS_BYTE,
    fetched_bytes,
    pack_row,
    unpack_cash,
    unpack_entry,
)
from extensions.backends.redis.scripts import lua
from extensions.backends.redis.tail import STRING_BYTES, Tail, record_code, with_members
from extensions.backends.redis.worker import DirectIO
from extensions.frontier.fingerprint import host_hash
from extensions.frontier.store import Entry, Status

MAX_REFILLS = 8  # refills of an empty window one take tries (its URLs may all be parked)
LEVEL_SPAN = float(1 << 40)  # discovery numbers stay below this
# A parked URL (its origin held) scores PARKED above its place, behind every
# unparked URL: exact in a double while levels stay below MAX_LEVELS.
PARKED = 1 << 52
PARK_FLOOR = 1 << 51
MAX_LEVELS = 2048

_BACKQ = {"LEVEL_SPAN": int(LEVEL_SPAN), "PARKED": PARKED}
ACQUIRE, CONFIRM, DELIST_IF = lua("lease_acquire", **_BACKQ), lua("lease_confirm"), lua("lease_delist_if")
ENQUEUE, FINISH = lua("lease_enqueue", **_BACKQ), lua("lease_finish")
LIST, ORPHAN, POLL = lua("lease_list"), lua("lease_orphan", **_BACKQ), lua("lease_poll")
PROMOTE, PUT_BACK = lua("lease_promote", **_BACKQ), lua("lease_put_back", **_BACKQ)
RELEASE, RENEW = lua("lease_release", **_BACKQ), lua("lease_renew")
TAKE, UNPARK = lua("lease_take", **_BACKQ), lua("lease_unpark", **_BACKQ)
REWRITE = lua("tail_rewrite", **_BACKQ)
HOLD, ACTIVE, HELD = lua("hold_hold"), lua("hold_active"), lua("hold_held")
IDLE_DEFER, TAKE_ALL = lua("hold_idle_defer"), lua("hold_take_all")


SWEEP_BATCH = 256  # hosts a sweep for orphans looks at per round trip


def queue_score(level: int, seq: int) -> float:
    """Back-queue order: higher level first, then discovery order."""
    return -level * LEVEL_SPAN + (seq % int(LEVEL_SPAN))


def parked_score(score: float) -> float:
    """Where a held origin's URL waits: behind every URL not parked."""
    return score + PARKED


def is_parked(score: bytes | str | float | None) -> bool:
    return score not in (None, b"", "") and PARK_FLOOR <= float(score) < float("inf")


def level_of_score(score: bytes | str | float | None) -> int:
    """The front-queue level a back-queue score encodes (-1: none or parked)."""
    if score in (None, b"", "") or is_parked(score):
        return -1
    return -int(float(score) // LEVEL_SPAN)


def head_score(score: bytes | str | None) -> float:
    return float("inf") if score in (None, b"", "") else float(score)


@dataclass(slots=True)
class Enqueued:
    new: bool
    mine: bool  # the host is held by this process
    queued: int  # its back-queue length now
    head: float  # score of its best queued URL (queue_score; inf: none)
    listed: bool  # the host was put on the heap (it was idle)


@dataclass(slots=True)
class Acquired:
    host: str
    expires: int  # the lease's expiry, ms (the host's heap score)
    wait: float  # seconds until the host may be fetched
    queued: int
    head: float
    recovered: int  # in-flight URLs of a lapsed lease returned to the queue
    taken_over: bool = False  # from a lease that lapsed (its holder died or stalled)


@dataclass(slots=True)
class Taken:
    # "taken", "empty", "stale" (only stale or held entries so far), "held"
    # (only held origins' URLs are queued) or "lost"
    state: str
    entry: Entry | None = None
    queued: int = 0
    head: float = float("inf")
    skipped: int = 0
    cash: tuple[float, float, float, int] | None = None  # the URL's AOPIC cash row, if any
    parked: int = 0  # held origins' URLs moved behind the others on the way
    refilled: int = 0  # URLs moved from the host's tail into its window first


@dataclass(slots=True)
class Poll:
    hosts: int  # hosts on the heap (with work, held or not)
    due: list[tuple[str, bytes]]  # (host, score) due now, shuffled
    wait: float | None  # seconds until the earliest entry is due (None: heap empty)


class HostLeases:
    """The Redis side of the multi-process frontier; every command goes through
    :attr:`io`. Methods given ``then`` hand their outcome to it (maybe later)."""

    def __init__(self, store: Any, owner: str, ttl: float, shards: int,
                 clock: Callable[[], float] | None = None, rng: random.Random | None = None,
                 window: int = 0) -> None:
        if shards < 1:
            raise ValueError(f"the host heap needs >= 1 shard, got {shards!r}")
        if window < 0:
            raise ValueError(f"FRONTIER_REDIS_QUEUE_WINDOW must be >= 0, got {window!r}")
        self.window = window  # URLs a host's back queue holds before new ones go to its tail (0: no tail)
        self.refilled_ahead = 0  # URLs moved from tails into windows after a take, before they emptied
        self.store, self.keys = store, store.keys
        self.owner, self.ttl_ms, self.shards = owner, int(ttl * 1000), shards
        self.clock, self.rng = clock, rng or random.Random()
        self.io: Any = DirectIO(store)
        self._joined: float | None = None  # the heartbeat TTL this frontier joined the registry with

    def _now(self) -> str:
        return "" if self.clock is None else str(int(self.clock() * 1000))

    def heap(self, host: str) -> str:
        return self.keys.host_heap(host_hash(host) % self.shards)

    def _ask(self, commands: list[tuple[Any, ...]], parse: Callable[[list[Any]], Any],
             then: Callable[[Any], None] | None, failed: Callable[[Exception], None] | None) -> Any:
        """``parse(answers)`` now, or handed to ``then`` when the answers come."""
        if then is None:
            return parse(self.io.call(*commands))
        self.io.submit(commands, lambda answers: then(parse(answers)), failed)
        return None

    def _host_keys(self, host: str) -> tuple[str, str, str, str]:
        """Lease, back-queue directory (the same hash), in-flight set and the tag's URL rows."""
        lease = self.keys.lease(host)
        return lease, lease, self.keys.inflight(host), self.keys.urls(host_tag(host))

    # -- enqueue -------------------------------------------------------------
    def enqueue(self, host: str, entries: Sequence[Entry], force: bool = False,
                then: Callable[[list[Enqueued]], None] | None = None) -> list[Enqueued] | None:
        """File URLs of one host (add-if-new, or requeue with ``force``) and list the
        host; per entry whether it was new, to ``then`` and returned if answered at once."""
        if not entries:
            return []
        found: list[list[Enqueued]] = []

        def answered(answers: list[Any]) -> None:
            found.append(self._enqueued(answers[0]))
            if then is not None:
                then(found[0])
        self.io.submit([self._enqueue_command(host, entries, force)], answered,
                       follow=lambda answers: self._after_enqueue(host, answers[0]))
        return found[0] if found else None

    def _enqueue_command(self, host: str, entries: Sequence[Entry], force: bool) -> tuple[Any, ...]:
        seen = self.store.seen
        args: list[Any] = []
        for entry in entries:  # no discovery number: the back queue's lists keep the order
            args += [entry.fingerprint, pack_row(entry, Status.QUEUED, 0),
                     record_code(entry.fingerprint, entry.url, entry.level) if self.window else entry.level * 2]
            if seen is not None:
                args += seen.member_args(entry.fingerprint)
        keys, tag = self.keys, host_tag(host)
        lease, back, inflight, urls = self._host_keys(host)
        script_keys = [urls, keys.host_urls(tag), back, inflight, lease]
        head_args = [self._now(), self.owner, "1" if force else "0", host, self.window]
        if seen is None:
            return ("EVAL", ENQUEUE, 5, *script_keys, *head_args, *args)
        return ("EVAL", ENQUEUE, 6, *script_keys, seen.key(keys, tag), *head_args, *seen.args(), *args)

    def _enqueued(self, answer: list[Any]) -> list[Enqueued]:
        added, needs, mine, queued, head, _, _, _ = answer
        self.store.counters.count_known(sum(added))
        return [Enqueued(bool(new), bool(mine), int(queued), head_score(head), bool(needs)) for new in added]

    def _after_enqueue(self, host: str, answer: list[Any]) -> tuple[list[tuple[Any, ...]], Any] | None:
        """The listing if the host needs one (answer: needs, ..., wait, ver), and the tail read once
        its appended records pass :data:`~extensions.backends.redis.tail.STRING_BYTES` (then compacted)."""
        listing = self._list_commands(host, answer[5] / 1000.0, answer[6]) if answer[1] else None
        if answer[7] < STRING_BYTES:
            return listing
        commands, confirm = listing or ([], None)

        def compact(found: list[Any]) -> tuple[list[tuple[Any, ...]], Any] | None:
            follows = confirm(found[:-1])[0] if confirm is not None else []
            command = self.compact_command(host, found[-1])
            follows += [command] if command is not None else []
            return (follows, None) if follows else None
        return [*commands, ("GET", self.keys.tail(host))], compact

    def compact_command(self, host: str, read: bytes | None) -> tuple[Any, ...] | None:
        """The tail string ``read``'s appended records into its newest block, if past :data:`STRING_BYTES`."""
        tail = Tail.parse(read)
        if read is None or len(tail.records) < STRING_BYTES:
            return None
        return self._rewrite_command(host, read, tail.compacted(), b"")

    def _rewrite_command(self, host: str, read: bytes, tail: Tail, records: bytes) -> tuple[Any, ...]:
        """``read`` (the tail string's first bytes) replaced by ``tail``; ``records`` into the window."""
        return ("EVAL", REWRITE, 2, self.keys.lease(host), self.keys.urls(host_tag(host)), len(read),
                hashlib.sha1(read).hexdigest(), tail.encode() or b"\0", records)

    def _refill_command(self, host: str, read: bytes | None) -> tuple[Any, ...]:
        """Refill ``host``'s window with a window's worth of the tail string ``read``."""
        records, rest = Tail.parse(read).take(max(self.window, 1))
        return self._rewrite_command(host, read or b"", rest, with_members(host_tag(host), records))

    def _list_commands(self, host: str, wait: float, ver: bytes | str) -> tuple[list[tuple[Any, ...]], Any]:
        """Put ``host`` on the heap, then confirm it (unconfirmed after a crash: listed again)."""
        return ([("EVAL", LIST, 1, self.heap(host), self._now(), int(wait * 1000), host,
                  repr(self.rng.random() * 0.999))],
                lambda _: ([("EVAL", CONFIRM, 1, self.keys.lease(host), ver)], None))

    def requeue(self, host: str, fingerprint: int, level: int) -> None:
        self.io.write("EVAL", PROMOTE, 2, self.keys.lease(host), self.keys.urls(host_tag(host)), fingerprint, level)

    # -- the host heap -------------------------------------------------------
    def poll(self, limit: int, then: Callable[[Poll], None] | None = None,
             failed: Callable[[Exception], None] | None = None) -> Poll:
        """Hosts due on every heap shard (up to ``limit`` per shard)."""
        commands = [("EVAL", POLL, 1, self.keys.host_heap(shard), self._now(), limit) for shard in range(self.shards)]
        return self._ask(commands, self._polled, then, failed)

    def _polled(self, answers: list[Any]) -> Poll:
        total, due, wait = 0, [], None
        for count, now, pairs, first in answers:
            total += int(count)
            due += [(pairs[i].decode(), pairs[i + 1]) for i in range(0, len(pairs), 2)]
            if first not in (b"", ""):
                ahead = max(0.0, (float(first) - int(now)) / 1000.0)
                wait = ahead if wait is None else min(wait, ahead)
        self.rng.shuffle(due)  # processes polling at once try different hosts first
        return Poll(total, due, wait)

    def acquire(self, candidates: Sequence[tuple[str, bytes]], then: Callable[[list[Acquired]], None] | None = None,
                failed: Callable[[Exception], None] | None = None) -> list[Acquired]:
        """Try to take each ``(host, score)`` from the heap; the hosts taken."""
        if not candidates:
            if then is not None:
                then([])
            return []
        commands = [("EVAL", ACQUIRE, 4, *self._host_keys(host), self._now(), self.owner, self.ttl_ms)
                    for host, _ in candidates]
        return self._ask(commands, lambda answers: self._acquired(candidates, answers), then, failed)

    def _acquired(self, candidates: Sequence[tuple[str, bytes]], answers: list[Any]) -> list[Acquired]:
        acquired = []
        for (host, score), answer in zip(candidates, answers):
            state = answer[0]
            if state == 1:
                _, expires, wait, queued, head, recovered, lapsed = answer
                self.io.write("ZADD", self.heap(host), expires, host)
                acquired.append(Acquired(host, int(expires), wait / 1000.0, int(queued),
                                         head_score(head), int(recovered), bool(lapsed)))
            elif state == 0:  # held by a live process whose renewal is late
                self.io.write("ZADD", self.heap(host), "XX", "GT", answer[1], host)
            else:  # no work: off the heap, unless re-listed since the poll
                self.io.write("EVAL", DELIST_IF, 1, self.heap(host), host, score)
        return acquired

    def take(self, host: str, held: Sequence[str] = (), then: Callable[[Taken], None] | None = None,
             failed: Callable[[Exception], None] | None = None, max_skip: int = 64) -> Taken | None:
        """The best queued URL of an origin not in ``held`` (met ones parked), now in flight;
        an empty window with a tail is refilled, then taken from again. To ``then``, and
        returned if answered at once."""
        command = ("EVAL", TAKE, 5, *self._host_keys(host), self.keys.cash(host_tag(host)),
                   self._now(), self.owner, max_skip, self.ttl_ms, *held)
        read = ("GET", self.keys.tail(host))
        before = [0, 0, 0]  # skipped, parked, refilled by the takes that found the window empty
        ends: list[Any] = []  # the answer handed to then (decided on io's thread, before then runs)
        found: list[Taken] = []

        def refill(answers: list[Any]) -> tuple[Any, ...] | None:
            answer = answers[0]
            if answer[0] != 4 or len(ends) >= MAX_REFILLS:
                ends.append(answers)
                if self._refill_ahead(answer):  # off the take's path: the next take finds URLs
                    return [read], lambda tail: ([self._refill_command(host, tail[0])], self._count_ahead)
                return None
            ends.append(None)

            def again(moved: list[Any]) -> tuple[Any, ...]:
                before[0] += int(answer[1])  # the take's skipped and parked, the URLs the refill moved
                before[1] += int(answer[2])
                before[2] += max(0, int(moved[0]))
                return [command], refill, answered, failed
            return [read], lambda tail: ([self._refill_command(host, tail[0])], again, None, failed), None, failed

        def answered(answers: list[Any]) -> None:
            if ends and ends[-1] is answers:
                found.append(self._taken(answers[0], before))
                if then is not None:
                    then(found[0])
        self.io.submit([command], answered, failed, follow=refill)
        return found[0] if found else None

    def _refill_ahead(self, answer: list[Any]) -> bool:
        """Whether a take's answer left the window at half of it or less with a tail behind it."""
        return answer[0] == 1 and int(answer[8]) > 0 and int(answer[3]) - int(answer[8]) <= self.window // 2

    def _count_ahead(self, answers: list[Any]) -> None:
        self.refilled_ahead += max(0, int(answers[0]))

    @staticmethod
    def _taken(answer: list[Any], before: Sequence[int]) -> Taken:
        """The take's answer, with the skipped, parked and refilled counts of the takes
        before it that found the window empty (``before``)."""
        state = answer[0]
        if state == -1:
            taken = Taken("lost")
        elif state == 0:
            taken = Taken("empty", skipped=int(answer[1]), parked=int(answer[2]))
        elif state in (2, 3, 4):  # 4: the window still empty after a refill (another process's meanwhile)
            _, skipped, parked, queued, head = answer
            taken = Taken("held" if state == 3 else "stale", None, int(queued), head_score(head), int(skipped),
                          parked=int(parked))
        else:
            _, fp, row, queued, head, skipped, cash, parked, *_ = answer
            taken = Taken("taken", unpack_entry(int(fp), row), int(queued), head_score(head), int(skipped),
                          unpack_cash(cash) if cash else None, int(parked))
        taken.skipped, taken.parked, taken.refilled = taken.skipped + before[0], taken.parked + before[1], before[2]
        return taken

    def unpark(self, host: str) -> tuple[int, float]:
        """Unpark every URL of ``host``; how many, and the queue's head score now."""
        count, head = self.io.call(("EVAL", UNPARK, 1, self.keys.lease(host)))[0]
        return int(count), head_score(head)

    def finish(self, host: str, fingerprint: int, status: Status | None, fetched: float | None = None) -> None:
        """A handed-out URL is finished (buffered), if it is still ours."""
        lease, _, inflight, urls = self._host_keys(host)
        if self.store.urls.trims and status is not Status.DEFERRED:  # a deferred row stays, for a resume
            self.io.write("EVAL", FINISH, 4, inflight, urls, lease, self.keys.host_urls(host_tag(host)),
                          FINISHED_FIELD.get(status, ""), b"" if fetched is None else fetched_bytes(fetched),
                          fingerprint, self.owner)  # type: ignore[arg-type]
            return
        self.io.write("EVAL", FINISH, 3, inflight, urls, lease,
                      b"" if status is None else STATUS_BYTE[status],
                      b"" if fetched is None else fetched_bytes(fetched), fingerprint, self.owner)

    def inflight_of(self, hosts: list[str]) -> dict[str, list[int]]:
        if not hosts:
            return {}
        answers = self.io.call(*[("ZRANGE", self.keys.inflight(host), 0, -1) for host in hosts])
        return {host: [int(fp) for fp in found] for host, found in zip(hosts, answers)}

    def put_back(self, host: str, fingerprint: int, level: int, parked: bool = False) -> None:
        """A handed-out URL back to its queue (buffered; ``parked``: behind the others)."""
        lease, back, inflight, urls = self._host_keys(host)
        self.io.write("EVAL", PUT_BACK, 4, inflight, urls, back, lease, fingerprint, level,
                      "1" if parked else "", self.owner)

    def release(self, host: str, wait: float, idle_only: bool, heap_score: float | None,
                then: Callable[[tuple[int, int, float]], None] | None = None,
                failed: Callable[[Exception], None] | None = None) -> tuple[int, int, float]:
        """Give ``host`` back (``idle_only``: if it has no work); ``(state, queued, head score)``,
        state 0 kept, 1 released, -1 not ours."""
        command = ("EVAL", RELEASE, 4, *self._host_keys(host), self._now(), self.owner,
                   int(wait * 1000), "1" if idle_only else "0")
        return self._ask([command], lambda answers: self._released(host, heap_score, answers[0]), then, failed)

    def _released(self, host: str, heap_score: float | None, answer: list[Any]) -> tuple[int, int, float]:
        state = answer[0]
        if state == 0:
            return 0, int(answer[1]), head_score(answer[2])
        if state == 1 and heap_score is not None:
            self.io.write("EVAL", DELIST_IF, 1, self.heap(host), host, repr(float(heap_score)))
        elif state == 2:
            self.io.write("ZADD", self.heap(host), answer[1], host)
        return (1 if state in (1, 2) else -1), 0, float("inf")

    def renew(self, waits: dict[str, float]) -> dict[str, int]:
        """Extend the leases (``host -> seconds to its next fetch``); ``host -> expiry`` ms, -1: lost."""
        if not waits:
            return {}
        hosts = list(waits)
        answers = self.io.call(*[("EVAL", RENEW, 1, self.keys.lease(host), self._now(), self.owner,
                                     self.ttl_ms, int(max(0.0, waits[host]) * 1000)) for host in hosts])
        for host, expires in zip(hosts, answers):
            if expires != -1:
                self.io.write("ZADD", self.heap(host), "XX", "GT", expires, host)
        return {host: int(expires) for host, expires in zip(hosts, answers)}

    # -- repairs -------------------------------------------------------------
    def sweep_orphans(self) -> int:
        """List every host with work, no live owner and no heap entry; how many
        (two round trips per :data:`SWEEP_BATCH` hosts)."""
        listed = 0
        hosts = [self.keys.host_of(key, "lease") for key in self.store.scan(self.keys.lease_pattern)]
        for at in range(0, len(hosts), SWEEP_BATCH):
            batch = hosts[at:at + SWEEP_BATCH]
            answers = self.io.call(*[("EVAL", ORPHAN, 3, *self._host_keys(host)[:3], self._now()) for host in batch])
            orphans = [(host, answer) for host, answer in zip(batch, answers) if answer[0] == 1]
            scores = self.io.call(*[("ZSCORE", self.heap(host), host) for host, _ in orphans]) if orphans else []
            for (host, answer), score in zip(orphans, scores):
                if score is None:
                    commands, confirm = self._list_commands(host, answer[2] / 1000.0, answer[1])
                    self.io.submit(commands, None, follow=confirm)
                    listed += 1
        return listed

    # -- held origins and the idle close, crawl-wide (on the store's pipeline) ------
    def hold(self, origin: str, delay: float, reason: str) -> None:
        self.store.write("EVAL", HOLD, 1, self.keys.held_origins, self._now(), origin,
                         int(max(0.0, delay) * 1000), reason.replace("\n", " "))

    def held(self) -> dict[str, tuple[float, str]]:
        """Origins held now: ``origin -> (seconds left, reason)``."""
        return _triples(self.store.call(("EVAL", HELD, 1, self.keys.held_origins, self._now()))[0])

    def mark_active(self) -> None:
        self.store.write("EVAL", ACTIVE, 1, self.keys.active, self._now())

    def defer_idle(self, idle: float) -> dict[str, tuple[float, str]]:
        """The held origins to defer if no process was active for ``idle`` seconds."""
        return _triples(self.store.call(("EVAL", IDLE_DEFER, 2, self.keys.held_origins, self.keys.active,
                                         self._now(), int(idle * 1000)))[0])

    def take_deferrals(self) -> dict[str, str]:
        """The deferral table of the run before (``origin -> reason``), emptied."""
        found = self.store.call(("EVAL", TAKE_ALL, 1, self.keys.deferrals))[0]
        return {found[i].decode(): found[i + 1].decode().split(" ", 1)[-1] for i in range(0, len(found), 2)}

    # -- processes and stats -------------------------------------------------
    def others_alive(self) -> int:
        return self.store.registry.others_alive(self._now())

    def heartbeat(self, ttl: float) -> int:
        """This process is alive for ``ttl`` seconds; how many are alive."""
        if self._joined is None:
            self._joined = ttl
            self.store.registry.join(ttl)
        return self.store.registry.heartbeat(self._now())

    def leave(self) -> int:
        """How many other processes are alive."""
        joined, self._joined = self._joined, None
        return self.store.registry.leave(joined if joined is not None else self.ttl_ms / 1000, self._now())

    def add_stats(self, deltas: Iterable[tuple[str, float]]) -> None:
        for name, delta in deltas:
            if isinstance(delta, int):
                self.io.write("HINCRBY", self.keys.stats, name, delta)
            else:
                self.io.write("HINCRBYFLOAT", self.keys.stats, name, repr(float(delta)))

    def set_stat(self, name: str, value: float) -> None:
        self.io.write("HSET", self.keys.stats, name, repr(value) if isinstance(value, float) else value)

    def stats_totals(self) -> dict[str, float]:
        found = self.io.call(("HGETALL", self.keys.stats))[0]
        return {name.decode(): _number(value) for name, value in found.items()}


def _triples(answer: list[Any]) -> dict[str, tuple[float, str]]:
    return {answer[i].decode(): (float(answer[i + 1]) / 1000.0, answer[i + 2].decode())
            for i in range(0, len(answer), 3)}


def _number(value: bytes) -> float:
    text = value.decode()
    return int(text) if text.lstrip("-").isdigit() else float(text)
