-- fpset_add(key, max, member): adds a URL to the exact URL-seen set of its
-- host tag: 1 if it was new, 0 if seen. The set is the hash at key (one per
-- tag, in the tag's slot), an extendible hash table (Fagin et al. 1979):
-- field 'D' is the deepest bucket's depth; field 'd:p' is the bucket of the
-- members whose top d bits are p, a string of sorted 5-byte members (the
-- fingerprint's 40 bits below its host tag, big-endian). A bucket past max
-- members splits in two on its next bit. Layout: extensions/backends/redis/fpset.py.
local FP_WIDTH = 5
local function fp_value(s, at)
  local a, b, c, d, e = string.byte(s, at, at + 4)
  return (((a * 256 + b) * 256 + c) * 256 + d) * 256 + e
end
local function fp_top(s, at)  -- the top 24 bits, which name the bucket
  local a, b, c = string.byte(s, at, at + 2)
  return (a * 256 + b) * 256 + c
end
local function fpset_bucket(key, top)
  local depth = tonumber(redis.call('HGET', key, 'D') or '0')
  for d = depth, 0, -1 do
    local field = d .. ':' .. math.floor(top / 2 ^ (24 - d))
    local bucket = redis.call('HGET', key, field)
    if bucket then return field, d, bucket end
  end
  return '0:0', 0, ''
end
-- the index (0-based, in members) at which member belongs in bucket, and whether it is there
local function fp_search(bucket, value)
  local lo, hi = 0, #bucket / FP_WIDTH
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local at = fp_value(bucket, mid * FP_WIDTH + 1)
    if at == value then return mid, true end
    if at < value then lo = mid + 1 else hi = mid end
  end
  return lo, false
end
local function fpset_split(key, field, d, bucket)
  local prefix = tonumber(string.sub(field, #tostring(d) + 2))
  local halves = {{}, {}}
  for at = 1, #bucket, FP_WIDTH do
    local side = math.floor(fp_top(bucket, at) / 2 ^ (23 - d)) % 2 + 1
    local half = halves[side]
    half[#half + 1] = string.sub(bucket, at, at + FP_WIDTH - 1)
  end
  redis.call('HDEL', key, field)
  redis.call('HSET', key, (d + 1) .. ':' .. (prefix * 2), table.concat(halves[1]),
             (d + 1) .. ':' .. (prefix * 2 + 1), table.concat(halves[2]))
  if d + 1 > tonumber(redis.call('HGET', key, 'D') or '0') then redis.call('HSET', key, 'D', d + 1) end
end
local function fpset_add(key, max, member)
  local field, d, bucket = fpset_bucket(key, fp_top(member, 1))
  local index, found = fp_search(bucket, fp_value(member, 1))
  if found then return 0 end
  local cut = index * FP_WIDTH
  bucket = string.sub(bucket, 1, cut) .. member .. string.sub(bucket, cut + 1)
  if #bucket / FP_WIDTH > tonumber(max) and d < 24 then
    fpset_split(key, field, d, bucket)
  else
    redis.call('HSET', key, field, bucket)
  end
  return 1
end
local function fpset_has(key, member)
  local _, _, bucket = fpset_bucket(key, fp_top(member, 1))
  local _, found = fp_search(bucket, fp_value(member, 1))
  return found
end
