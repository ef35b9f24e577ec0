-- Put a host on its heap shard. KEYS: heap. ARGV: now, ms to wait, host,
-- a random fraction (so that a re-listing never repeats a score). Returns the score.
--- @include "now"
local score = fmt(now_ms(ARGV[1]) + tonumber(ARGV[2]) - tonumber(ARGV[4]))
redis.call('ZADD', KEYS[1], score, ARGV[3])
return score
