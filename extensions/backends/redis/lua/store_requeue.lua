-- Insert or overwrite one row as queued, keeping its last fetch time.
-- KEYS: urls, host_urls; ARGV: fingerprint, row, host. With the Bloom
-- filter, the URL goes into it too (a later enqueue must find it seen):
-- KEYS: urls, host_urls, Bloom shard; ARGV: then first capacity, first
-- error, h1, h2, h3.
--- @include "rows"
--- @include "bloom"
if #KEYS == 3 then bloom_add(KEYS[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], ARGV[8]) end
local old = redis.call('HGET', KEYS[1], ARGV[1])
local row = ARGV[2]
if old then
  row = row_with(row_status(row), row_fetched(old), row)
else
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
end
redis.call('HSET', KEYS[1], ARGV[1], row)
return 1
