-- bloom_add(key, first_capacity, first_error, h1, h2, h3) adds one URL to the
-- Bloom shard at key: 1 if it was new, 0 if (probably) seen. The layer
-- arithmetic is BloomLayout.layer's (extensions/backends/redis/bloom.py).
local LN2 = math.log(2)
local function bloom_layer(j, c0, p0)
  local c, p = c0 * 2 ^ j, p0 / 2 ^ j
  local m = math.ceil(c * math.log(1 / p) / (LN2 * LN2))
  return c, m, math.ceil(math.log(1 / p) / LN2 - 1e-9)
end
local function bloom_probe(offset, m, h, i)
  return offset + (h[1] + i * h[2] + i * i * h[3]) % m
end
local function bloom_has(key, offset, m, k, h)
  for i = 0, k - 1 do
    if redis.call('GETBIT', key, bloom_probe(offset, m, h, i)) == 0 then return false end
  end
  return true
end
local function bloom_add(key, first_capacity, first_error, hash1, hash2, hash3)
  local c0, p0 = tonumber(first_capacity), tonumber(first_error)
  local h = {tonumber(hash1), tonumber(hash2), tonumber(hash3)}
  local n = redis.call('BITFIELD', key, 'GET', 'i64', 0)[1]
  local offset, total, j = 64, 0, 0
  local c, m, k = bloom_layer(0, c0, p0)
  while n >= total + c do
    local c2, m2, k2 = bloom_layer(j + 1, c0, p0)
    if offset + m + m2 > 4294967296 then break end
    if bloom_has(key, offset, m, k, h) then return 0 end
    offset, total, j = offset + m, total + c, j + 1
    c, m, k = c2, m2, k2
  end
  local sets = {}
  for i = 0, k - 1 do
    sets[#sets + 1] = 'SET'
    sets[#sets + 1] = 'u1'
    sets[#sets + 1] = bloom_probe(offset, m, h, i)
    sets[#sets + 1] = 1
  end
  for _, old in ipairs(redis.call('BITFIELD', key, unpack(sets))) do
    if old == 0 then
      redis.call('BITFIELD', key, 'INCRBY', 'i64', 0, 1)
      return 1
    end
  end
  return 0
end
