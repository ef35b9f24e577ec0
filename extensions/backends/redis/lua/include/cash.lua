-- A cash row as {cash, history, mark, visits} in a tag's cash hashmap (format:
-- extensions/backends/redis/rows.py: a row never fetched, history and visits
-- zero, keeps cash and mark only); fp in decimal.
--- @include "hashmap"
local function get(map, fp)
  local packed = hashmap_get(map, fp)
  if not packed then return nil end
  if #packed == $CASH_SHORT_SIZE then
    local c, m = struct.unpack('$CASH_SHORT_FORMAT', packed)
    return {c, 0, m, 0}
  end
  local c, h, m, v = struct.unpack('$CASH_FORMAT', packed)
  return {c, h, m, v}
end
local function put(map, fp, c, h, m, v)
  if h == 0 and v == 0 then
    hashmap_set(map, $CASH_BUCKET_FIELDS, fp, struct.pack('$CASH_SHORT_FORMAT', c, m))
  else
    hashmap_set(map, $CASH_BUCKET_FIELDS, fp, struct.pack('$CASH_FORMAT', c, h, m, v))
  end
end
