-- A cash row as {u, history, visits} in a tag's cash hashmap, u its cash
-- settled at dividend 0 (its cash at dividend D is u + D; format:
-- extensions/backends/redis/rows.py). Rows are written settled: u alone
-- in single precision (4 bytes; cash_put answers what rounding took, for
-- Lambda) until fetched, then u, history, visits (24). By member (5
-- bytes, fpmap.py's).
--- @include "hashmap"
local function cash_get(map, member)
  local packed = hashmap_get_member(map, member)
  if not packed then return nil end
  if #packed == $CASH_CREDITED_SIZE then
    return {struct.unpack('$CASH_CREDITED_FORMAT', packed), 0, 0}
  end
  local u, h, v = struct.unpack('$CASH_SETTLED_FORMAT', packed)
  return {u, h, v}
end
-- (answers the cash rounding took: u minus the u kept)
local function cash_put(map, member, u, h, v)
  if h == 0 and v == 0 then
    local packed = struct.pack('$CASH_CREDITED_FORMAT', u)
    hashmap_set_member(map, $CASH_BUCKET_FIELDS, member, packed)
    return u - struct.unpack('$CASH_CREDITED_FORMAT', packed)
  end
  hashmap_set_member(map, $CASH_BUCKET_FIELDS, member, struct.pack('$CASH_SETTLED_FORMAT', u, h, v))
  return 0
end
