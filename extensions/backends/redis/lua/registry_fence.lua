-- The closing fence's holder renews it (ARGV[2] ms) or, with '0', lifts it.
-- KEYS: closing fence. ARGV: id, TTL ms or '0'. Returns 1 if ARGV[1] held
-- it, else 0 (nothing changed).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if ARGV[2] == '0' then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 1
