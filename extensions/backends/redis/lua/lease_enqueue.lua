-- New URLs of one host: row (add-if-new) and back-queue entry together;
-- force ('1') requeues known ones (dont_filter), keeping their fetch time.
-- KEYS: urls, host_urls, back, inflight, lease. ARGV: now, me, force, host,
-- then fingerprint, row, level per URL. With a URL-seen set (the URL is
-- new if the set says so; a forced one is added to it too): KEYS: then
-- the set; ARGV: now, me, force, host, the set's kind and two parameters,
-- then fingerprint, row, level and the set's own per URL (include/seen.lua). Returns {added per URL,
-- needs listing, held by me, back-queue length, head score, ms to next fetch, ver}.
--- @include "rows"
--- @include "backq"
--- @include "seen"
local first, stride = rows_from(6, 5)
local added = {}
for i = first, #ARGV, stride do
  local new = 0
  if new_to_seen(6, 5, i) or ARGV[3] == '1' then new = row_add(KEYS[1], ARGV[i], ARGV[i + 1]) end
  if new == 1 then
    redis.call('HINCRBY', KEYS[2], ARGV[4], 1)
    bq_push(KEYS[3], ARGV[i + 2], ARGV[i])
  elseif ARGV[3] == '1' then
    local old = row_get(KEYS[1], ARGV[i])
    local row = ARGV[i + 1]
    row_put(KEYS[1], ARGV[i], row_with(row_status(row), row_fetched(old), row))
    bq_push(KEYS[3], ARGV[i + 2], ARGV[i])
  end
  added[#added + 1] = new
end
local now = now_ms(ARGV[1])
local st = redis.call('HMGET', KEYS[5], 'owner', 'expires', 'listed', 'next', 'ver')
local top, parked, queued = bq_state(KEYS[3])
local needs = 0
if st[3] ~= '1' and queued + redis.call('ZCARD', KEYS[4]) > 0 then needs = 1 end
local mine = 0
if st[1] == ARGV[2] and tonumber(st[2]) > now then mine = 1 end
local wait = math.max(0, (tonumber(st[4]) or 0) - now)
return {added, needs, mine, queued, bq_head_of(top, parked), wait, st[5] or ''}
