-- Rows of one tag become done, failed or excluded in Bloom mode: deleted,
-- and counted under their status in host_urls. KEYS: urls, host_urls;
-- ARGV: the count's field (#done ...), only-from status byte or '',
-- fingerprints. Returns how many rows went.
--- @include "rows"
local trimmed = 0
for i = 3, #ARGV do
  local row = redis.call('HGET', KEYS[1], ARGV[i])
  if row and (ARGV[2] == '' or row_status(row) == ARGV[2]) then
    redis.call('HDEL', KEYS[1], ARGV[i])
    trimmed = trimmed + 1
  end
end
if trimmed > 0 then redis.call('HINCRBY', KEYS[2], ARGV[1], trimmed) end
return trimmed
