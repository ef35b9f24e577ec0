-- hashmap: a value per fingerprint of one host tag in small Redis hashes
-- (layout: extensions/backends/redis/fpmap.py, HashMaps). The directory hash
-- at key holds 'D' (the deepest bucket's depth) and 'N' (how many values);
-- the bucket of the members whose top d bits are p is the hash key:d:p
-- (field: the 5-byte member; value: the value; the field '' keeps an emptied
-- bucket), and the first bucket (depth 0, every member) is the directory
-- itself, its members beside 'N': a small map is one key. A bucket past max
-- members splits in two on its next bit, so every bucket stays a listpack
-- (Redis' hash-max-listpack-entries, 128) and Redis itself finds, reads and
-- writes a value.
--- @include "fpmap"
-- per script: D, whether each bucket key exists and (#bucket) its field count
local function hashmap_dir(key)
  local cached = fpset_cache[key]
  if not cached then
    cached = {depth = tonumber(redis.call('HGET', key, 'D') or '0')}
    fpset_cache[key] = cached
  end
  return cached
end
-- the key of the bucket at depth d of a member's top 24 bits
local function hashmap_name(key, d, top)
  if d == 0 then return key end
  return key .. ':' .. d .. ':' .. math.floor(top / 2 ^ (24 - d))
end
-- the bucket key of a member's top 24 bits, its depth, and whether it exists
local function hashmap_bucket(key, top)
  local cached = hashmap_dir(key)
  for d = cached.depth, 0, -1 do
    local bucket = hashmap_name(key, d, top)
    local there = cached[bucket]
    if there == nil then
      there = redis.call('EXISTS', bucket) == 1
      cached[bucket] = there
    end
    if there then return bucket, d, true end
  end
  return key, 0, false
end
-- a member's value (nil: none): a value in a bucket of the deepest depth costs one HGET
local function hashmap_get_member(key, member)
  local cached, top = hashmap_dir(key), fp_top(member, 1)
  for d = cached.depth, 0, -1 do
    local bucket = hashmap_name(key, d, top)
    local there = cached[bucket]
    if there ~= false then
      local value = redis.call('HGET', bucket, member)
      if value then
        cached[bucket] = true
        return value
      end
      if there == nil then
        there = redis.call('EXISTS', bucket) == 1
        cached[bucket] = there
      end
      if there then return nil end
    end
  end
  return nil
end
local function hashmap_split(key, bucket, d, top)
  local halves = {{'', ''}, {'', ''}}
  local all = redis.call('HGETALL', bucket)
  local members = {}
  for i = 1, #all, 2 do
    if #all[i] == FP_WIDTH then  -- not '', nor the directory's D and N
      members[#members + 1] = all[i]
      local half = halves[math.floor(fp_top(all[i], 1) / 2 ^ (23 - d)) % 2 + 1]
      half[#half + 1] = all[i]
      half[#half + 1] = all[i + 1]
    end
  end
  local cached = hashmap_dir(key)
  if d == 0 then
    redis.call('HDEL', key, unpack(members))
  else
    redis.call('DEL', bucket)
  end
  cached[bucket] = false
  cached['#' .. bucket] = nil
  for b = 0, 1 do
    local name = hashmap_name(key, d + 1, top - top % 2 ^ (24 - d) + b * 2 ^ (23 - d))  -- bit d + 1 is b
    redis.call('HSET', name, unpack(halves[b + 1]))
    cached[name] = true
    cached['#' .. name] = #halves[b + 1] / 2
  end
  if d + 1 > cached.depth then
    redis.call('HSET', key, 'D', d + 1)
    cached.depth = d + 1
  end
end
-- set a member's value; 1 if it had none
local function hashmap_set_member(key, max, member, value)
  local top = fp_top(member, 1)
  local bucket, d, there = hashmap_bucket(key, top)
  if not there then
    if d > 0 then redis.call('HSET', bucket, '', '') end
    hashmap_dir(key)[bucket] = true
  end
  local new = redis.call('HSET', bucket, member, value)
  if new == 1 then
    redis.call('HINCRBY', key, 'N', 1)
    if d < 24 then  -- the bucket's field count, read once per script
      local cached = hashmap_dir(key)
      local size = cached['#' .. bucket]
      if size then size = size + 1 else size = redis.call('HLEN', bucket) - (d == 0 and 1 or 0) end  -- N beside the first bucket's members
      cached['#' .. bucket] = size
      if size > tonumber(max) then hashmap_split(key, bucket, d, top) end
    end
  end
  return new
end
-- the same by fingerprint (in decimal)
local function hashmap_get(key, fp) return hashmap_get_member(key, fp_member(fp)) end
local function hashmap_set(key, max, fp, value) return hashmap_set_member(key, max, fp_member(fp), value) end
