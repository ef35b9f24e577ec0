-- Add URLs to one host tag's exact URL-seen set. KEYS: the set. ARGV: its
-- kind ('fpset'), bucket size, '', then one member per URL. Returns 1 (new)
-- or 0 (seen) per URL.
--- @include "fpset"
local added = {}
for i = 4, #ARGV do added[#added + 1] = fpset_add(KEYS[1], ARGV[2], ARGV[i]) end
return added
