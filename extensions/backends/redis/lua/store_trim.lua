-- Rows of one tag become done, failed or excluded where finished rows are
-- trimmed: deleted, and counted in host_urls (include/finished.lua).
-- KEYS: urls, host_urls; ARGV: the count's field (#done ...), only-from
-- status byte or '', fetch time (8 bytes or ''), fingerprints. Returns how
-- many rows went.
--- @include "finished"
local trimmed = 0
for i = 4, #ARGV do
  local row = row_get(KEYS[1], ARGV[i])
  if row and (ARGV[2] == '' or row_status(row) == ARGV[2]) then
    row_del(KEYS[1], ARGV[i])
    count_finished(KEYS[2], ARGV[1], row, ARGV[3])
    trimmed = trimmed + 1
  end
end
return trimmed
