"""Key layout, row encoding and server-side scripts of the Redis store.

Pure: no I/O (the store that talks to Redis is :mod:`extensions.store.redis`).

Key layout (``P`` is ``FRONTIER_REDIS_PREFIX``, default ``web``; ``T`` is a
host tag, six hex digits: the top 24 bits of a fingerprint, which
:mod:`extensions.frontier.fingerprint` makes a hash of the URL's host)::

    P:{T}:urls        hash  fingerprint -> URL row (status, fetched, seq, entry)
    P:{T}:host_urls   hash  host -> how many URLs of that host are known; and
                      #done, #failed, #excluded, #refused: rows trimmed in that status
    P:{bloom-N}:bloom string the URL-seen Bloom filter's shard for the slot of
                      the tags {T} it serves (FRONTIER_SEEN_BACKEND "bloom",
                      see extensions/store/redis_bloom.py)
    P:{T}:cash        hash  fingerprint -> AOPIC (cash, history, mark, visits)
    P:{T}:groups      hash  fingerprint -> "group_id,duplicate" (content-seen)
    P:{aopic}:ledger  hash  AOPIC's shared scalars: lambda, dividend, put_in,
                      rows, crawls (extensions/aopic/shared.py)
    P:{T}:lease:HOST  hash  a host's lease and politeness state, shared by
                      several crawler processes (owner, expires, next, listed, ver)
    P:{T}:back:HOST   zset  the host's queued fingerprints (its shared back queue)
    P:{T}:inflight:HOST zset the host's fingerprints handed to a crawler, not finished
    P:{heap-N}:heap   zset  host -> when another process may next look at it (the
                      shared host heap, in shards); the last four are the
                      multi-process frontier's, see extensions/frontier/leases.py
    P:queue:NAME      list  fingerprints of one front or back queue (FIFO)
    P:hosts           set   every host seen (host_count)
    P:crawl_delays    hash  host -> robots.txt Crawl-delay (seconds)
    P:deferrals       hash  origin -> "when reason" of a deferred origin
    P:{holds}:origins hash  origin -> "until reason" of an origin held now, and
    P:{holds}:active  str   the last time some process had work no hold keeps
                      back (both ms; the multi-process frontier's idle close,
                      see extensions/frontier/sharedholds.py)
    P:meta            hash  schema, clean, front_queues, back_queues, ...
    P:seq             int   discovery-order counter (reserved in blocks)
    P:known           int   URLs inserted as new (for memory per URL)
    P:processes       zset  crawler process id -> heartbeat expiry (ms)
    P:stats           hash  stats summed over the crawler processes
    P:start_urls      list  seeds pushed to a running crawl (scrapy-redis'
                      convention; kept when the crawl's keys are deleted)

Partitioning: ``{T}`` is a Redis Cluster hash tag, so every key of one tag
lives in one slot, hence on one shard: a host's URL rows (its slice of the
exact URL-seen set), its URL count, cash, groups and any per-host state sit
together, and a 3-master cluster spreads hosts over the shards. The tag is
the host's *hash*, not its name, because most lookups come with a
fingerprint only (``get_many``, ``status_of``, ``set_status``): the
fingerprint carries its host's hash, so each lookup goes to the right slot
without a host-name index. Hosts whose 24-bit hashes collide share a tag
(rows stay apart: they are keyed by the full fingerprint, and URL counts by
host name). :func:`host_tag` gives the tag of a host name.

The queues, the host set, the crawl delays and the meta hash are global
keys, each in a slot of its own: the front and back queues are the frontier
process's own order (the host -> back queue table lives in its memory), the
rest is read in bulk at start or in gauges.

A URL row (bytes)::

    status   1 byte   ASCII digit: 0 queued, 1 inflight, 2 done, 3 failed, 4 excluded,
                      5 deferred, 6 refused
    fetched  8 bytes  big-endian double, unix time the last fetch ended (0: never)
    seq      8 bytes  big-endian int64, discovery order (rebuild order)
    level, priority, depth, flags      >i, >q, >q, >i
    url, host, referer, extra, blob    each >i length (-1: None) + UTF-8 or bytes

The scripts below change only the first 9 bytes of a row in place (status,
fetched); every multi-key script touches keys of a single slot, as Redis
Cluster requires (a tag's keys, and the Bloom shard of its slot).

Trimming (Bloom mode): once the filter is the URL-seen set, a row is needed
only while its URL is queued or in flight, so :data:`TRIM` deletes the rows
that become done, failed or excluded and counts them in ``host_urls``
(``#done`` ...), which :meth:`~extensions.store.redis.RedisStore.count_by_status`
adds to the rows.
"""

from __future__ import annotations

import re
import struct

from extensions.frontier.fingerprint import host_hash
from extensions.store.base import Entry, Status
from extensions.store.redis_bloom import BLOOM_ADD_FN, shard_tag

SCHEMA_VERSION = "1"

_HEAD = struct.Struct(">cdqiqqi")  # status, fetched, seq, level, priority, depth, flags
_LENGTH = struct.Struct(">i")
_CASH = struct.Struct(">dddq")
_HEAD_SIZE = _HEAD.size
ROW_URL_AT = _HEAD_SIZE  # byte offset of a row's URL (its length first); scripts read it there
STATUS_BYTE = {status: str(int(status)).encode() for status in Status}
_STATUS_OF_BYTE = {byte[0]: status for status, byte in STATUS_BYTE.items()}
_TEXT = ("utf-8", "surrogatepass")

_INSERT_NEW = """
local added = {}
for i = $FIRST, #ARGV, $STRIDE do
  local new = 0
  if $FRESH then
    new = redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
    if new == 1 then redis.call('HINCRBY', KEYS[2], ARGV[i + 2], 1) end
  end
  added[#added + 1] = new
end
return added
"""

#: add-if-new of rows of one tag; counts each new row's host. KEYS: urls,
#: host_urls; ARGV: fingerprint, row, host, ... Returns 1/0 per row.
INSERT_NEW = _INSERT_NEW.replace("$FIRST", "1").replace("$STRIDE", "3").replace("$FRESH", "true")

#: the same, a row only for a URL new to the Bloom filter. KEYS: urls,
#: host_urls, Bloom shard; ARGV: first capacity, first error, then
#: fingerprint, row, host, h1, h2, h3 per row.
INSERT_NEW_BLOOM = BLOOM_ADD_FN + _INSERT_NEW.replace("$FIRST", "3").replace("$STRIDE", "6").replace(
    "$FRESH", "bloom_add(KEYS[3], ARGV[1], ARGV[2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]) == 1")

#: insert or overwrite one row as queued, keeping its last fetch time.
#: KEYS: urls, host_urls; ARGV: fingerprint, row, host.
REQUEUE = """
local old = redis.call('HGET', KEYS[1], ARGV[1])
local row = ARGV[2]
if old then
  row = string.sub(row, 1, 1) .. string.sub(old, 2, 9) .. string.sub(row, 10)
else
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
end
redis.call('HSET', KEYS[1], ARGV[1], row)
return 1
"""

#: the same, and the URL into the Bloom filter. KEYS: urls, host_urls, Bloom
#: shard; ARGV: fingerprint, row, host, first capacity, first error, h1, h2, h3.
REQUEUE_BLOOM = BLOOM_ADD_FN + "bloom_add(KEYS[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8])" + REQUEUE

#: rows of one tag become done, failed or excluded in Bloom mode: deleted,
#: and counted under their status in ``host_urls``. KEYS: urls, host_urls;
#: ARGV: the count's field (``#done`` ...), only-from status byte or '',
#: fingerprints. Returns how many rows went.
TRIM = """
local trimmed = 0
for i = 3, #ARGV do
  local row = redis.call('HGET', KEYS[1], ARGV[i])
  if row and (ARGV[2] == '' or string.sub(row, 1, 1) == ARGV[2]) then
    redis.call('HDEL', KEYS[1], ARGV[i])
    trimmed = trimmed + 1
  end
end
if trimmed > 0 then redis.call('HINCRBY', KEYS[2], ARGV[1], trimmed) end
return trimmed
"""

#: Finished statuses, and the ``host_urls`` field counting their trimmed rows.
FINISHED_FIELD = {Status.DONE: "#done", Status.FAILED: "#failed", Status.EXCLUDED: "#excluded",
                  Status.REFUSED: "#refused"}

#: status (and fetch time) of rows of one tag. KEYS: urls; ARGV: status
#: byte, only-from status byte or '', fetched (8 bytes) or '', fingerprints.
#: Returns how many rows changed.
#: LPOP of a queue that a retried call cannot run twice: a time-out after
#: the server ran it would make the retry pop a second batch and lose the
#: first. The batch is kept under the call's id (KEYS[2], in the queue's
#: slot); the same id again returns it. KEYS: queue, last pop. ARGV: count, id.
POP_ONCE = """
if redis.call('HGET', KEYS[2], 'op') == ARGV[2] then
  return cmsgpack.unpack(redis.call('HGET', KEYS[2], 'items'))
end
local items = redis.call('LPOP', KEYS[1], ARGV[1]) or {}
redis.call('HSET', KEYS[2], 'op', ARGV[2], 'items', cmsgpack.pack(items))
return items
"""

#: HMGET of several hashes in one command, for a single Redis only (a
#: cluster's keys may sit in different slots): each client command costs the
#: crawler more CPU than the server's work. ARGV: per key, its field count,
#: then its fields. Returns one array of values per key.
MULTI_HMGET = """
local out, i = {}, 1
for k = 1, #KEYS do
  local n = tonumber(ARGV[i])
  out[k] = redis.call('HMGET', KEYS[k], unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return out
"""

#: HSET of several hashes in one command (a single Redis only). ARGV: per
#: key, its argument count (fields and values), then them.
MULTI_HSET = """
local i = 1
for k = 1, #KEYS do
  local n = tonumber(ARGV[i])
  redis.call('HSET', KEYS[k], unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return #KEYS
"""

#: Most arguments one MULTI_* script takes (Lua's unpack limit is ~8,000).
MULTI_LIMIT = 2000

SET_STATUS = """
local changed = 0
for i = 4, #ARGV do
  local row = redis.call('HGET', KEYS[1], ARGV[i])
  if row and (ARGV[2] == '' or string.sub(row, 1, 1) == ARGV[2]) then
    local fetched = ARGV[3]
    if fetched == '' then fetched = string.sub(row, 2, 9) end
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[1] .. fetched .. string.sub(row, 10))
    changed = changed + 1
  end
end
return changed
"""

_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")
_BAD_PREFIX = re.compile(r"[{}\s]")


def glob_escape(text: str) -> str:
    """``text`` as a literal in a SCAN MATCH pattern."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def tag_of(fingerprint: int) -> str:
    """The host tag of a fingerprint: its top 24 bits as six hex digits."""
    return f"{(fingerprint >> 40) & 0xFFFFFF:06x}"


def host_tag(host: str) -> str:
    """The tag of every fingerprint of ``host`` (and of its per-host keys)."""
    return f"{host_hash(host):06x}"


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
        self.held_origins = f"{prefix}:{{holds}}:origins"
        self.active = f"{prefix}:{{holds}}:active"
        self.queue_prefix = f"{prefix}:queue:"
        literal = glob_escape(prefix)
        self.urls_pattern = f"{literal}:{{*}}:urls"
        self.host_urls_pattern = f"{literal}:{{*}}:host_urls"
        self.bloom_pattern = f"{literal}:{{*}}:bloom"
        self.known = f"{prefix}:known"
        self.cash_pattern = f"{literal}:{{*}}:cash"
        self.queue_pattern = f"{glob_escape(self.queue_prefix)}*"
        self.back_pattern = f"{literal}:{{*}}:back:*"
        self.processes = f"{prefix}:processes"
        self.stats = f"{prefix}:stats"
        self.ledger = f"{prefix}:{{aopic}}:ledger"
        self.start_urls = f"{prefix}:start_urls"
        #: what deleting the crawl removes (SCHEDULER_PERSIST off, a flush)
        self.all_patterns = (f"{literal}:{{*}}:*", self.queue_pattern)
        self.singles = (self.meta, self.seq, self.hosts, self.crawl_delays, self.processes, self.stats,
                        self.known, self.deferrals)

    def urls(self, tag: str) -> str:
        return f"{self.prefix}:{{{tag}}}:urls"

    def host_urls(self, tag: str) -> str:
        return f"{self.prefix}:{{{tag}}}:host_urls"

    def cash(self, tag: str) -> str:
        return f"{self.prefix}:{{{tag}}}:cash"

    def groups(self, tag: str) -> str:
        return f"{self.prefix}:{{{tag}}}:groups"

    def bloom(self, tag: str) -> str:
        """The Bloom filter's shard for the slot of ``tag``."""
        return f"{self.prefix}:{{{shard_tag(tag)}}}:bloom"

    def lease(self, host: str) -> str:
        """A host's lease and politeness state (multi-process frontier)."""
        return f"{self.prefix}:{{{host_tag(host)}}}:lease:{host}"

    def back(self, host: str) -> str:
        """A host's shared back queue (multi-process frontier)."""
        return f"{self.prefix}:{{{host_tag(host)}}}:back:{host}"

    def inflight(self, host: str) -> str:
        """A host's URLs handed to a crawler process and not finished."""
        return f"{self.prefix}:{{{host_tag(host)}}}:inflight:{host}"

    def host_of_back(self, key: bytes | str) -> str:
        """The host of a :meth:`back` key."""
        key = key.decode() if isinstance(key, bytes) else key
        return key.split("}:back:", 1)[1]

    def host_heap(self, shard: int) -> str:
        """One shard of the shared host heap; shards carry tags of their own
        so that a Redis Cluster spreads them over its masters."""
        return f"{self.prefix}:{{heap-{shard}}}:heap"

    def queue(self, name: str) -> str:
        return self.queue_prefix + name

    def last_pop(self, name: str) -> str:
        """The last batch popped from queue ``name`` (see POP_ONCE): tagged
        with the queue key itself, so that both share a cluster slot."""
        return f"{self.prefix}:{{{self.queue(name)}}}:last_pop"

    def queue_name(self, key: bytes | str) -> str:
        key = key.decode() if isinstance(key, bytes) else key
        return key[len(self.queue_prefix):]


def _put(parts: list[bytes], value: bytes | None) -> None:
    if value is None:
        parts.append(_LENGTH.pack(-1))
    else:
        parts.append(_LENGTH.pack(len(value)))
        parts.append(value)


def _text(value: str | None) -> bytes | None:
    return None if value is None else value.encode(*_TEXT)


def pack_row(entry: Entry, status: Status, seq: int, fetched: float | None = None) -> bytes:
    parts = [_HEAD.pack(STATUS_BYTE[status], fetched or 0.0, seq, entry.level,
                        entry.priority, entry.depth, entry.flags)]
    for value in (_text(entry.url), _text(entry.host), _text(entry.referer), _text(entry.extra), entry.blob):
        _put(parts, value)
    return b"".join(parts)


def unpack_entry(fingerprint: int, row: bytes) -> Entry:
    _, _, _, level, priority, depth, flags = _HEAD.unpack_from(row)
    offset = _HEAD_SIZE
    values: list[bytes | None] = []
    for _ in range(5):
        (length,) = _LENGTH.unpack_from(row, offset)
        offset += 4
        if length < 0:
            values.append(None)
        else:
            values.append(row[offset:offset + length])
            offset += length
    url, host, referer, extra, blob = values
    return Entry(fingerprint, url.decode(*_TEXT), host.decode(*_TEXT),  # type: ignore[union-attr]
                 level, priority, depth, _str(referer), flags, _str(extra), blob)


def _str(value: bytes | None) -> str | None:
    return None if value is None else value.decode(*_TEXT)


def row_head(row: bytes) -> tuple[Status, float | None, int, int]:
    """``(status, fetched, seq, level)`` without decoding the entry."""
    status, fetched, seq, level = _HEAD.unpack_from(row)[:4]
    return _STATUS_OF_BYTE[status[0]], fetched or None, seq, level


def row_status(row: bytes) -> Status:
    return _STATUS_OF_BYTE[row[0]]


def fetched_bytes(now: float) -> bytes:
    """The 8 bytes :data:`SET_STATUS` writes as the fetch time."""
    return struct.pack(">d", now)


def pack_cash(cash: float, history: float, mark: float, visits: int) -> bytes:
    return _CASH.pack(cash, history, mark, visits)


def unpack_cash(value: bytes) -> tuple[float, float, float, int]:
    return _CASH.unpack(value)  # type: ignore[return-value]
