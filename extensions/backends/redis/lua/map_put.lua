-- Set the values of fingerprints in fpmaps or hashmaps ($SET: fpmap_set of
-- include/fpmap.lua, row_set of include/rows.lua or hashmap_set of
-- include/hashmap.lua). KEYS: the
-- maps. ARGV: a bucket's size (fpmap: bytes; hashmap: fields), then per key
-- its argument count, then fingerprint (decimal) and value pairs. Returns
-- how many were new.
--- @include "hashmap"
--- @include "rows"
local new, i = 0, 2
for k = 1, #KEYS do
  local n = tonumber(ARGV[i])
  for j = i + 1, i + n, 2 do new = new + $SET(KEYS[k], ARGV[1], ARGV[j], ARGV[j + 1]) end
  i = i + n + 1
end
return new
