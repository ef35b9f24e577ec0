-- nearmap: the records of the near-duplicate documents of one simhash
-- partition, packed (layout: extensions/backends/redis/nearindex.py). The
-- hash at key is an extendible hash table as fpset.lua's (field 'D' the
-- deepest bucket's depth, 'd:p' the bucket of the members whose top d bits
-- are p) whose buckets hold entries: a 7-byte member (the simhash's low 56
-- bits, big-endian), the value's length (a varint: 7 bits a byte, low first,
-- the high bit set on all but the last), the value (the records of the
-- documents with that simhash), in no order. A bucket past max bytes splits
-- in two on its next bit.
--- @include "fpset"
local NEAR_WIDTH = 7
-- the entry at (1-based) at: its value's first and last byte
local function near_entry(bucket, at)
  local length, scale, i = 0, 1, at + NEAR_WIDTH
  while true do
    local byte = string.byte(bucket, i)
    i = i + 1
    length = length + (byte % 128) * scale
    if byte < 128 then return i, i + length - 1 end
    scale = scale * 128
  end
end
local function near_length(n)
  local bytes = {}
  while n >= 128 do
    bytes[#bytes + 1] = string.char(128 + n % 128)
    n = math.floor(n / 128)
  end
  bytes[#bytes + 1] = string.char(n)
  return table.concat(bytes)
end
-- where member's entry is in bucket: its first byte, its value's first and
-- last (nil: absent). string.find proposes where the member occurs; a walk
-- over the entries' lengths confirms an entry starts there.
local function near_find(bucket, member)
  local at = 1
  local hit = string.find(bucket, member, 1, true)
  while hit do
    while at < hit do
      local _, last = near_entry(bucket, at)
      at = last + 1
    end
    if at == hit then
      local first, last = near_entry(bucket, at)
      return at, first, last
    end
    hit = string.find(bucket, member, hit + 1, true)
  end
  return nil
end
-- the records of member (nil: none)
local function near_get(key, member)
  local _, _, bucket = fpset_bucket(key, fp_top(member, 1))
  local at, first, last = near_find(bucket, member)
  if at then return string.sub(bucket, first, last) end
  return nil
end
local function near_split(key, field, d, bucket)
  local halves, at = {{}, {}}, 1
  while at <= #bucket do
    local _, last = near_entry(bucket, at)
    local half = halves[math.floor(fp_top(bucket, at) / 2 ^ (23 - d)) % 2 + 1]
    half[#half + 1] = string.sub(bucket, at, last)
    at = last + 1
  end
  fpset_store_halves(key, field, d, halves)
end
-- append record to member's records; the length of those it had (0: none)
local function near_append(key, max, member, record)
  local field, d, bucket = fpset_bucket(key, fp_top(member, 1))
  local at, first, last = near_find(bucket, member)
  local value, had = record, 0
  if at then
    had = last - first + 1
    value = string.sub(bucket, first, last) .. record
    bucket = string.sub(bucket, 1, at - 1) .. string.sub(bucket, last + 1)
  end
  bucket = bucket .. member .. near_length(#value) .. value
  if #bucket > tonumber(max) and d < 24 then
    near_split(key, field, d, bucket)
  else
    fpset_write(key, field, bucket)
  end
  return had
end
