-- Add a simhash to one bucket of each of several near-duplicate table
-- partitions. KEYS: the partitions (one, on a cluster: they sit in
-- different slots); ARGV: the bucket size (members before a split), the
-- member width (bytes), then per key its member (the table key's bits below
-- the partition, left-aligned in 3 bytes, then the simhash's other bits).
-- Returns how many were new.
--- @include "fpset"
local added, width = 0, tonumber(ARGV[2])
for k = 1, #KEYS do added = added + fpset_add_width(KEYS[k], ARGV[1], ARGV[k + 2], width) end
return added
