"""The Redis store's server-side scripts (the host leases' are in
:mod:`extensions.backends.redis.lease_scripts`, the process registry's in
:mod:`extensions.backends.redis.registry`).

Every script is registered with :func:`~extensions.backends.redis.connection.script`:
a connection loads them once and calls them by SHA. Scripts read and change
URL rows only through :data:`~extensions.backends.redis.rows.ROW_LUA`, so the
row layout is written down once (:mod:`extensions.backends.redis.rows`). Every
multi-key script touches keys of a single slot, as Redis Cluster requires
(a tag's keys, and the Bloom shard of its slot).

Trimming (Bloom mode): once the filter is the URL-seen set, a row is needed
only while its URL is queued or in flight, so :data:`TRIM` deletes the rows
that become done, failed or excluded and counts them in ``host_urls``
(``#done`` ...), which :meth:`~extensions.backends.redis.store.RedisStore.count_by_status`
adds to the rows.
"""

from __future__ import annotations

from extensions.backends.redis.bloom import BLOOM_ADD_FN
from extensions.backends.redis.connection import script
from extensions.backends.redis.rows import ROW_LUA
from extensions.frontier.store import Status

#: Server time in ms (or the test clock's, given as ARGV), number formatting,
#: a sorted set's head score, and a host's in-flight URLs back to its queue.
NOW_LUA = ROW_LUA + """
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
    if row and row_status(row) == S_INFLIGHT then
      redis.call('HSET', urls, taken[i], row_with_status(row, S_QUEUED))
    end
  end
  redis.call('DEL', inflight)
  return #taken / 2
end
"""

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
INSERT_NEW = script(_INSERT_NEW.replace("$FIRST", "1").replace("$STRIDE", "3").replace("$FRESH", "true"))

#: the same, a row only for a URL new to the Bloom filter. KEYS: urls,
#: host_urls, Bloom shard; ARGV: first capacity, first error, then
#: fingerprint, row, host, h1, h2, h3 per row.
INSERT_NEW_BLOOM = script(BLOOM_ADD_FN + _INSERT_NEW.replace("$FIRST", "3").replace("$STRIDE", "6").replace(
    "$FRESH", "bloom_add(KEYS[3], ARGV[1], ARGV[2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]) == 1"))

_REQUEUE = """
local old = redis.call('HGET', KEYS[1], ARGV[1])
local row = ARGV[2]
if old then
  row = row_with(row_status(row), row_fetched(old), row)
else
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
end
redis.call('HSET', KEYS[1], ARGV[1], row)
return 1
"""

#: insert or overwrite one row as queued, keeping its last fetch time.
#: KEYS: urls, host_urls; ARGV: fingerprint, row, host.
REQUEUE = script(ROW_LUA + _REQUEUE)

#: the same, and the URL into the Bloom filter. KEYS: urls, host_urls, Bloom
#: shard; ARGV: fingerprint, row, host, first capacity, first error, h1, h2, h3.
REQUEUE_BLOOM = script(ROW_LUA + BLOOM_ADD_FN
                       + "bloom_add(KEYS[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8])" + _REQUEUE)

#: rows of one tag become done, failed or excluded in Bloom mode: deleted,
#: and counted under their status in ``host_urls``. KEYS: urls, host_urls;
#: ARGV: the count's field (``#done`` ...), only-from status byte or '',
#: fingerprints. Returns how many rows went.
TRIM = script(ROW_LUA + """
local trimmed = 0
for i = 3, #ARGV do
  local row = redis.call('HGET', KEYS[1], ARGV[i])
  if row and (ARGV[2] == '' or row_status(row) == ARGV[2]) then
    redis.call('HDEL', KEYS[1], ARGV[i])
    trimmed = trimmed + 1
  end
end
if trimmed > 0 then redis.call('HINCRBY', KEYS[2], ARGV[1], trimmed) end
return trimmed
""")

#: Finished statuses, and the ``host_urls`` field counting their trimmed rows.
FINISHED_FIELD = {Status.DONE: "#done", Status.FAILED: "#failed", Status.EXCLUDED: "#excluded",
                  Status.REFUSED: "#refused"}

#: status (and fetch time) of rows of one tag. KEYS: urls; ARGV: status
#: byte, only-from status byte or '', fetched (8 bytes) or '', fingerprints.
#: Returns how many rows changed.
SET_STATUS = script(ROW_LUA + """
local changed = 0
for i = 4, #ARGV do
  local row = redis.call('HGET', KEYS[1], ARGV[i])
  if row and (ARGV[2] == '' or row_status(row) == ARGV[2]) then
    local fetched = ARGV[3]
    if fetched == '' then fetched = row_fetched(row) end
    redis.call('HSET', KEYS[1], ARGV[i], row_with(ARGV[1], fetched, row))
    changed = changed + 1
  end
end
return changed
""")

#: LPOP of a queue that a retried call cannot run twice: a time-out after
#: the server ran it would make the retry pop a second batch and lose the
#: first. The batch is kept under the call's id (KEYS[2], in the queue's
#: slot); the same id again returns it. KEYS: queue, last pop. ARGV: count, id.
POP_ONCE = script("""
if redis.call('HGET', KEYS[2], 'op') == ARGV[2] then
  return cmsgpack.unpack(redis.call('HGET', KEYS[2], 'items'))
end
local items = redis.call('LPOP', KEYS[1], ARGV[1]) or {}
redis.call('HSET', KEYS[2], 'op', ARGV[2], 'items', cmsgpack.pack(items))
return items
""")

#: HMGET of several hashes in one command, for a single Redis only (a
#: cluster's keys may sit in different slots): each client command costs the
#: crawler more CPU than the server's work. ARGV: per key, its field count,
#: then its fields. Returns one array of values per key.
MULTI_HMGET = script("""
local out, i = {}, 1
for k = 1, #KEYS do
  local n = tonumber(ARGV[i])
  out[k] = redis.call('HMGET', KEYS[k], unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return out
""")

#: HSET of several hashes in one command (a single Redis only). ARGV: per
#: key, its argument count (fields and values), then them.
MULTI_HSET = script("""
local i = 1
for k = 1, #KEYS do
  local n = tonumber(ARGV[i])
  redis.call('HSET', KEYS[k], unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return #KEYS
""")

#: Most arguments one MULTI_* script takes (Lua's unpack limit is ~8,000).
MULTI_LIMIT = 2000
