-- Hosts due on one heap shard. KEYS: heap. ARGV: now, limit. Returns
-- {hosts on the shard, now, {host, score, ...} due, earliest score}.
--- @include "now"
local now = now_ms(ARGV[1])
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
return {redis.call('ZCARD', KEYS[1]), now, due, head(KEYS[1])}
