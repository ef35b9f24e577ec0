-- Set the values of fingerprints in fpmaps (include/fpmap.lua). KEYS: the
-- maps. ARGV: a bucket's most bytes, then per key its argument count, then
-- fingerprint (decimal) and value pairs. Returns how many were new.
--- @include "fpmap"
local new, i = 0, 2
for k = 1, #KEYS do
  local n = tonumber(ARGV[i])
  for j = i + 1, i + n, 2 do new = new + fpmap_set(KEYS[k], ARGV[1], ARGV[j], ARGV[j + 1]) end
  i = i + n + 1
end
return new
