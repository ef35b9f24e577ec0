-- Take a host nobody holds (or whose lease expired: its in-flight URLs go
-- back to the queue). KEYS: lease, back, inflight, urls. ARGV: now, me, TTL
-- ms. Returns {0, expires} if another process holds it; {2, recovered} if
-- it has no work (it leaves the heap: listed cleared); else {1, expires,
-- ms to next fetch, back-queue length, head score, recovered, 1 if it was
-- taken over from a lapsed lease}.
--- @include "now"
--- @include "requeue_inflight"
local now = now_ms(ARGV[1])
local st = redis.call('HMGET', KEYS[1], 'owner', 'expires', 'next')
if st[1] and tonumber(st[2]) > now then return {0, tonumber(st[2])} end
local lapsed = 0
if st[1] then lapsed = 1 end
local recovered = requeue_inflight(KEYS[3], KEYS[2], KEYS[4])
redis.call('HINCRBY', KEYS[1], 'ver', 1)
local queued = bq_len(KEYS[2])
if queued == 0 then
  redis.call('HDEL', KEYS[1], 'owner', 'expires')
  redis.call('HSET', KEYS[1], 'listed', '0')
  return {2, recovered}
end
local expires = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'expires', expires, 'listed', '1')
local wait = math.max(0, (tonumber(st[3]) or 0) - now)
return {1, expires, wait, queued, bq_head(KEYS[2]), recovered, lapsed}
