-- Add-if-new of URL rows of one tag; counts each new row's host.
-- KEYS: urls, host_urls; ARGV: fingerprint, row, host per row.
-- With a URL-seen set (a row only for a URL new to it): KEYS: urls,
-- host_urls, the set; ARGV: the set's kind and two parameters, then
-- fingerprint, row, host and the set's own per row (include/seen.lua).
-- Returns 1/0 per row.
--- @include "rows"
--- @include "seen"
local first, stride = rows_from(3, 1)
local added = {}
for i = first, #ARGV, stride do
  local new = 0
  if new_to_seen(3, 1, i) then
    new = row_add(KEYS[1], ARGV[i], ARGV[i + 1])
    if new == 1 then redis.call('HINCRBY', KEYS[2], ARGV[i + 2], 1) end
  end
  added[#added + 1] = new
end
return added
