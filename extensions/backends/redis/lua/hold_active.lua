-- Some process has work no hold keeps back now. KEYS: active. ARGV: now.
--- @include "now"
local now = now_ms(ARGV[1])
if now > tonumber(redis.call('GET', KEYS[1]) or '0') then redis.call('SET', KEYS[1], fmt(now)) end
return 1
