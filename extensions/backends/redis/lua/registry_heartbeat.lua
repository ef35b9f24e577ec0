-- A process is alive until now + ARGV[3] ms. KEYS: processes. ARGV: now
-- ('' for the server's clock), id, TTL ms. Returns how many are alive.
--- @include "now"
local now = now_ms(ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
return redis.call('ZCOUNT', KEYS[1], now, '+inf')
