-- A queued URL filed again at a higher level (an AOPIC promotion); no-op if
-- it is not queued. The copy left at its old level is skipped when reached
-- (its row is no longer queued by then). KEYS: back, urls. ARGV:
-- fingerprint, level.
--- @include "rows"
--- @include "backq"
local row = row_get(KEYS[2], ARGV[1])
if not row or row_status(row) ~= S_QUEUED then return 0 end
bq_push(KEYS[1], ARGV[2], ARGV[1])
return 1
