"""Host leases in Redis: several crawler processes share one polite frontier.

Each host has, under its Redis Cluster hash tag ``{T}`` (so every script
below touches one slot; layout in :mod:`extensions.store.redis_keys`):

* ``P:{T}:back:HOST`` -- its shared back queue, a sorted set of fingerprints
  scored by :func:`queue_score` (higher front-queue level first, then
  discovery order). :data:`ENQUEUE` adds a URL's row (the exact URL-seen
  test) and its back-queue entry in one script, so a URL is never known
  without being queued; in Bloom mode :data:`ENQUEUE_BLOOM` asks the
  filter's shard of the same slot first (:mod:`extensions.store.redis_bloom`)
  and :data:`FINISH_TRIM` deletes a finished URL's row.
  A held origin's URLs are *parked* in the same queue, scored behind every
  other URL (:func:`parked_score`): :data:`TAKE`, given the host's held
  origins, parks those it meets, so the host's other origins keep their
  turns; :data:`UNPARK` puts them back in place when the hold ends. Being
  in the queue, a parked URL counts as the host's work everywhere (heap,
  release, take-over) and is never lost.
* ``P:{T}:inflight:HOST`` -- fingerprints handed to a crawler and not yet
  finished. :data:`TAKE` moves the best URL of an origin not held there
  (and the row to status in flight) atomically; :data:`FINISH` removes it.
* ``P:{T}:lease:HOST`` -- a hash: ``owner`` (a process id) and ``expires``
  (the lease), ``next`` (the earliest start of the host's next fetch, the
  politeness state every owner inherits), ``listed`` (whether the host is on
  the host heap) and ``ver`` (bumped at each change of owner).

and the **host heap**: ``P:{heap-N}:heap`` sorted sets (shards, so that a
cluster spreads them) of hosts scored by the time another process may next
look at the host: its next fetch time while nobody owns it, its lease expiry
while somebody does. Every host with queued or in-flight URLs is on the heap,
so an empty heap means the crawl is over.

Leases. A process takes a host from the heap with :data:`ACQUIRE` (only if
nobody holds an unexpired lease), renews every held host's lease each third
of the TTL (:data:`RENEW`, also moving the heap entry), dispatches only while
its lease is valid (:data:`TAKE` checks owner and expiry), and gives the host
back with :data:`RELEASE` when its back queue is empty, when the process is
too busy to serve it on time, or at close. The politeness state travels with
the lease: ``next`` is written at renewal and release and read at acquire,
so a new owner waits the gap its predecessor's last fetch earned.

Failure. If a process dies (SIGKILL), its leases expire after the TTL; its
hosts are still on the heap (scored by that expiry), the first process to
look afterwards acquires them and :data:`ACQUIRE` returns their in-flight
URLs to the back queue (rows back to queued). A page fetched but not yet
marked done is thus fetched at most once more. The only step that spans two
slots is putting a host on the heap after :data:`ENQUEUE`; it is confirmed
in ``{T}`` afterwards (:data:`CONFIRM`), so a crash in between leaves
``listed`` unset and the next enqueue of that host lists it again, and
:meth:`HostLeases.sweep_orphans` (run before a process concludes that the
crawl is over) lists any host with work that is not on the heap.

Time. Scripts read the Redis server's clock (``TIME``), so processes on
different machines need no synchronised clocks (the shards of a cluster do,
to within a small part of the TTL); tests inject a clock instead.
"""

from __future__ import annotations

import os
import random
import socket
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from extensions.frontier.fingerprint import host_hash
from extensions.store.base import Entry, Status
from extensions.store.redis_bloom import BLOOM_ADD_FN, bloom_hashes
from extensions.store.redis_keys import (
    FINISHED_FIELD,
    ROW_URL_AT,
    STATUS_BYTE,
    fetched_bytes,
    host_tag,
    pack_row,
    unpack_cash,
    unpack_entry,
)

LEVEL_SPAN = float(1 << 40)  # discovery numbers stay below this
# A parked URL (its origin held) is scored PARKED above its place, behind
# every unparked URL: exact in a double while levels stay below MAX_LEVELS.
PARKED = 1 << 52
PARK_FLOOR = 1 << 51
MAX_LEVELS = 2048

_NOW = """
local function now_ms(arg)
  if arg ~= '' then return tonumber(arg) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function fmt(x) return string.format('%.17g', x) end
local function head(key)
  local first = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  return first[2] or ''
end
local function requeue_inflight(inflight, back, urls)
  local taken = redis.call('ZRANGE', inflight, 0, -1, 'WITHSCORES')
  for i = 1, #taken, 2 do
    redis.call('ZADD', back, taken[i + 1], taken[i])
    local row = redis.call('HGET', urls, taken[i])
    if row and string.sub(row, 1, 1) == '1' then
      redis.call('HSET', urls, taken[i], '0' .. string.sub(row, 2))
    end
  end
  redis.call('DEL', inflight)
  return #taken / 2
end
"""

_ENQUEUE = _NOW + """
local added = {}
for i = $FIRST, #ARGV, $STRIDE do
  local new = 0
  if $FRESH or ARGV[3] == '1' then new = redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) end
  if new == 1 then
    redis.call('HINCRBY', KEYS[2], ARGV[4], 1)
    redis.call('ZADD', KEYS[3], ARGV[i + 2], ARGV[i])
  elseif ARGV[3] == '1' then
    local old = redis.call('HGET', KEYS[1], ARGV[i])
    local row = ARGV[i + 1]
    redis.call('HSET', KEYS[1], ARGV[i], string.sub(row, 1, 1) .. string.sub(old, 2, 9) .. string.sub(row, 10))
    redis.call('ZADD', KEYS[3], ARGV[i + 2], ARGV[i])
  end
  added[#added + 1] = new
end
local now = now_ms(ARGV[1])
local st = redis.call('HMGET', KEYS[5], 'owner', 'expires', 'listed', 'next', 'ver')
local queued = redis.call('ZCARD', KEYS[3])
local needs = 0
if st[3] ~= '1' and queued + redis.call('ZCARD', KEYS[4]) > 0 then needs = 1 end
local mine = 0
if st[1] == ARGV[2] and tonumber(st[2]) > now then mine = 1 end
local wait = math.max(0, (tonumber(st[4]) or 0) - now)
return {added, needs, mine, queued, head(KEYS[3]), wait, st[5] or ''}
"""

#: New URLs of one host: row (add-if-new) and back-queue entry together;
#: ``force`` requeues known ones (``dont_filter``), keeping their fetch time.
#: KEYS: urls, host_urls, back, inflight, lease. ARGV: now, me, force, host,
#: then fingerprint, row, score per URL. Returns {added per URL, needs
#: listing, held by me, back-queue length, head score, ms to next fetch, ver}.
ENQUEUE = _ENQUEUE.replace("$FIRST", "5").replace("$STRIDE", "3").replace("$FRESH", "true")

#: The same with the URL-seen Bloom filter (the URL is new if the filter
#: says so; a forced one is added to it too). KEYS: as ENQUEUE's, then the
#: Bloom shard. ARGV: now, me, force, host, first capacity, first error,
#: then fingerprint, row, score, h1, h2, h3 per URL.
ENQUEUE_BLOOM = BLOOM_ADD_FN + _ENQUEUE.replace("$FIRST", "7").replace("$STRIDE", "6").replace(
    "$FRESH", "bloom_add(KEYS[6], ARGV[5], ARGV[6], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]) == 1")

#: Put a host on its heap shard. KEYS: heap. ARGV: now, ms to wait, host,
#: a random fraction (so that a re-listing never repeats a score). Returns the score.
LIST = _NOW + """
local score = fmt(now_ms(ARGV[1]) + tonumber(ARGV[2]) - tonumber(ARGV[4]))
redis.call('ZADD', KEYS[1], score, ARGV[3])
return score
"""

#: The listing is done, unless the host changed hands since ENQUEUE read
#: ``ver`` (its new owner or releaser then set ``listed``). KEYS: lease. ARGV: ver.
CONFIRM = """
local ver = redis.call('HGET', KEYS[1], 'ver') or ''
if ver == ARGV[1] then redis.call('HSET', KEYS[1], 'listed', '1') return 1 end
return 0
"""

#: Remove a host from the heap only if its score is still the one seen.
#: KEYS: heap. ARGV: host, score.
DELIST_IF = """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then return redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0
"""

#: Hosts due on one heap shard. KEYS: heap. ARGV: now, limit. Returns
#: {hosts on the shard, now, {host, score, ...} due, earliest score}.
POLL = _NOW + """
local now = now_ms(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
return {redis.call('ZCARD', KEYS[1]), now, due, head(KEYS[1])}
"""

#: Take a host nobody holds (or whose lease expired: its in-flight URLs go
#: back to the queue). KEYS: lease, back, inflight, urls. ARGV: now, me, TTL
#: ms. Returns {0, expires} if another process holds it; {2, recovered} if
#: it has no work (it leaves the heap: ``listed`` cleared); else {1, expires,
#: ms to next fetch, back-queue length, head score, recovered, 1 if it was
#: taken over from a lapsed lease}.
ACQUIRE = _NOW + """
local now = now_ms(ARGV[1])
local st = redis.call('HMGET', KEYS[1], 'owner', 'expires', 'next')
if st[1] and tonumber(st[2]) > now then return {0, tonumber(st[2])} end
local lapsed = 0
if st[1] then lapsed = 1 end
local recovered = requeue_inflight(KEYS[3], KEYS[2], KEYS[4])
redis.call('HINCRBY', KEYS[1], 'ver', 1)
local queued = redis.call('ZCARD', KEYS[2])
if queued == 0 then
  redis.call('HDEL', KEYS[1], 'owner', 'expires')
  redis.call('HSET', KEYS[1], 'listed', '0')
  return {2, recovered}
end
local expires = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'expires', expires, 'listed', '1')
local wait = math.max(0, (tonumber(st[3]) or 0) - now)
return {1, expires, wait, queued, head(KEYS[2]), recovered, lapsed}
"""

_TAKE = _NOW + """
local now = now_ms(ARGV[1])
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return {-1} end
redis.call('HSET', KEYS[1], 'expires', now + tonumber(ARGV[4]))
local skipped, parked, kept = 0, 0, {}
$SETUP
for _ = 1, tonumber(ARGV[3]) do
  local popped = redis.call('ZPOPMIN', KEYS[2])
  if #popped == 0 then break end
  local row = redis.call('HGET', KEYS[4], popped[1])
  if not row or string.sub(row, 1, 1) ~= '0' then
    skipped = skipped + 1
  $PARK
  else
    $RESTORE
    redis.call('HSET', KEYS[4], popped[1], '1' .. string.sub(row, 2))
    redis.call('ZADD', KEYS[3], popped[2], popped[1])
    return {1, popped[1], row, redis.call('ZCARD', KEYS[2]), head(KEYS[2]), skipped,
            redis.call('HGET', KEYS[5], popped[1]), parked}
  end
end
$RESTORE
local queued = redis.call('ZCARD', KEYS[2])
if queued == 0 then return {0, skipped, parked} end
if #kept > 0 then return {3, skipped, parked, queued, head(KEYS[2])} end
return {2, skipped, parked, queued, head(KEYS[2])}
"""

#: The best queued URL of a host we hold whose origin is not held, into
#: its in-flight set; extends the lease (still ours: nobody acquired it, even
#: if it lapsed). A held origin's URL met on the way is parked: moved behind
#: every unparked URL of the queue (:func:`parked_score`), so the host's other
#: origins keep their turns. KEYS: lease, back, inflight, urls, cash. ARGV:
#: now, me, most entries to pass over (stale or held), TTL ms, then the held
#: origins of the host. Returns {-1} (lease lost), {0, skipped, parked}
#: (queue empty), {2, skipped, parked, back-queue length, head score} (only
#: stale or held entries so far, more to look at), {3, skipped, parked,
#: back-queue length, head score} (only held origins' URLs are queued), or {1,
#: fingerprint, row, back-queue length, head score, skipped, AOPIC cash row
#: or false, parked} (the cash row saves the dispatch a round trip: same hash tag).
TAKE = _TAKE.replace("$SETUP", "").replace("$PARK", "").replace("$RESTORE", "")

#: :data:`TAKE` for a host with held origins (ARGV from the fifth on): the
#: held origins' URLs it meets are parked, or, in the parked tail, looked at
#: and left where they were.
TAKE_HELD = _TAKE.replace("$SETUP", """
local held = {}
for i = 5, #ARGV do held[ARGV[i]] = true end
local function origin_of(row)
  local length = struct.unpack('>i4', row, $URL_AT)
  if length < 0 then return '' end
  local scheme, netloc = string.match(string.sub(row, $URL_AT + 4, $URL_AT + 3 + length),
                                      '^(%a[%w+%.%-]*)://([^/?#]*)')
  if not scheme then return '' end
  return string.lower(scheme) .. '://' .. netloc
end
local function restore()
  for i = 1, #kept, 2 do redis.call('ZADD', KEYS[2], kept[i], kept[i + 1]) end
end""").replace("$PARK", """elseif held[origin_of(row)] then
    local score = tonumber(popped[2])
    if score < $PARK_FLOOR then
      redis.call('ZADD', KEYS[2], fmt(score + $PARKED), popped[1])
      parked = parked + 1
    else
      kept[#kept + 1] = popped[2]; kept[#kept + 1] = popped[1]
    end""").replace("$RESTORE", "restore()").replace("$URL_AT", str(ROW_URL_AT + 1)).replace(
    "$PARK_FLOOR", "%d" % PARK_FLOOR).replace("$PARKED", "%d" % PARKED)

#: Every parked URL of a host back in its place (its origin's hold ended:
#: it goes before the URLs found since, as its level and discovery order
#: say). KEYS: back. Returns {how many, head score}.
UNPARK = _NOW + """
local found = redis.call('ZRANGEBYSCORE', KEYS[1], '$PARK_FLOOR', '+inf', 'WITHSCORES')
for i = 1, #found, 2 do redis.call('ZADD', KEYS[1], fmt(tonumber(found[i + 1]) - $PARKED), found[i]) end
return {#found / 2, head(KEYS[1])}
""".replace("$PARK_FLOOR", "%d" % PARK_FLOOR).replace("$PARKED", "%d" % PARKED)

#: Whether another process took the host over from us (its ACQUIRE put
#: our in-flight URLs back in the queue: they are no longer ours to move).
_TAKEN_OVER = """
local function taken_over(lease, me)
  local owner = redis.call('HGET', lease, 'owner')
  return owner and owner ~= me
end
"""

#: A handed-out URL is finished. If the host was taken over meanwhile, the
#: URL went back to its queue: taken out again and finished if it is still
#: there (no second fetch), left alone if the new owner has it in flight.
#: KEYS: inflight, urls, lease, back. ARGV: status byte ('' keeps it),
#: fetch time (8 bytes or ''), fingerprint, me.
FINISH = _TAKEN_OVER + """
local guard = '1'
if taken_over(KEYS[3], ARGV[4]) then
  if ARGV[1] == '' or redis.call('ZREM', KEYS[4], ARGV[3]) == 0 then return 0 end
  guard = '0'
else
  redis.call('ZREM', KEYS[1], ARGV[3])
end
if ARGV[1] ~= '' then
  local row = redis.call('HGET', KEYS[2], ARGV[3])
  if row and string.sub(row, 1, 1) == guard then
    local fetched = ARGV[2]
    if fetched == '' then fetched = string.sub(row, 2, 9) end
    redis.call('HSET', KEYS[2], ARGV[3], ARGV[1] .. fetched .. string.sub(row, 10))
  end
end
return 1
"""

#: The same in Bloom mode: a finished row goes, counted under its status in
#: ``host_urls`` (see extensions/store/redis_keys.py). KEYS: inflight, urls,
#: host_urls, lease, back. ARGV: the count's field (``#done`` ...; '' keeps
#: the row), fingerprint, me.
FINISH_TRIM = _TAKEN_OVER + """
local guard = '1'
if taken_over(KEYS[4], ARGV[3]) then
  if ARGV[1] == '' or redis.call('ZREM', KEYS[5], ARGV[2]) == 0 then return 0 end
  guard = '0'
else
  redis.call('ZREM', KEYS[1], ARGV[2])
end
if ARGV[1] ~= '' then
  local row = redis.call('HGET', KEYS[2], ARGV[2])
  if row and string.sub(row, 1, 1) == guard then
    redis.call('HDEL', KEYS[2], ARGV[2])
    redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
  end
end
return 1
"""

#: A handed-out URL goes back to its host's queue (postponed), unless the
#: host was taken over meanwhile (its ACQUIRE did that already; the URL may
#: be in the new owner's hands). KEYS: inflight, urls, back, lease. ARGV:
#: fingerprint, score, me.
PUT_BACK = _TAKEN_OVER + """
if taken_over(KEYS[4], ARGV[3]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
local row = redis.call('HGET', KEYS[2], ARGV[1])
if row and string.sub(row, 1, 1) == '1' then redis.call('HSET', KEYS[2], ARGV[1], '0' .. string.sub(row, 2)) end
return 1
"""

#: Give a held host back, writing its politeness state. KEYS: lease, back,
#: inflight, urls. ARGV: now, me, ms to next fetch, idle only ('1': keep it
#: if it has work). Returns {-1} (not ours), {0, back-queue length, head
#: score} (kept: it has work), {1} (released, no work: off the heap) or
#: {2, next fetch score} (released with work: back on the heap at that time).
RELEASE = _NOW + """
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return {-1} end
local now = now_ms(ARGV[1])
local next = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'next', next)
local queued = redis.call('ZCARD', KEYS[2])
if ARGV[4] == '1' and queued + redis.call('ZCARD', KEYS[3]) > 0 then
  return {0, queued, head(KEYS[2])}
end
requeue_inflight(KEYS[3], KEYS[2], KEYS[4])
redis.call('HDEL', KEYS[1], 'owner', 'expires')
redis.call('HINCRBY', KEYS[1], 'ver', 1)
if redis.call('ZCARD', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[1], 'listed', '0')
  return {1}
end
return {2, fmt(next)}
"""

#: Extend a held lease and record the politeness state. KEYS: lease. ARGV:
#: now, me, TTL ms, ms to next fetch. Returns the new expiry, -1 if not ours.
RENEW = _NOW + """
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return -1 end
local now = now_ms(ARGV[1])
local expires = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'expires', expires, 'next', now + tonumber(ARGV[4]))
return expires
"""

#: Does a host have work and no live owner? KEYS: lease, back, inflight.
#: ARGV: now. Returns {1, ver, ms to next fetch} if so, else {0}.
ORPHAN = _NOW + """
local now = now_ms(ARGV[1])
local st = redis.call('HMGET', KEYS[1], 'owner', 'expires', 'next', 'ver')
if st[1] and tonumber(st[2]) > now then return {0} end
if redis.call('ZCARD', KEYS[2]) + redis.call('ZCARD', KEYS[3]) == 0 then return {0} end
return {1, st[4] or '', math.max(0, (tonumber(st[3]) or 0) - now)}
"""

#: A process is alive until the returned expiry. KEYS: processes. ARGV:
#: now, id, TTL ms. Returns how many processes are alive.
HEARTBEAT = _NOW + """
local now = now_ms(ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
return redis.call('ZCOUNT', KEYS[1], now, '+inf')
"""

#: A process leaves. KEYS: processes. ARGV: now, id. Returns how many are alive.
LEAVE = _NOW + """
redis.call('ZREM', KEYS[1], ARGV[2])
return redis.call('ZCOUNT', KEYS[1], now_ms(ARGV[1]), '+inf')
"""


def queue_score(level: int, seq: int) -> float:
    """Back-queue order: higher level first, then discovery order."""
    return -level * LEVEL_SPAN + (seq % int(LEVEL_SPAN))


def parked_score(score: float) -> float:
    """Where a held origin's URL waits: behind every URL not parked, in the
    same order among the parked (:data:`UNPARK` subtracts it again)."""
    return score + PARKED


def is_parked(score: bytes | str | float | None) -> bool:
    """Whether a back-queue score is a parked URL's."""
    return score not in (None, b"", "") and PARK_FLOOR <= float(score) < float("inf")


def level_of_score(score: bytes | str | float | None) -> int:
    """The front-queue level a back-queue score encodes (-1: none or parked)."""
    if score in (None, b"", "") or is_parked(score):
        return -1
    return -int(float(score) // LEVEL_SPAN)


def head_score(score: bytes | str | None) -> float:
    """A back queue's head score as a number (infinity: empty queue)."""
    return float("inf") if score in (None, b"", "") else float(score)


def process_id() -> str:
    """A name for this crawler process, unique across restarts."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


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


@dataclass(slots=True)
class Poll:
    hosts: int  # hosts on the heap (with work, held or not)
    due: list[tuple[str, bytes]]  # (host, score) due now, shuffled
    wait: float | None  # seconds until the earliest entry is due (None: heap empty)


class HostLeases:
    """The Redis side of the multi-process frontier (see the module doc).

    ``store`` is an open :class:`~extensions.store.redis.RedisStore`; its
    pipeline carries these commands too, so they keep their order with the
    store's own writes. ``clock`` (seconds) replaces the server's clock in
    tests; ``None`` uses Redis' ``TIME``."""

    def __init__(self, store: Any, owner: str, ttl: float, shards: int,
                 clock: Callable[[], float] | None = None, rng: random.Random | None = None) -> None:
        if ttl <= 0:
            raise ValueError(f"FRONTIER_LEASE_TTL must be > 0, got {ttl!r}")
        if shards < 1:
            raise ValueError(f"the host heap needs >= 1 shard, got {shards!r}")
        self.store, self.keys = store, store.keys
        self.owner, self.ttl_ms, self.shards = owner, int(ttl * 1000), shards
        self.clock, self.rng = clock, rng or random.Random()

    def _now(self) -> str:
        return "" if self.clock is None else str(int(self.clock() * 1000))

    def heap(self, host: str) -> str:
        return self.keys.host_heap(host_hash(host) % self.shards)

    def _host_keys(self, host: str) -> tuple[str, str, str, str]:
        keys, tag_urls = self.keys, self.keys.urls(host_tag(host))
        return keys.lease(host), keys.back(host), keys.inflight(host), tag_urls

    # -- enqueue -------------------------------------------------------------
    def enqueue(self, host: str, entries: Sequence[Entry], force: bool = False) -> list[Enqueued]:
        """File URLs of one host (add-if-new, or requeue with ``force``) and
        put the host on the heap if it is not there; per entry, whether it was new."""
        if not entries:
            return []
        seqs = self.store.sequence_numbers(len(entries))
        bloom = self.store.bloom
        args: list[Any] = []
        for entry, seq in zip(entries, seqs):
            args += [entry.fingerprint, pack_row(entry, Status.QUEUED, seq), queue_score(entry.level, seq)]
            if bloom is not None:
                args += bloom_hashes(entry.fingerprint)
        keys, tag = self.keys, host_tag(host)
        lease, back, inflight, urls = self._host_keys(host)
        script_keys = [urls, keys.host_urls(tag), back, inflight, lease]
        head_args = [self._now(), self.owner, "1" if force else "0", host]
        if bloom is None:
            command = ("EVAL", ENQUEUE, 5, *script_keys, *head_args, *args)
        else:
            command = ("EVAL", ENQUEUE_BLOOM, 6, *script_keys, keys.bloom(tag), *head_args, *bloom.args(), *args)
        added, needs, mine, queued, head, wait, ver = self.store.call(command)[0]
        self.store.count_known(sum(added))
        if needs:
            self.list_host(host, wait / 1000.0, ver)
        return [Enqueued(bool(new), bool(mine), int(queued), head_score(head), bool(needs)) for new in added]

    def list_host(self, host: str, wait: float, ver: bytes | str) -> None:
        """Put ``host`` on the heap (acknowledged), then confirm it in ``{T}``."""
        self.store.call(("EVAL", LIST, 1, self.heap(host), self._now(), int(wait * 1000), host,
                         repr(self.rng.random() * 0.999)))
        self.store.write("EVAL", CONFIRM, 1, self.keys.lease(host), ver)

    def requeue(self, host: str, fingerprint: int, level: int) -> None:
        """Move a queued URL to another level (an AOPIC promotion); no-op if
        it is not queued."""
        seq = self.store.sequence_numbers(1)[0]
        self.store.write("ZADD", self.keys.back(host), "XX", queue_score(level, seq), fingerprint)

    # -- the host heap -------------------------------------------------------
    def poll(self, limit: int) -> Poll:
        """Hosts due on every heap shard (up to ``limit`` per shard)."""
        answers = self.store.call(*[("EVAL", POLL, 1, self.keys.host_heap(shard), self._now(), limit)
                                    for shard in range(self.shards)])
        total, due, wait = 0, [], None
        for count, now, pairs, first in answers:
            total += int(count)
            due += [(pairs[i].decode(), pairs[i + 1]) for i in range(0, len(pairs), 2)]
            if first not in (b"", ""):
                ahead = max(0.0, (float(first) - int(now)) / 1000.0)
                wait = ahead if wait is None else min(wait, ahead)
        self.rng.shuffle(due)  # processes polling at once try different hosts first
        return Poll(total, due, wait)

    def acquire(self, candidates: Sequence[tuple[str, bytes]]) -> list[Acquired]:
        """Try to take each ``(host, score)`` from the heap; the hosts taken."""
        if not candidates:
            return []
        answers = self.store.call(*[
            ("EVAL", ACQUIRE, 4, *self._host_keys(host), self._now(), self.owner, self.ttl_ms)
            for host, _ in candidates])
        acquired = []
        for (host, score), answer in zip(candidates, answers):
            state = answer[0]
            if state == 1:
                _, expires, wait, queued, head, recovered, lapsed = answer
                self.store.write("ZADD", self.heap(host), expires, host)
                acquired.append(Acquired(host, int(expires), wait / 1000.0, int(queued),
                                         head_score(head), int(recovered), bool(lapsed)))
            elif state == 0:  # held by a live process whose renewal is late
                self.store.write("ZADD", self.heap(host), "XX", "GT", answer[1], host)
            else:  # no work: off the heap, unless re-listed since the poll
                self.store.write("EVAL", DELIST_IF, 1, self.heap(host), host, score)
        return acquired

    def take(self, host: str, held: Sequence[str] = (), max_skip: int = 64) -> Taken:
        """The best queued URL of a held host whose origin is not in
        ``held`` (the host's held origins), now in flight; the held
        origins' URLs met on the way are parked."""
        script = TAKE_HELD if held else TAKE  # the everyday script stays short: EVAL sends it each time
        answer = self.store.call(("EVAL", script, 5, *self._host_keys(host), self.keys.cash(host_tag(host)),
                                  self._now(), self.owner, max_skip, self.ttl_ms, *held))[0]
        state = answer[0]
        if state == -1:
            return Taken("lost")
        if state == 0:
            return Taken("empty", skipped=int(answer[1]), parked=int(answer[2]))
        if state in (2, 3):
            _, skipped, parked, queued, head = answer
            return Taken("stale" if state == 2 else "held", None, int(queued), head_score(head), int(skipped),
                         parked=int(parked))
        _, fp, row, queued, head, skipped, cash, parked = answer
        fingerprint = int(fp)
        return Taken("taken", unpack_entry(fingerprint, row), int(queued), head_score(head), int(skipped),
                     unpack_cash(cash) if cash else None, int(parked))

    def unpark(self, host: str) -> tuple[int, float]:
        """Every parked URL of ``host`` back in its place in the queue; how
        many, and the queue's head score now."""
        count, head = self.store.call(("EVAL", UNPARK, 1, self.keys.back(host)))[0]
        return int(count), head_score(head)

    def finish(self, host: str, fingerprint: int, status: Status | None, fetched: float | None = None) -> None:
        """A handed-out URL is finished (buffered): out of the in-flight
        set; its row gets ``status`` if it is still in flight. After a
        take-over (this process stalled past its lease) only a URL still
        queued is finished: one the new owner took is left to it."""
        lease, back, inflight, urls = self._host_keys(host)
        if self.store.trims and status is not Status.DEFERRED:  # a deferred row stays, for a resume
            self.store.write("EVAL", FINISH_TRIM, 5, inflight, urls, self.keys.host_urls(host_tag(host)),
                             lease, back, FINISHED_FIELD.get(status, ""), fingerprint,  # type: ignore[arg-type]
                             self.owner)
            return
        self.store.write("EVAL", FINISH, 4, inflight, urls, lease, back,
                         b"" if status is None else STATUS_BYTE[status],
                         b"" if fetched is None else fetched_bytes(fetched), fingerprint, self.owner)

    def inflight_of(self, hosts: list[str]) -> dict[str, list[int]]:
        """The fingerprints in each host's in-flight set, in one round trip."""
        if not hosts:
            return {}
        answers = self.store.call(*[("ZRANGE", self.keys.inflight(host), 0, -1) for host in hosts])
        return {host: [int(fp) for fp in found] for host, found in zip(hosts, answers)}

    def put_back(self, host: str, fingerprint: int, level: int, parked: bool = False) -> float:
        """A handed-out URL goes back to its host's queue (buffered), behind
        every unparked URL if ``parked``; not after a take-over, which put it
        back already. Returns the score it gets."""
        lease, back, inflight, urls = self._host_keys(host)
        seq = self.store.sequence_numbers(1)[0]
        score = queue_score(level, seq)
        score = parked_score(score) if parked else score
        self.store.write("EVAL", PUT_BACK, 4, inflight, urls, back, lease, fingerprint, repr(score), self.owner)
        return score

    def release(self, host: str, wait: float, idle_only: bool,
                heap_score: float | None) -> tuple[int, int, float]:
        """Give ``host`` back (``idle_only``: only if it has no work), its
        next fetch ``wait`` seconds from now. Returns ``(state, queued,
        head score)``: state 0 kept (it has work), 1 released, -1 not ours."""
        answer = self.store.call(("EVAL", RELEASE, 4, *self._host_keys(host), self._now(), self.owner,
                                  int(wait * 1000), "1" if idle_only else "0"))[0]
        state = answer[0]
        if state == 0:
            return 0, int(answer[1]), head_score(answer[2])
        if state == 1 and heap_score is not None:
            self.store.write("EVAL", DELIST_IF, 1, self.heap(host), host, repr(float(heap_score)))
        elif state == 2:
            self.store.write("ZADD", self.heap(host), answer[1], host)
        return (1 if state in (1, 2) else -1), 0, float("inf")

    def renew(self, waits: dict[str, float]) -> dict[str, int]:
        """Extend the leases of held hosts (``host -> seconds to its next
        fetch``); return ``host -> new expiry`` (ms), -1 where the lease was lost."""
        if not waits:
            return {}
        hosts = list(waits)
        answers = self.store.call(*[("EVAL", RENEW, 1, self.keys.lease(host), self._now(), self.owner,
                                     self.ttl_ms, int(max(0.0, waits[host]) * 1000)) for host in hosts])
        for host, expires in zip(hosts, answers):
            if expires != -1:
                self.store.write("ZADD", self.heap(host), "XX", "GT", expires, host)
        return {host: int(expires) for host, expires in zip(hosts, answers)}

    # -- repairs -------------------------------------------------------------
    def sweep_orphans(self) -> int:
        """List every host with work, no live owner and no heap entry (left
        by a process killed between enqueue and listing); return how many."""
        listed = 0
        for key in list(self.store.scan(self.keys.back_pattern)):
            host = self.keys.host_of_back(key)
            lease, back, inflight, _ = self._host_keys(host)
            answer = self.store.call(("EVAL", ORPHAN, 3, lease, back, inflight, self._now()))[0]
            if answer[0] != 1:
                continue
            if self.store.call(("ZSCORE", self.heap(host), host))[0] is None:
                self.list_host(host, answer[2] / 1000.0, answer[1])
                listed += 1
        return listed

    # -- processes and stats -------------------------------------------------
    def heartbeat(self, ttl: float) -> int:
        """This process is alive for ``ttl`` seconds; how many are alive."""
        return int(self.store.call(("EVAL", HEARTBEAT, 1, self.keys.processes, self._now(),
                                    self.owner, int(ttl * 1000)))[0])

    def leave(self) -> int:
        """This process is gone; how many others are still alive."""
        return int(self.store.call(("EVAL", LEAVE, 1, self.keys.processes, self._now(), self.owner))[0])

    def add_stats(self, deltas: Iterable[tuple[str, float]]) -> None:
        """Add this process's stat changes to the crawl's totals (buffered)."""
        for name, delta in deltas:
            if isinstance(delta, int):
                self.store.write("HINCRBY", self.keys.stats, name, delta)
            else:
                self.store.write("HINCRBYFLOAT", self.keys.stats, name, repr(float(delta)))

    def set_stat(self, name: str, value: float) -> None:
        """Record a crawl-wide measurement (the latest wins; buffered)."""
        self.store.write("HSET", self.keys.stats, name, repr(value) if isinstance(value, float) else value)

    def stats_totals(self) -> dict[str, float]:
        """Stats summed over every process of the crawl."""
        found = self.store.call(("HGETALL", self.keys.stats))[0]
        return {name.decode(): _number(value) for name, value in found.items()}


def _number(value: bytes) -> float:
    text = value.decode()
    return int(text) if text.lstrip("-").isdigit() else float(text)
