-- How many processes other than ARGV[2] are alive, after removing it if
-- ARGV[3] is '1'. KEYS: processes [, closing fence]. ARGV: now, id, remove
-- [, fence TTL ms]. With the fence key: if none is, the crawl is fenced
-- closing for ARGV[2] (PX ARGV[4]) and 0 returned; a fence of another
-- process counts as one process alive.
--- @include "now"
local now = now_ms(ARGV[1])
if ARGV[3] == '1' then redis.call('ZREM', KEYS[1], ARGV[2]) end
local alive = redis.call('ZCOUNT', KEYS[1], now, '+inf')
local mine = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]) or '-1')
if mine >= now then alive = alive - 1 end
if alive > 0 or KEYS[2] == nil then return alive end
local fence = redis.call('GET', KEYS[2])
if fence and fence ~= ARGV[2] then return 1 end
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])
return 0
