"""The host leases' server-side scripts (see :mod:`extensions.backends.redis.leases`
for what they do together, and :mod:`extensions.backends.redis.keys` for the keys).

Each is registered with :func:`~extensions.backends.redis.connection.script`
(loaded once per connection, called by SHA) and reads URL rows only through
:data:`~extensions.backends.redis.rows.ROW_LUA`. Back-queue scores: higher
front-queue level first, then discovery order
(:func:`extensions.backends.redis.leases.queue_score`); a held
origin's URL is *parked* ``PARKED`` above its place, behind every URL not
parked.
"""

from __future__ import annotations

from extensions.backends.redis.bloom import BLOOM_ADD_FN
from extensions.backends.redis.connection import script
from extensions.backends.redis.rows import ROW_LUA
from extensions.backends.redis.scripts import NOW_LUA

LEVEL_SPAN = float(1 << 40)  # discovery numbers stay below this
# A parked URL (its origin held) is scored PARKED above its place, behind
# every unparked URL: exact in a double while levels stay below MAX_LEVELS.
PARKED = 1 << 52
PARK_FLOOR = 1 << 51
MAX_LEVELS = 2048

_ENQUEUE = NOW_LUA + """
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
    redis.call('HSET', KEYS[1], ARGV[i], row_with(row_status(row), row_fetched(old), row))
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
ENQUEUE = script(_ENQUEUE.replace("$FIRST", "5").replace("$STRIDE", "3").replace("$FRESH", "true"))

#: The same with the URL-seen Bloom filter (the URL is new if the filter
#: says so; a forced one is added to it too). KEYS: as ENQUEUE's, then the
#: Bloom shard. ARGV: now, me, force, host, first capacity, first error,
#: then fingerprint, row, score, h1, h2, h3 per URL.
ENQUEUE_BLOOM = script(BLOOM_ADD_FN + _ENQUEUE.replace("$FIRST", "7").replace("$STRIDE", "6").replace(
    "$FRESH", "bloom_add(KEYS[6], ARGV[5], ARGV[6], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5]) == 1"))

#: Put a host on its heap shard. KEYS: heap. ARGV: now, ms to wait, host,
#: a random fraction (so that a re-listing never repeats a score). Returns the score.
LIST = script(NOW_LUA + """
local score = fmt(now_ms(ARGV[1]) + tonumber(ARGV[2]) - tonumber(ARGV[4]))
redis.call('ZADD', KEYS[1], score, ARGV[3])
return score
""")

#: The listing is done, unless the host changed hands since ENQUEUE read
#: ``ver`` (its new owner or releaser then set ``listed``). KEYS: lease. ARGV: ver.
CONFIRM = script("""
local ver = redis.call('HGET', KEYS[1], 'ver') or ''
if ver == ARGV[1] then redis.call('HSET', KEYS[1], 'listed', '1') return 1 end
return 0
""")

#: Remove a host from the heap only if its score is still the one seen.
#: KEYS: heap. ARGV: host, score.
DELIST_IF = script("""
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then return redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0
""")

#: Hosts due on one heap shard. KEYS: heap. ARGV: now, limit. Returns
#: {hosts on the shard, now, {host, score, ...} due, earliest score}.
POLL = script(NOW_LUA + """
local now = now_ms(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
return {redis.call('ZCARD', KEYS[1]), now, due, head(KEYS[1])}
""")

#: Take a host nobody holds (or whose lease expired: its in-flight URLs go
#: back to the queue). KEYS: lease, back, inflight, urls. ARGV: now, me, TTL
#: ms. Returns {0, expires} if another process holds it; {2, recovered} if
#: it has no work (it leaves the heap: ``listed`` cleared); else {1, expires,
#: ms to next fetch, back-queue length, head score, recovered, 1 if it was
#: taken over from a lapsed lease}.
ACQUIRE = script(NOW_LUA + """
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
""")

_TAKE = NOW_LUA + """
local now = now_ms(ARGV[1])
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return {-1} end
redis.call('HSET', KEYS[1], 'expires', now + tonumber(ARGV[4]))
local skipped, parked, kept = 0, 0, {}
$SETUP
for _ = 1, tonumber(ARGV[3]) do
  local popped = redis.call('ZPOPMIN', KEYS[2])
  if #popped == 0 then break end
  local row = redis.call('HGET', KEYS[4], popped[1])
  if not row or row_status(row) ~= S_QUEUED then
    skipped = skipped + 1
  $PARK
  else
    $RESTORE
    redis.call('HSET', KEYS[4], popped[1], row_with_status(row, S_INFLIGHT))
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
TAKE = script(_TAKE.replace("$SETUP", "").replace("$PARK", "").replace("$RESTORE", ""))

#: :data:`TAKE` for a host with held origins (ARGV from the fifth on): the
#: held origins' URLs it meets are parked, or, in the parked tail, looked at
#: and left where they were.
TAKE_HELD = script(_TAKE.replace("$SETUP", """
local held = {}
for i = 5, #ARGV do held[ARGV[i]] = true end
local function origin_of(row)
  local url = row_url(row)
  if not url then return '' end
  local scheme, netloc = string.match(url, '^(%a[%w+%.%-]*)://([^/?#]*)')
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
    end""").replace("$RESTORE", "restore()").replace(
    "$PARK_FLOOR", "%d" % PARK_FLOOR).replace("$PARKED", "%d" % PARKED))

#: Every parked URL of a host back in its place (its origin's hold ended:
#: it goes before the URLs found since, as its level and discovery order
#: say). KEYS: back. Returns {how many, head score}.
UNPARK = script(NOW_LUA + """
local found = redis.call('ZRANGEBYSCORE', KEYS[1], '$PARK_FLOOR', '+inf', 'WITHSCORES')
for i = 1, #found, 2 do redis.call('ZADD', KEYS[1], fmt(tonumber(found[i + 1]) - $PARKED), found[i]) end
return {#found / 2, head(KEYS[1])}
""".replace("$PARK_FLOOR", "%d" % PARK_FLOOR).replace("$PARKED", "%d" % PARKED))

#: Whether another process took the host over from us (its ACQUIRE put
#: our in-flight URLs back in the queue: they are no longer ours to move).
_TAKEN_OVER = ROW_LUA + """
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
FINISH = script(_TAKEN_OVER + """
local guard = S_INFLIGHT
if taken_over(KEYS[3], ARGV[4]) then
  if ARGV[1] == '' or redis.call('ZREM', KEYS[4], ARGV[3]) == 0 then return 0 end
  guard = S_QUEUED
else
  redis.call('ZREM', KEYS[1], ARGV[3])
end
if ARGV[1] ~= '' then
  local row = redis.call('HGET', KEYS[2], ARGV[3])
  if row and row_status(row) == guard then
    local fetched = ARGV[2]
    if fetched == '' then fetched = row_fetched(row) end
    redis.call('HSET', KEYS[2], ARGV[3], row_with(ARGV[1], fetched, row))
  end
end
return 1
""")

#: The same in Bloom mode: a finished row goes, counted under its status in
#: ``host_urls`` (see extensions/backends/redis/keys.py). KEYS: inflight, urls,
#: host_urls, lease, back. ARGV: the count's field (``#done`` ...; '' keeps
#: the row), fingerprint, me.
FINISH_TRIM = script(_TAKEN_OVER + """
local guard = S_INFLIGHT
if taken_over(KEYS[4], ARGV[3]) then
  if ARGV[1] == '' or redis.call('ZREM', KEYS[5], ARGV[2]) == 0 then return 0 end
  guard = S_QUEUED
else
  redis.call('ZREM', KEYS[1], ARGV[2])
end
if ARGV[1] ~= '' then
  local row = redis.call('HGET', KEYS[2], ARGV[2])
  if row and row_status(row) == guard then
    redis.call('HDEL', KEYS[2], ARGV[2])
    redis.call('HINCRBY', KEYS[3], ARGV[1], 1)
  end
end
return 1
""")

#: A handed-out URL goes back to its host's queue (postponed), unless the
#: host was taken over meanwhile (its ACQUIRE did that already; the URL may
#: be in the new owner's hands). KEYS: inflight, urls, back, lease. ARGV:
#: fingerprint, score, me.
PUT_BACK = script(_TAKEN_OVER + """
if taken_over(KEYS[4], ARGV[3]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
local row = redis.call('HGET', KEYS[2], ARGV[1])
if row and row_status(row) == S_INFLIGHT then redis.call('HSET', KEYS[2], ARGV[1], row_with_status(row, S_QUEUED)) end
return 1
""")

#: Give a held host back, writing its politeness state. KEYS: lease, back,
#: inflight, urls. ARGV: now, me, ms to next fetch, idle only ('1': keep it
#: if it has work). Returns {-1} (not ours), {0, back-queue length, head
#: score} (kept: it has work), {1} (released, no work: off the heap) or
#: {2, next fetch score} (released with work: back on the heap at that time).
RELEASE = script(NOW_LUA + """
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
""")

#: Extend a held lease and record the politeness state. KEYS: lease. ARGV:
#: now, me, TTL ms, ms to next fetch. Returns the new expiry, -1 if not ours.
RENEW = script(NOW_LUA + """
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return -1 end
local now = now_ms(ARGV[1])
local expires = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'expires', expires, 'next', now + tonumber(ARGV[4]))
return expires
""")

#: Does a host have work and no live owner? KEYS: lease, back, inflight.
#: ARGV: now. Returns {1, ver, ms to next fetch} if so, else {0}.
ORPHAN = script(NOW_LUA + """
local now = now_ms(ARGV[1])
local st = redis.call('HMGET', KEYS[1], 'owner', 'expires', 'next', 'ver')
if st[1] and tonumber(st[2]) > now then return {0} end
if redis.call('ZCARD', KEYS[2]) + redis.call('ZCARD', KEYS[3]) == 0 then return {0} end
return {1, st[4] or '', math.max(0, (tonumber(st[3]) or 0) - now)}
""")

