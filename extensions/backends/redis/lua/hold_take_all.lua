-- A hash's entries, and the hash deleted (one taker). KEYS: the hash.
local found = redis.call('HGETALL', KEYS[1])
redis.call('DEL', KEYS[1])
return found
