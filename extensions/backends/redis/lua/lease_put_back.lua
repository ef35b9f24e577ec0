-- A handed-out URL goes back to its host's queue (postponed; parked with
-- '1'), unless the host was taken over meanwhile (its lease_acquire did that
-- already; the URL may be in the new owner's hands). KEYS: inflight, urls,
-- back, lease. ARGV: fingerprint, level, parked ('1' or ''), me.
--- @include "rows"
--- @include "backq"
--- @include "taken_over"
if taken_over(KEYS[4], ARGV[4]) then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
if ARGV[3] == '1' then bq_park(KEYS[3], ARGV[2], ARGV[1]) else bq_push(KEYS[3], ARGV[2], ARGV[1]) end
local row = row_get(KEYS[2], ARGV[1])
if row and row_status(row) == S_INFLIGHT then row_put(KEYS[2], ARGV[1], row_with_status(row, S_QUEUED)) end
return 1
