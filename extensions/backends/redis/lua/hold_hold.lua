-- An origin is held for ARGV[3] ms from now. KEYS: origins. ARGV: now,
-- origin, ms, reason.
--- @include "now"
redis.call('HSET', KEYS[1], ARGV[2], fmt(now_ms(ARGV[1]) + tonumber(ARGV[3])) .. ' ' .. ARGV[4])
return 1
