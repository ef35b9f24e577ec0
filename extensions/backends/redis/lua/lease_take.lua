-- The best queued URL of a host we hold whose origin is not held, into
-- its in-flight set; extends the lease (still ours: nobody acquired it, even
-- if it lapsed). A held origin's URL met on the way is parked: moved behind
-- every unparked URL of the queue (parked_score), so the host's other
-- origins keep their turns; in the parked tail it is looked at and left
-- where it was. KEYS: lease, back, inflight, urls, cash. ARGV: now, me, most
-- entries to pass over (stale or held), TTL ms, then the held origins of
-- the host. Returns {-1} (lease lost), {0, skipped, parked} (queue empty),
-- {2, skipped, parked, back-queue length, head score} (only stale or held
-- entries so far, more to look at), {3, skipped, parked, back-queue length,
-- head score} (only held origins' URLs are queued), or {1, fingerprint,
-- row, back-queue length, head score, skipped, AOPIC cash row or false,
-- parked} (the cash row saves the dispatch a round trip: same hash tag).
--- @include "rows"
--- @include "hashmap"
--- @include "now"
local now = now_ms(ARGV[1])
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return {-1} end
redis.call('HSET', KEYS[1], 'expires', now + tonumber(ARGV[4]))
local skipped, parked, kept = 0, 0, {}
local held, holding = {}, #ARGV >= 5
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
end
for _ = 1, tonumber(ARGV[3]) do
  local popped = redis.call('ZPOPMIN', KEYS[2])
  if #popped == 0 then break end
  local row = row_get(KEYS[4], popped[1])
  if not row or row_status(row) ~= S_QUEUED then
    skipped = skipped + 1
  elseif holding and held[origin_of(row)] then
    local score = tonumber(popped[2])
    if score < $PARK_FLOOR then
      redis.call('ZADD', KEYS[2], fmt(score + $PARKED), popped[1])
      parked = parked + 1
    else
      kept[#kept + 1] = popped[2]; kept[#kept + 1] = popped[1]
    end
  else
    restore()
    row_put(KEYS[4], popped[1], row_with_status(row, S_INFLIGHT))
    redis.call('ZADD', KEYS[3], popped[2], popped[1])
    return {1, popped[1], row, redis.call('ZCARD', KEYS[2]), head(KEYS[2]), skipped,
            hashmap_get(KEYS[5], popped[1]) or false, parked}
  end
end
restore()
local queued = redis.call('ZCARD', KEYS[2])
if queued == 0 then return {0, skipped, parked} end
if #kept > 0 then return {3, skipped, parked, queued, head(KEYS[2])} end
return {2, skipped, parked, queued, head(KEYS[2])}
