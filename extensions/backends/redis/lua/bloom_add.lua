-- Add URLs to one Bloom shard. KEYS: shard. ARGV: first capacity, first
-- error, then h1, h2, h3 per URL. Returns 1 (new) or 0 (seen) per URL.
--- @include "bloom"
local added = {}
for i = 3, #ARGV, 3 do
  added[#added + 1] = bloom_add(KEYS[1], ARGV[1], ARGV[2], ARGV[i], ARGV[i + 1], ARGV[i + 2])
end
return added
