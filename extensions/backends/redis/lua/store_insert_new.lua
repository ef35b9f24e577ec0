-- Add-if-new of URL rows of one tag; counts each new row's host.
-- KEYS: urls, host_urls; ARGV: fingerprint, row, host per row.
-- With the Bloom filter (a row only for a URL new to it): KEYS: urls,
-- host_urls, Bloom shard; ARGV: first capacity, first error, then
-- fingerprint, row, host, h1, h2, h3 per row. Returns 1/0 per row.
--- @include "bloom"
local first, stride = rows_from(3, 1)
local added = {}
for i = first, #ARGV, stride do
  local new = 0
  if new_to_bloom(3, 1, i) then
    new = redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
    if new == 1 then redis.call('HINCRBY', KEYS[2], ARGV[i + 2], 1) end
  end
  added[#added + 1] = new
end
return added
