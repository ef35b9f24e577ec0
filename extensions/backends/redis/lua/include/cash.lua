-- A cash row as {cash, history, mark, visits} (format: extensions/backends/redis/rows.py).
local function get(hash, fp)
  local packed = redis.call('HGET', hash, fp)
  if not packed then return nil end
  local c, h, m, v = struct.unpack('$CASH_FORMAT', packed)
  return {c, h, m, v}
end
local function put(hash, fp, c, h, m, v)
  redis.call('HSET', hash, fp, struct.pack('$CASH_FORMAT', c, h, m, v))
end
