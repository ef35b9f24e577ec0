-- The members of several near-duplicate table partitions that share a
-- simhash's table key, read before the simhash's own member is added to
-- each partition (a no-op where it is: an identical simhash). KEYS: the
-- partitions; ARGV: the bucket size (members before a split; 0: read only,
-- add nothing), the member width (bytes), then per key the simhash's member
-- (the table key's bits below the partition, left-aligned in 3 bytes, then
-- the simhash's other bits). Returns one string of members per key.
--- @include "fpset"
local out, max, width = {}, tonumber(ARGV[1]), tonumber(ARGV[2])
for k = 1, #KEYS do
  local member = ARGV[k + 2]
  out[k] = fpset_with_top(KEYS[k], fp_top(member, 1), width)
  if max > 0 then fpset_add_width(KEYS[k], max, member, width) end
end
return out
