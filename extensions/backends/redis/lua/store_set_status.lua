-- Status (and fetch time) of rows of one tag. KEYS: urls; ARGV: status
-- byte, only-from status byte or '', fetched (8 bytes) or '', fingerprints.
-- Returns how many rows changed.
--- @include "rows"
local changed = 0
for i = 4, #ARGV do
  local row = row_get(KEYS[1], ARGV[i])
  if row and (ARGV[2] == '' or row_status(row) == ARGV[2]) then
    local fetched = ARGV[3]
    if fetched == '' then fetched = row_fetched(row) end
    row_put(KEYS[1], ARGV[i], row_with(ARGV[1], fetched, row))
    changed = changed + 1
  end
end
return changed
