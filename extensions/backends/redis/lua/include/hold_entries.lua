-- The holds of a hash origin -> "until reason" still running at now, as
-- {origin, ms left, reason, ...}; ended ones (every one, with take) deleted.
--- @include "now"
local function entries(key, now, take)
  local found, out = redis.call('HGETALL', key), {}
  for i = 1, #found, 2 do
    local until_ms, reason = string.match(found[i + 1], '^(%S+) (.*)$')
    local left = (tonumber(until_ms) or 0) - now
    if left > 0 then
      out[#out + 1] = found[i]; out[#out + 1] = fmt(left); out[#out + 1] = reason
    end
    if left <= 0 or take then redis.call('HDEL', key, found[i]) end
  end
  return out
end
