-- Append a document's record to those stored under its simhash. KEYS: the
-- documents' partition; ARGV: the simhash field (8 bytes), the record.
local v = redis.call('HGET', KEYS[1], ARGV[1]) or ''
redis.call('HSET', KEYS[1], ARGV[1], v .. ARGV[2])
return #v
