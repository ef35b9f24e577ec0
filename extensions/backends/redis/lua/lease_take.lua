-- The best queued URL of a host we hold whose origin is not held, into
-- its in-flight set; extends the lease (still ours: nobody acquired it, even
-- if it lapsed). A held origin's URL met on the way is parked (include/backq.lua),
-- so the host's other origins keep their turns; once only parked URLs are
-- left, the first whose origin is no longer held is taken. KEYS: lease,
-- back, inflight, urls, cash. ARGV: now, me, most entries to pass over
-- (stale or held), TTL ms, then the held origins of the host. Returns {-1}
-- (lease lost), {0, skipped, parked} (queue empty), {2, skipped, parked,
-- back-queue length, head score} (only stale or held entries so far, more to
-- look at), {3, skipped, parked, back-queue length, head score} (only held
-- origins' URLs are queued), {4, skipped, parked, back-queue length, head
-- score} (the window is empty, its tail is not: refill it, include/tail.lua),
-- or {1, fingerprint, row, back-queue length, head score, skipped, AOPIC
-- cash row or false, parked, URLs in the tail} (the cash row saves the
-- dispatch a round trip: same hash tag).
--- @include "rows"
--- @include "hashmap"
--- @include "backq"
local now = now_ms(ARGV[1])
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return {-1} end
redis.call('HSET', KEYS[1], 'expires', now + tonumber(ARGV[4]))
local skipped, parked, looked, most = 0, 0, 0, tonumber(ARGV[3])
local held, holding = {}, #ARGV >= 5
for i = 5, #ARGV do held[ARGV[i]] = true end
local function origin_of(row)
  local url = row_url(row)
  if not url then return '' end
  local scheme, netloc = string.match(url, '^(%a[%w+%.%-]*)://([^/?#]*)')
  if not scheme then return '' end
  return string.lower(scheme) .. '://' .. netloc
end
local function take(fp, row, level)
  row_put(KEYS[4], fp, row_with_status(row, S_INFLIGHT))
  redis.call('ZADD', KEYS[3], level, fp)
  local top, waiting, queued, tail = bq_state(KEYS[2])
  return {1, fp, row, queued, bq_head_of(top, waiting, tail), skipped, hashmap_get(KEYS[5], fp) or false, parked,
          tail}
end
local top, waiting, queued, tail = bq_state(KEYS[2])
while top and looked < most do
  looked = looked + 1
  local fp, left = bq_pop(KEYS[2], top)
  local row = fp and row_get(KEYS[4], fp)
  if fp and (not row or row_status(row) ~= S_QUEUED) then
    skipped = skipped + 1
  elseif fp and holding and held[origin_of(row)] then
    bq_park(KEYS[2], top, fp)
    parked = parked + 1
  elseif fp then
    return take(fp, row, top)
  end
  if left <= 0 then top, waiting, queued, tail = bq_state(KEYS[2]) end
end
if not top and tail > 0 then return {4, skipped, parked, queued, bq_head_of(top, waiting, tail)} end
local all_held = false
if not top and waiting > 0 and looked < most then
  -- only parked URLs: the first whose origin is no longer held (else: held)
  all_held = true
  local entries = redis.call('LRANGE', bq_key(KEYS[2], 'p'), 0, most - looked - 1)
  for _, entry in ipairs(entries) do
    local fp, level = string.match(entry, '^(%S+) (%S+)$')
    local row = row_get(KEYS[4], fp)
    if not row or row_status(row) ~= S_QUEUED then
      bq_unpark_one(KEYS[2], entry)
      skipped = skipped + 1
    elseif not (holding and held[origin_of(row)]) then
      bq_unpark_one(KEYS[2], entry)
      return take(fp, row, tonumber(level))
    end
  end
end
top, waiting, queued, tail = bq_state(KEYS[2])
if queued == 0 then return {0, skipped, parked} end
if not top and all_held then return {3, skipped, parked, queued, bq_head_of(top, waiting, tail)} end
return {2, skipped, parked, queued, bq_head_of(top, waiting, tail)}
