-- A cash row as {cash, history, mark, visits} in a tag's cash hashmap (format:
-- extensions/backends/redis/rows.py: a row never fetched, history and visits
-- zero, keeps cash and mark only): by member (5 bytes, fpmap.py's) with
-- cash_get and cash_put, by fingerprint in decimal with get and put.
--- @include "hashmap"
local function cash_get(map, member)
  local packed = hashmap_get_member(map, member)
  if not packed then return nil end
  if #packed == $CASH_SHORT_SIZE then
    local c, m = struct.unpack('$CASH_SHORT_FORMAT', packed)
    return {c, 0, m, 0}
  end
  local c, h, m, v = struct.unpack('$CASH_FORMAT', packed)
  return {c, h, m, v}
end
local function cash_put(map, member, c, h, m, v)
  if h == 0 and v == 0 then
    hashmap_set_member(map, $CASH_BUCKET_FIELDS, member, struct.pack('$CASH_SHORT_FORMAT', c, m))
  else
    hashmap_set_member(map, $CASH_BUCKET_FIELDS, member, struct.pack('$CASH_FORMAT', c, h, m, v))
  end
end
local function get(map, fp) return cash_get(map, fp_member(fp)) end
local function put(map, fp, c, h, m, v) return cash_put(map, fp_member(fp), c, h, m, v) end
