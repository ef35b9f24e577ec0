-- A URL row's parts: status byte, fetch time, host, URL (the layout and the $
-- values are extensions/backends/redis/rows.py's). Scripts change only status and fetch time.
local S_QUEUED, S_INFLIGHT, S_DONE, S_FAILED = '$S_QUEUED', '$S_INFLIGHT', '$S_DONE', '$S_FAILED'
local S_EXCLUDED, S_DEFERRED, S_REFUSED = '$S_EXCLUDED', '$S_DEFERRED', '$S_REFUSED'
local function row_status(row) return string.sub(row, 1, $STATUS_SIZE) end
local function row_fetched(row) return string.sub(row, $FETCHED_FIRST, $FETCHED_LAST) end
local function row_rest(row) return string.sub(row, $FETCHED_LAST + 1) end
local function row_with_status(row, status) return status .. string.sub(row, $STATUS_SIZE + 1) end
local function row_with(status, fetched, row) return status .. fetched .. row_rest(row) end
-- A tag's rows are an fpmap (include/fpmap.lua): fp in decimal.
--- @include "fpmap"
local function row_get(urls, fp) return fpmap_get(urls, fp) end
local function row_put(urls, fp, row) return fpmap_set(urls, $ROW_BUCKET_BYTES, fp, row) end
local function row_add(urls, fp, row) return fpmap_add(urls, $ROW_BUCKET_BYTES, fp, row) end
local function row_del(urls, fp) return fpmap_del(urls, fp) end
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
-- the host, and the position after it
local function row_host(row)
  local length, at = row_varint(row, $HOST_AT + 1)
  return string.sub(row, at, at + length - 1), at + length
end
local URL_FORMS = {[0] = '', [1] = 'http://', [2] = 'https://'}
local function row_url(row)
  local host, at = row_host(row)
  for _ = 1, 5 do _, at = row_varint(row, at) end  -- seq, level, priority, depth, flags
  local code, first = row_varint(row, at)
  local form, length = (code - 1) % 4, math.floor((code - 1) / 4)
  local kept = string.sub(row, first, first + length - 1)
  if form == 0 then return kept end
  return URL_FORMS[form] .. host .. kept
end
