-- A URL row's parts: status byte, fetch time, URL (the layout and the $ values
-- are extensions/backends/redis/rows.py's). Scripts change only status and fetch time.
local S_QUEUED, S_INFLIGHT, S_DONE, S_FAILED = '$S_QUEUED', '$S_INFLIGHT', '$S_DONE', '$S_FAILED'
local S_EXCLUDED, S_DEFERRED, S_REFUSED = '$S_EXCLUDED', '$S_DEFERRED', '$S_REFUSED'
local function row_status(row) return string.sub(row, 1, $STATUS_SIZE) end
local function row_fetched(row) return string.sub(row, $FETCHED_FIRST, $FETCHED_LAST) end
local function row_rest(row) return string.sub(row, $FETCHED_LAST + 1) end
local function row_with_status(row, status) return status .. string.sub(row, $STATUS_SIZE + 1) end
local function row_with(status, fetched, row) return status .. fetched .. row_rest(row) end
local function row_url(row)
  local length = struct.unpack('>i4', row, $URL_AT + 1)
  if length < 0 then return nil end
  return string.sub(row, $URL_AT + 5, $URL_AT + 4 + length)
end
local function row_host(row)
  local url_length = struct.unpack('>i4', row, $URL_AT + 1)
  local at = $URL_AT + 5 + math.max(0, url_length)
  local length = struct.unpack('>i4', row, at)
  if length < 0 then return nil end
  return string.sub(row, at + 4, at + 3 + length)
end
