-- Append a simhash to one field of each of several table partitions unless
-- already there. KEYS: the partitions (one, on a cluster: they sit in
-- different slots); ARGV: per key, its field and the simhash (8 bytes).
-- Returns how many were added.
local added = 0
for k = 1, #KEYS do
  local field, packed = ARGV[2 * k - 1], ARGV[2 * k]
  local v = redis.call('HGET', KEYS[k], field)
  local present = false
  if v then
    for j = 1, #v, 8 do
      if string.sub(v, j, j + 7) == packed then present = true break end
    end
  end
  if not present then
    redis.call('HSET', KEYS[k], field, (v or '') .. packed)
    added = added + 1
  end
end
return added
