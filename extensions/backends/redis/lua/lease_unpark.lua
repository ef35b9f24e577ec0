-- Every parked URL of a host back in its level's queue (its origin's hold
-- ended: it goes before the URLs found since, in the order it was parked).
-- KEYS: back. Returns {how many, head score}.
--- @include "backq"
local key = bq_key(KEYS[1], 'p')
local entries = redis.call('LRANGE', key, 0, -1)
for i = #entries, 1, -1 do
  local fp, level = string.match(entries[i], '^(%S+) (%S+)$')
  bq_push(KEYS[1], level, fp, true)
end
if #entries > 0 then
  redis.call('DEL', key)
  redis.call('HDEL', KEYS[1], 'p')
end
return {#entries, bq_head(KEYS[1])}
