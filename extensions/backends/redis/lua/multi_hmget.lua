-- HMGET of several hashes in one command, for a single Redis only (a
-- cluster's keys may sit in different slots): each client command costs the
-- crawler more CPU than the server's work. ARGV: per key, its field count,
-- then its fields. Returns one array of values per key.
local out, i = {}, 1
for k = 1, #KEYS do
  local n = tonumber(ARGV[i])
  out[k] = redis.call('HMGET', KEYS[k], unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
return out
