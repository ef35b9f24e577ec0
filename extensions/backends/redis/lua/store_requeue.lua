-- Insert or overwrite one row as queued, keeping its last fetch time.
-- KEYS: urls, host_urls; ARGV: fingerprint, row, host. With a URL-seen
-- set, the URL goes into it too (a later enqueue must find it seen):
-- KEYS: urls, host_urls, the set; ARGV: then the set's kind and two
-- parameters and its own (include/seen.lua).
--- @include "rows"
--- @include "seen"
if #KEYS == 3 then seen_add(3, 4, 7) end
local old = row_get(KEYS[1], ARGV[1])
local row = ARGV[2]
if old then
  row = row_with(row_status(row), row_fetched(old), row)
else
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
end
row_put(KEYS[1], ARGV[1], row)
return 1
