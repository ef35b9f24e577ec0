-- A process joins the crawl, alive until now + ARGV[3] ms, unless another
-- process's closing fence stands (it deletes the crawl's keys). KEYS:
-- processes, closing fence. ARGV: now, id, TTL ms. Returns {alive, ''}, or
-- {-1, the fence holder's id} when refused.
--- @include "now"
local fence = redis.call('GET', KEYS[2])
if fence and fence ~= ARGV[2] then return {-1, fence} end
local now = now_ms(ARGV[1])
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
return {redis.call('ZCOUNT', KEYS[1], now, '+inf'), ''}
