-- How many processes other than ARGV[2] are alive, after removing it if
-- ARGV[3] is '1'. KEYS: processes. ARGV: now, id, remove.
--- @include "now"
local now = now_ms(ARGV[1])
if ARGV[3] == '1' then redis.call('ZREM', KEYS[1], ARGV[2]) end
local alive = redis.call('ZCOUNT', KEYS[1], now, '+inf')
local mine = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]) or '-1')
if mine >= now then alive = alive - 1 end
return alive
