-- The idle close: if no process has been active for ARGV[2] ms, take every
-- held origin out of the hash. KEYS: origins, active. ARGV: now, idle ms.
-- Returns {origin, ms left, reason, ...} (empty while the crawl is active).
--- @include "hold_entries"
local now = now_ms(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[2]) or '')
if not last then redis.call('SET', KEYS[2], fmt(now)) return {} end
if now - last < tonumber(ARGV[2]) then return {} end
return entries(KEYS[1], now, true)
