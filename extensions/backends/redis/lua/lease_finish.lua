-- A handed-out URL is finished. If the host was taken over meanwhile, the
-- URL went back to its queue: finished there if it is still queued (no
-- second fetch: takers skip a row that is not queued), left alone if the
-- new owner has it in flight.
-- KEYS: inflight, urls, lease. ARGV: status byte ('' keeps it),
-- fetch time (8 bytes or ''), fingerprint, me. Where finished rows are
-- trimmed a finished row goes, counted in host_urls (include/finished.lua):
-- KEYS: then host_urls; ARGV: the count's field (#done ...; '' keeps the
-- row), fetch time, fingerprint, me.
--- @include "finished"
--- @include "taken_over"
local guard = S_INFLIGHT
if taken_over(KEYS[3], ARGV[4]) then
  if ARGV[1] == '' then return 0 end
  guard = S_QUEUED
else
  redis.call('ZREM', KEYS[1], ARGV[3])
end
if ARGV[1] ~= '' then
  local row = row_get(KEYS[2], ARGV[3])
  if row and row_status(row) == guard then
    if #KEYS == 4 then
      row_del(KEYS[2], ARGV[3])
      count_finished(KEYS[4], ARGV[1], row, ARGV[2])
    else
      local fetched = ARGV[2]
      if fetched == '' then fetched = row_fetched(row) end
      row_put(KEYS[2], ARGV[3], row_with(ARGV[1], fetched, row))
    end
    return 1
  end
end
return 0
