-- The listing is done, unless the host changed hands since lease_enqueue read
-- ver (its new owner or releaser then set listed). KEYS: lease. ARGV: ver.
local ver = redis.call('HGET', KEYS[1], 'ver') or ''
if ver == ARGV[1] then redis.call('HSET', KEYS[1], 'listed', '1') return 1 end
return 0
