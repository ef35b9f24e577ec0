-- The values of fingerprints in fpmaps or hashmaps ($GET: fpmap_get of
-- include/fpmap.lua, row_get of include/rows.lua or hashmap_get of
-- include/hashmap.lua). KEYS: the maps.
-- ARGV: per key, its fingerprint count, then the fingerprints (decimal).
-- Returns one array per key: the value or false per fingerprint.
--- @include "hashmap"
--- @include "rows"
local out, i = {}, 1
for k = 1, #KEYS do
  local n, values = tonumber(ARGV[i]), {}
  for j = i + 1, i + n do values[#values + 1] = $GET(KEYS[k], ARGV[j]) or false end
  out[k] = values
  i = i + n + 1
end
return out
