-- LPOP of a queue that a retried call cannot run twice: a time-out after
-- the server ran it would make the retry pop a second batch and lose the
-- first. The batch is kept under the call's id (KEYS[2], in the queue's
-- slot); the same id again returns it. KEYS: queue, last pop. ARGV: count, id.
if redis.call('HGET', KEYS[2], 'op') == ARGV[2] then
  return cmsgpack.unpack(redis.call('HGET', KEYS[2], 'items'))
end
local items = redis.call('LPOP', KEYS[1], ARGV[1]) or {}
redis.call('HSET', KEYS[2], 'op', ARGV[2], 'items', cmsgpack.pack(items))
return items
