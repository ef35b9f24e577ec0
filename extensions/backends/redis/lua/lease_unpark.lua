-- Every parked URL of a host back in its place (its origin's hold ended:
-- it goes before the URLs found since, as its level and discovery order
-- say). KEYS: back. Returns {how many, head score}.
--- @include "now"
local found = redis.call('ZRANGEBYSCORE', KEYS[1], '$PARK_FLOOR', '+inf', 'WITHSCORES')
for i = 1, #found, 2 do redis.call('ZADD', KEYS[1], fmt(tonumber(found[i + 1]) - $PARKED), found[i]) end
return {#found / 2, head(KEYS[1])}
