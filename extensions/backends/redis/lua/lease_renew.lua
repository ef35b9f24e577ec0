-- Extend a held lease and record the politeness state. KEYS: lease. ARGV:
-- now, me, TTL ms, ms to next fetch. Returns the new expiry, -1 if not ours.
--- @include "now"
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[2] then return -1 end
local now = now_ms(ARGV[1])
local expires = now + tonumber(ARGV[3])
redis.call('HSET', KEYS[1], 'expires', expires, 'next', now + tonumber(ARGV[4]))
return expires
