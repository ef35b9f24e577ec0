-- Give a held host back, writing its politeness state. KEYS: lease, back,
-- inflight, urls. ARGV: now, me, ms to next fetch, idle only ('1': keep it
-- if it has work). Returns {-1} (not ours), {0, back-queue length, head
-- score} (kept: it has work), {1} (released, no work: off the heap) or
-- {2, next fetch score} (released with work: back on the heap at that time).
--- @include "now"
--- @include "requeue_inflight"
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return {-1} end
local now = now_ms(ARGV[1])
local next = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'next', next)
local queued = bq_len(KEYS[2])
if ARGV[4] == '1' and queued + redis.call('ZCARD', KEYS[3]) > 0 then
  return {0, queued, bq_head(KEYS[2])}
end
requeue_inflight(KEYS[3], KEYS[2], KEYS[4])
redis.call('HDEL', KEYS[1], 'owner', 'expires')
redis.call('HINCRBY', KEYS[1], 'ver', 1)
if bq_len(KEYS[2]) == 0 then
  redis.call('HSET', KEYS[1], 'listed', '0')
  return {1}
end
return {2, fmt(next)}
