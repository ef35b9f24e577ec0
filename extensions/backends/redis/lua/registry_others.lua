-- How many processes other than ARGV[2] are alive, after removing it if
-- ARGV[3] is '1'. KEYS: processes [, closing fence]. ARGV: now, id, remove
-- [, fence TTL ms or '0']. With the fence key, another process's fence
-- counts as one process alive; and if none is alive and ARGV[4] is not
-- '0', the crawl is fenced closing for ARGV[2] (PX ARGV[4]; 0 returned).
--- @include "now"
local now = now_ms(ARGV[1])
if ARGV[3] == '1' then redis.call('ZREM', KEYS[1], ARGV[2]) end
local alive = redis.call('ZCOUNT', KEYS[1], now, '+inf')
local mine = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[2]) or '-1')
if mine >= now then alive = alive - 1 end
if KEYS[2] == nil then return alive end
local fence = redis.call('GET', KEYS[2])
if fence and fence ~= ARGV[2] and alive == 0 then return 1 end
if alive == 0 and ARGV[4] ~= '0' then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[4])
  return 0
end
return alive
