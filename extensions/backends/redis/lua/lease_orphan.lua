-- Does a host have work and no live owner? KEYS: lease, back, inflight.
-- ARGV: now. Returns {1, ver, ms to next fetch} if so, else {0}.
--- @include "backq"
local now = now_ms(ARGV[1])
local st = redis.call('HMGET', KEYS[1], 'owner', 'expires', 'next', 'ver')
if st[1] and tonumber(st[2]) > now then return {0} end
if bq_len(KEYS[2]) + redis.call('ZCARD', KEYS[3]) == 0 then return {0} end
return {1, st[4] or '', math.max(0, (tonumber(st[3]) or 0) - now)}
