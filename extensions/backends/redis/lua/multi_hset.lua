-- HSET of several hashes in one command (a single Redis only). ARGV: per
-- key, its argument count (fields and values), then them.
local i = 1
for k = 1, #KEYS do
  local n = tonumber(ARGV[i])
  redis.call('HSET', KEYS[k], unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return #KEYS
