-- A process is alive until now + ARGV[3] ms; its closing fence, if it holds
-- one, lasts ARGV[4] ms more. KEYS: processes, closing fence. ARGV: now
-- ('' for the server's clock), id, TTL ms, fence TTL ms. Returns how many
-- are alive.
--- @include "now"
local now = now_ms(ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[2] then redis.call('PEXPIRE', KEYS[2], ARGV[4]) end
return redis.call('ZCOUNT', KEYS[1], now, '+inf')
