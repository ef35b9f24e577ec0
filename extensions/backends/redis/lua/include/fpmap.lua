-- fpmap: a value per fingerprint of one host tag, packed (layout:
-- extensions/backends/redis/fpmap.py). An extendible hash table as
-- fpset.lua's (the string key:d:p the bucket of the members whose top d bits
-- are p, field 'D' of the hash at key the deepest bucket's depth) whose
-- buckets hold records: a 5-byte member, the value's length (a varint: 7
-- bits a byte, low first, the high bit set on all but the last), the value,
-- in no order; the hash's field 'N' counts the records, and the map goes
-- with its last record. A bucket past max bytes splits in two on its next bit.
--- @include "fpset"
-- the member of a fingerprint given in decimal (signed 64-bit): its low 40
-- bits, big-endian. Exact in doubles: the digits above the last 12 are
-- below 10^8, times 5^12 below 2^53, and 10^12 = 5^12 * 2^12.
local fpmap_members = {}
local function fp_member(fp)
  local member = fpmap_members[fp]
  if member then return member end
  local negative = string.byte(fp, 1) == 45  -- '-'
  local digits = negative and string.sub(fp, 2) or fp
  local high = tonumber(string.sub(digits, 1, -13)) or 0
  local low = ((high * 244140625) % 268435456 * 4096 + tonumber(string.sub(digits, -12))) % 1099511627776
  if negative then low = (1099511627776 - low) % 1099511627776 end
  local b1 = math.floor(low / 4294967296)
  low = low - b1 * 4294967296
  member = string.char(b1, math.floor(low / 16777216), math.floor(low / 65536) % 256,
                       math.floor(low / 256) % 256, low % 256)
  fpmap_members[fp] = member
  return member
end
-- the record at (1-based) at, its member width bytes (5 unless given): its value's first and last byte
local function fpmap_record(bucket, at, width)
  local length, scale, i = 0, 1, at + (width or 5)
  while true do
    local byte = string.byte(bucket, i)
    i = i + 1
    length = length + (byte % 128) * scale
    if byte < 128 then return i, i + length - 1 end
    scale = scale * 128
  end
end
local function fpmap_length(n)
  local bytes = {}
  while n >= 128 do
    bytes[#bytes + 1] = string.char(128 + n % 128)
    n = math.floor(n / 128)
  end
  bytes[#bytes + 1] = string.char(n)
  return table.concat(bytes)
end
-- where member's record is in bucket (records of members as wide as it):
-- its first byte, its value's first and last (nil: absent). string.find
-- proposes where the member occurs; a walk over the records' lengths (one
-- byte each below 128) confirms a record starts there. The last answer is
-- kept (a read then a write of one row).
local found_bucket, found_member, found_at, found_first, found_last
local function fpmap_find(bucket, member)
  if found_bucket == bucket and found_member == member then return found_at, found_first, found_last end
  local at, width = 1, #member
  local hit = string.find(bucket, member, 1, true)
  while hit do
    while at < hit do
      local length = string.byte(bucket, at + width)
      if length < 128 then at = at + width + 1 + length else local _, last = fpmap_record(bucket, at, width) at = last + 1 end
    end
    if at == hit then
      local first, last = fpmap_record(bucket, at, width)
      found_bucket, found_member, found_at, found_first, found_last = bucket, member, at, first, last
      return at, first, last
    end
    hit = string.find(bucket, member, hit + 1, true)
  end
  return nil
end
local function fpmap_get(key, fp)
  local member = fp_member(fp)
  local _, _, bucket = fpset_bucket(key, fp_top(member, 1))
  local at, first, last = fpmap_find(bucket, member)
  if at then return string.sub(bucket, first, last) end
  return nil
end
-- a bucket past its size in two on its next bit (members width bytes, 5 unless given)
local function fpmap_split(key, field, d, bucket, width)
  local halves, at = {{}, {}}, 1
  while at <= #bucket do
    local _, last = fpmap_record(bucket, at, width)
    local half = halves[math.floor(fp_top(bucket, at) / 2 ^ (23 - d)) % 2 + 1]
    half[#half + 1] = string.sub(bucket, at, last)
    at = last + 1
  end
  fpset_store_halves(key, field, d, halves)
end
-- set fp's value (only if it has none, with only_new); 1 if it had none
local function fpmap_put(key, max, fp, value, only_new)
  local member = fp_member(fp)
  local field, d, bucket = fpset_bucket(key, fp_top(member, 1))
  local at, _, last = fpmap_find(bucket, member)
  if at and only_new then return 0 end
  local record, new = member .. fpmap_length(#value) .. value, 0
  if at then
    bucket = string.sub(bucket, 1, at - 1) .. record .. string.sub(bucket, last + 1)
  else
    bucket, new = bucket .. record, 1
    redis.call('HINCRBY', key, 'N', 1)
  end
  if #bucket > tonumber(max) and d < 24 then
    fpmap_split(key, field, d, bucket)
  else
    fpset_write(key, field, bucket)
  end
  return new
end
local function fpmap_set(key, max, fp, value) return fpmap_put(key, max, fp, value, false) end
local function fpmap_add(key, max, fp, value) return fpmap_put(key, max, fp, value, true) end
-- delete fp's value; 1 if it had one (an emptied bucket stays, as '')
local function fpmap_del(key, fp)
  local member = fp_member(fp)
  local field, _, bucket = fpset_bucket(key, fp_top(member, 1))
  local at, _, last = fpmap_find(bucket, member)
  if not at then return 0 end
  if redis.call('HINCRBY', key, 'N', -1) <= 0 then
    fpset_delete(key)
  else
    fpset_write(key, field, string.sub(bucket, 1, at - 1) .. string.sub(bucket, last + 1))
  end
  return 1
end
