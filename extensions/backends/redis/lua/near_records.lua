-- The records stored under simhashes of one partition. KEYS: the partition
-- (a nearmap); ARGV: the members (each simhash's low 56 bits, 7 bytes).
-- Returns per member its records, or false.
--- @include "nearmap"
local out = {}
for i = 1, #ARGV do out[i] = near_get(KEYS[1], ARGV[i]) or false end
return out
