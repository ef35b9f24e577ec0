-- Take up to ARGV[2] entries of one due shard with score <= ARGV[1], set
-- them to +inf; remember them under the caller (ARGV[3]) and call id
-- (ARGV[4]), so a retry of the same call returns the same entries.
-- KEYS: due shard, taken. Returns fingerprint, due, ...
local last = redis.call('HGET', KEYS[2], ARGV[3])
if last then
  last = cmsgpack.unpack(last)
  if last[1] == ARGV[4] then return last[2] end
end
local taken = redis.call('ZRANGE', KEYS[1], '-inf', ARGV[1], 'BYSCORE', 'LIMIT', 0, ARGV[2], 'WITHSCORES')
for i = 1, #taken, 2 do redis.call('ZADD', KEYS[1], '+inf', taken[i]) end
redis.call('HSET', KEYS[2], ARGV[3], cmsgpack.pack({ARGV[4], taken}))
return taken
