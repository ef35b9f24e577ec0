-- New URLs of one host: row (add-if-new) and back-queue entry together;
-- force ('1') requeues known ones (dont_filter), keeping their fetch time.
-- With a URL-seen set, a new URL goes to the host's tail instead
-- (include/tail.lua: no row, no list entry) while the host's window holds
-- window URLs or more, or its tail any. KEYS: urls, host_urls, back,
-- inflight, lease. ARGV: now, me, force, host, window (0: no tail), then
-- fingerprint, row, code per URL (level * 2, + 1 if its tail record keeps
-- its member: include/tail.lua). With a URL-seen set (the URL is new if
-- the set says so; a forced one is added to it too): KEYS: then the set;
-- ARGV: now, me, force, host, window, the set's kind and two parameters,
-- then fingerprint, row, code and the set's own per URL
-- (include/seen.lua). Returns {added per URL, needs listing, held by me,
-- back-queue length, head score, ms to next fetch, ver, bytes of the records
-- appended to the tail}.
--- @include "rows"
--- @include "backq"
--- @include "seen"
--- @include "tail"
local first, stride = rows_from(6, 6)
local added = {}
local window = tonumber(ARGV[5])
if #KEYS < 6 then window = 0 end  -- the URL rows are the URL-seen set: every URL needs its row
local in_window, tail, records, counted = 0, 0, {}, 0
if window > 0 then
  local _, _, queued
  _, _, queued, tail = bq_state(KEYS[3])
  in_window = queued - tail
end
for i = first, #ARGV, stride do
  local new, code = 0, tonumber(ARGV[i + 2])
  local level = math.floor(code / 2)
  if new_to_seen(6, 6, i) or ARGV[3] == '1' then
    if ARGV[3] ~= '1' and window > 0 and (in_window >= window or tail > 0) then
      tail_append(records, ARGV[i], code, ARGV[i + 1])
      tail = tail + 1
      new = 2
    else
      new = row_add(KEYS[1], ARGV[i], ARGV[i + 1])
    end
  end
  if new == 1 then
    counted = counted + 1
    bq_push(KEYS[3], level, ARGV[i])
    in_window = in_window + 1
  elseif new == 2 then
    counted = counted + 1
    new = 1
  elseif ARGV[3] == '1' then
    local old = row_get(KEYS[1], ARGV[i])
    local row = ARGV[i + 1]
    row_put(KEYS[1], ARGV[i], row_with(row_status(row), row_fetched(old), row))
    bq_push(KEYS[3], level, ARGV[i])
  end
  added[#added + 1] = new
end
tail_flush(KEYS[3], records)
if counted > 0 then redis.call('HINCRBY', KEYS[2], ARGV[4], counted) end
local now = now_ms(ARGV[1])
local st = redis.call('HMGET', KEYS[5], 'owner', 'expires', 'listed', 'next', 'ver')
local top, parked, queued
top, parked, queued, tail = bq_state(KEYS[3])
local needs = 0
if st[3] ~= '1' and queued + redis.call('ZCARD', KEYS[4]) > 0 then needs = 1 end
local mine = 0
if st[1] == ARGV[2] and tonumber(st[2]) > now then mine = 1 end
local wait = math.max(0, (tonumber(st[4]) or 0) - now)
local raw = 0
if tail > 0 then raw = tail_appended(KEYS[3]) end
return {added, needs, mine, queued, bq_head_of(top, parked, tail), wait, st[5] or '', raw}
