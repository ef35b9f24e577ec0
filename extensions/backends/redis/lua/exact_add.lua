-- Record a page's URL under its content fingerprint unless one is there.
-- KEYS: the fingerprint's partition (a nearmap); ARGV: a bucket's size
-- (bytes before a split), the member (the fingerprint's low 56 bits, 7
-- bytes), the URL. Returns the URL recorded first, or false when it was this one.
--- @include "nearmap"
local first = near_get(KEYS[1], ARGV[2])
if first then return first end
near_append(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
return false
