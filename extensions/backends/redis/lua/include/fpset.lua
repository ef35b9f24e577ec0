-- fpset_add(key, max, member): adds a URL to the exact URL-seen set of its
-- host tag: 1 if it was new, 0 if seen. The set is an extendible hash table
-- (Fagin et al. 1979) of one host tag, in the tag's slot: the string
-- key:d:p is the bucket of the members whose top d bits are p, a string of
-- sorted 5-byte members (the fingerprint's 40 bits below its host tag,
-- big-endian); the hash at key holds 'D', the deepest bucket's depth, once
-- the first bucket split (a small set is one string, a small map one
-- listpack hash and one string). A bucket past max members splits in two
-- on its next bit. Layout: extensions/backends/redis/fpset.py.
-- fpset_add_width takes members of width bytes (at least 3: the top 3 name
-- the bucket), for other sets of fixed-width members (the near-duplicate tables: extensions/backends/redis/nearindex.py).
local FP_WIDTH = 5
local function fp_top(s, at)  -- the top 24 bits, which name the bucket
  local a, b, c = string.byte(s, at, at + 2)
  return (a * 256 + b) * 256 + c
end
-- The buckets a script has read or written, per key ({depth = D, [field] =
-- bucket or false}): a script reads a bucket from Redis once. Every write to
-- a set's or map's buckets goes through fpset_write (or clears the key's entry).
local fpset_cache = {}
local function fpset_cached(key)
  local cached = fpset_cache[key]
  if not cached then  -- a set never split has one bucket, 0:0, and no D: one read
    local first = redis.call('GET', key .. ':0:0')
    if first then
      cached = {depth = 0, ['0:0'] = first}
    else
      cached = {depth = tonumber(redis.call('HGET', key, 'D') or '0')}
    end
    fpset_cache[key] = cached
  end
  return cached
end
local function fpset_write(key, field, bucket)
  redis.call('SET', key .. ':' .. field, bucket)
  fpset_cached(key)[field] = bucket
end
local function fpset_bucket(key, top)
  local cached = fpset_cached(key)
  for d = cached.depth, 0, -1 do
    local field = d .. ':' .. math.floor(top / 2 ^ (24 - d))
    local bucket = cached[field]
    if bucket == nil then
      bucket = redis.call('GET', key .. ':' .. field) or false
      cached[field] = bucket
    end
    if bucket then return field, d, bucket end
  end
  return '0:0', 0, ''
end
-- delete a map: its directory and every bucket (under the one at depth d, prefix p)
local function fpset_delete(key, d, p)
  d, p = d or 0, p or 0
  local cached = fpset_cached(key)
  if redis.call('DEL', key .. ':' .. d .. ':' .. p) == 0 and d < cached.depth then
    fpset_delete(key, d + 1, p * 2)
    fpset_delete(key, d + 1, p * 2 + 1)
  end
  if d == 0 then
    redis.call('DEL', key)
    fpset_cache[key] = nil
  end
end
-- the member of width bytes (at most 11) at s[at] as three numbers that
-- compare in its order: its top 3 bytes, the next 5, the rest
local function fp_numbers(s, at, width)
  local a, b, c, d, e, f, g, h = string.byte(s, at, at + width - 1)
  local rest = 0
  if d then rest = d end
  if e then rest = rest * 256 + e end
  if f then rest = rest * 256 + f end
  if g then rest = rest * 256 + g end
  if h then rest = rest * 256 + h end
  local tail = 0
  if width > 8 then
    local i, j, k = string.byte(s, at + 8, at + width - 1)
    tail = ((i or 0) * 256 + (j or 0)) * 256 + (k or 0)
  end
  return (a * 256 + b) * 256 + c, rest, tail
end
-- the index (0-based, in members) at which probe belongs in bucket, and
-- whether it is there (members compared by their top 3 bytes first: the rest only on a tie)
local function fp_search(bucket, probe, width)
  local lo, hi = 0, #bucket / width
  local top, rest, tail = fp_top(probe, 1), nil, nil
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local at = mid * width + 1
    local t = fp_top(bucket, at)
    if t == top then
      if not rest then rest, tail = select(2, fp_numbers(probe, 1, width)) end
      local _, r, l = fp_numbers(bucket, at, width)
      if r == rest and l == tail then return mid, true end
      if r < rest or (r == rest and l < tail) then lo = mid + 1 else hi = mid end
    elseif t < top then
      lo = mid + 1
    else
      hi = mid
    end
  end
  return lo, false
end
-- replace bucket ``field`` (depth d) by its two halves (lists of records, by the next bit)
local function fpset_store_halves(key, field, d, halves)
  local prefix = tonumber(string.sub(field, #tostring(d) + 2))
  local cached = fpset_cached(key)
  redis.call('DEL', key .. ':' .. field)
  cached[field] = false
  fpset_write(key, (d + 1) .. ':' .. (prefix * 2), table.concat(halves[1]))
  fpset_write(key, (d + 1) .. ':' .. (prefix * 2 + 1), table.concat(halves[2]))
  if d + 1 > cached.depth then
    redis.call('HSET', key, 'D', d + 1)
    cached.depth = d + 1
  end
end
local function fpset_split(key, field, d, bucket, width)
  local halves = {{}, {}}
  for at = 1, #bucket, width do
    local half = halves[math.floor(fp_top(bucket, at) / 2 ^ (23 - d)) % 2 + 1]
    half[#half + 1] = string.sub(bucket, at, at + width - 1)
  end
  fpset_store_halves(key, field, d, halves)
end
local function fpset_add_width(key, max, member, width)
  local field, d, bucket = fpset_bucket(key, fp_top(member, 1))
  local index, found = fp_search(bucket, member, width)
  if found then return 0 end
  local cut = index * width
  bucket = string.sub(bucket, 1, cut) .. member .. string.sub(bucket, cut + 1)
  if #bucket / width > tonumber(max) and d < 24 then
    fpset_split(key, field, d, bucket, width)
  else
    fpset_write(key, field, bucket)
  end
  return 1
end
local function fpset_add(key, max, member)
  return fpset_add_width(key, max, member, FP_WIDTH)
end
local function fpset_has(key, member)
  local _, _, bucket = fpset_bucket(key, fp_top(member, 1))
  local _, found = fp_search(bucket, member, FP_WIDTH)
  return found
end
-- the members of width bytes whose top 24 bits are top, as one string
local function fpset_with_top(key, top, width)
  local _, _, bucket = fpset_bucket(key, top)
  local first, last = 0, #bucket / width
  while first < last do  -- the first member whose top is not below top
    local mid = math.floor((first + last) / 2)
    if fp_top(bucket, mid * width + 1) < top then first = mid + 1 else last = mid end
  end
  while last * width < #bucket and fp_top(bucket, last * width + 1) == top do last = last + 1 end
  return string.sub(bucket, first * width + 1, last * width)
end
