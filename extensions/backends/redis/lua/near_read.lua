-- The members of several near-duplicate table partitions with a given top
-- (a table key). KEYS: the partitions; ARGV: the member width (bytes), then
-- per key the top (a number below 2^24). Returns one string of members per key.
--- @include "fpset"
local out, width = {}, tonumber(ARGV[1])
for k = 1, #KEYS do out[k] = fpset_with_top(KEYS[k], tonumber(ARGV[k + 1]), width) end
return out
