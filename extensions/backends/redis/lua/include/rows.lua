-- A URL row's parts: status byte, fetch time, host, present byte, numbers, URL (the layout and the $
-- values are extensions/backends/redis/rows.py's). Scripts change only status and fetch time.
local S_QUEUED, S_INFLIGHT, S_DONE, S_FAILED = '$S_QUEUED', '$S_INFLIGHT', '$S_DONE', '$S_FAILED'
local S_EXCLUDED, S_DEFERRED, S_REFUSED = '$S_EXCLUDED', '$S_DEFERRED', '$S_REFUSED'
-- A row never fetched has no fetch time: its status byte is the digit + $UNFETCHED.
local NEVER = string.rep('\0', $FETCHED_LAST - $STATUS_SIZE)
local function row_unfetched(row) return string.byte(row, 1) >= 48 + $UNFETCHED end
local function row_status(row)
  local byte = string.byte(row, 1)
  if byte >= 48 + $UNFETCHED then return string.char(byte - $UNFETCHED) end
  return string.sub(row, 1, $STATUS_SIZE)
end
local function row_fetched(row)
  if row_unfetched(row) then return NEVER end
  return string.sub(row, $FETCHED_FIRST, $FETCHED_LAST)
end
local function row_rest(row)
  if row_unfetched(row) then return string.sub(row, $STATUS_SIZE + 1) end
  return string.sub(row, $FETCHED_LAST + 1)
end
local function row_with(status, fetched, row)
  if fetched == NEVER then return string.char(string.byte(status) + $UNFETCHED) .. row_rest(row) end
  return status .. fetched .. row_rest(row)
end
local function row_with_status(row, status) return row_with(status, row_fetched(row), row) end
--- @include "fpmap"
-- the varint at (1-based) at, and the position after it
local function row_varint(row, at)
  local value, scale = 0, 1
  while true do
    local byte = string.byte(row, at)
    at = at + 1
    value = value + (byte % 128) * scale
    if byte < 128 then return value, at end
    scale = scale * 128
  end
end
-- A tag's rows are an fpmap (include/fpmap.lua): fp in decimal. A stored
-- row leaves its host field out when it is the tag's (field H of the map,
-- the host field of the first row stored): its status byte is then +
-- $ELIDED. Scripts see whole rows only: row_get puts the host back, row_put
-- takes it out.
local tag_hosts = {}
local function tag_host(urls)
  local host = tag_hosts[urls]
  if host == nil then
    host = redis.call('HGET', urls, 'H') or false
    tag_hosts[urls] = host
  end
  return host
end
local function host_first(byte)  -- where a whole row's host length is
  if byte >= 48 + $UNFETCHED then return $STATUS_SIZE + 1 end
  return $HOST_AT + 1
end
local function row_expand(urls, stored)
  if not stored then return nil end
  local byte = string.byte(stored, 1)
  if byte < 48 + $ELIDED then return stored end
  local first = host_first(byte - $ELIDED)
  return string.char(byte - $ELIDED) .. string.sub(stored, 2, first - 1) .. tag_host(urls) ..
    string.sub(stored, first)
end
local function row_compact(urls, row)
  local byte = string.byte(row, 1)
  local first = host_first(byte)
  local code, at = row_varint(row, first)
  local length = math.floor(code / 2)
  local host, tag = string.sub(row, first, at + length - 1), tag_host(urls)
  if not tag then
    redis.call('HSET', urls, 'H', host)
    tag_hosts[urls], tag = host, host
  end
  if host ~= tag then return row end
  return string.char(byte + $ELIDED) .. string.sub(row, 2, first - 1) .. string.sub(row, at + length)
end
local function row_get(urls, fp) return row_expand(urls, fpmap_get(urls, fp)) end
local function row_put(urls, fp, row) return fpmap_set(urls, $ROW_BUCKET_BYTES, fp, row_compact(urls, row)) end
local function row_add(urls, fp, row) return fpmap_add(urls, $ROW_BUCKET_BYTES, fp, row_compact(urls, row)) end
local function row_del(urls, fp)
  tag_hosts[urls] = nil  -- the map goes with its last row, H with it
  return fpmap_del(urls, fp)
end
local function row_set(urls, _, fp, row) return row_put(urls, fp, row) end  -- map_put's SET parameter
-- the host, the position after it, and the host with its port if the row has one
local function row_host(row)
  local first = $HOST_AT + 1
  if row_unfetched(row) then first = $STATUS_SIZE + 1 end
  local code, at = row_varint(row, first)
  local length = math.floor(code / 2)
  local netloc = string.sub(row, at, at + length - 1)
  if code % 2 == 1 then return string.match(netloc, '^(.*):%d*$'), at + length, netloc end
  return netloc, at + length, netloc
end
local URL_FORMS = {[0] = '', [1] = 'http://', [2] = 'https://'}
local function row_url(row)
  local _, at, host = row_host(row)
  local present = string.byte(row, at)  -- bit i: the i-th of seq, level, priority, depth, flags is there
  at = at + 1
  for _ = 1, 5 do
    if present % 2 == 1 then _, at = row_varint(row, at) end
    present = math.floor(present / 2)
  end
  local code, first = row_varint(row, at)
  local form, length = (code - 1) % 4, math.floor((code - 1) / 4)
  local kept = string.sub(row, first, first + length - 1)
  if form == 0 then return kept end
  return URL_FORMS[form] .. host .. kept
end
