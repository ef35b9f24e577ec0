-- count_finished(key, field, row, fetched): a finished row about to go, counted
-- in its tag's host_urls hash (key): under field (#done ...), and a done one
-- under HOST#done too; a fetched one (fetched: 8 bytes, else the row's time)
-- in #fetched, #first and #last, and its host's HOST#last (see keys.py).
--- @include "rows"
local function keep_extreme(key, field, t, larger)
  local old = tonumber(redis.call('HGET', key, field))
  if not old or (larger and t > old) or (not larger and t < old) then
    redis.call('HSET', key, field, string.format('%.6f', t))
  end
end
local function count_finished(key, field, row, fetched)
  redis.call('HINCRBY', key, field, 1)
  local host = row_host(row)
  if host and field == '#done' then redis.call('HINCRBY', key, host .. '#done', 1) end
  if fetched == nil or fetched == '' then fetched = row_fetched(row) end
  local t = struct.unpack('>d', fetched)
  if t > 0 then
    redis.call('HINCRBY', key, '#fetched', 1)
    keep_extreme(key, '#first', t, false)
    keep_extreme(key, '#last', t, true)
    if host then keep_extreme(key, host .. '#last', t, true) end
  end
end
