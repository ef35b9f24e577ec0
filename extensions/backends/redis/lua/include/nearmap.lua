-- nearmap: the records of the near-duplicate documents of one simhash
-- partition, packed (layout: extensions/backends/redis/nearindex.py): an
-- extendible hash table as fpset.lua's (the string key:d:p the bucket of
-- the members whose top d bits are p, field 'D' of the hash at key the
-- deepest bucket's depth) whose buckets hold entries: a 7-byte member (the simhash's low 56
-- bits, big-endian), the value's length (a varint: 7 bits a byte, low first,
-- the high bit set on all but the last), the value (the records of the
-- documents with that simhash), in no order. A bucket past max bytes splits
-- in two on its next bit.
--- @include "fpmap"
local NEAR_WIDTH = 7
-- the records of member (nil: none)
local function near_get(key, member)
  local _, _, bucket = fpset_bucket(key, fp_top(member, 1))
  local at, first, last = fpmap_find(bucket, member)
  if at then return string.sub(bucket, first, last) end
  return nil
end
-- append record to member's records; the length of those it had (0: none)
local function near_append(key, max, member, record)
  local field, d, bucket = fpset_bucket(key, fp_top(member, 1))
  local at, first, last = fpmap_find(bucket, member)
  local value, had = record, 0
  if at then
    had = last - first + 1
    value = string.sub(bucket, first, last) .. record
    bucket = string.sub(bucket, 1, at - 1) .. string.sub(bucket, last + 1)
  end
  bucket = bucket .. member .. fpmap_length(#value) .. value
  if #bucket > tonumber(max) and d < 24 then
    fpmap_split(key, field, d, bucket, NEAR_WIDTH)
  else
    fpset_write(key, field, bucket)
  end
  return had
end
