-- Crawl Lambda if it holds at least rival (and something): its cash
-- spread equally over every row. KEYS: the ledger. ARGV: rival cash.
-- Returns the ledger state.
--- @include "ledger"
local s = load(KEYS[1])
if s.lambda > 0 and s.lambda >= tonumber(ARGV[1]) and s.rows > 0 then
  s.dividend = s.dividend + s.lambda / s.rows
  s.lambda, s.crawls = 0, s.crawls + 1
  save(KEYS[1], s)
end
return state(s)
