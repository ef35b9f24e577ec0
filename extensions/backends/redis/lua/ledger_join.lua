-- A cluster's half of ledger_cash in the ledger's slot: the tax to Lambda,
-- new rows counted, the dividends a row created with d got before
-- joining charged to Lambda, seeds' cash put in. KEYS: the ledger. ARGV:
-- to Lambda, new rows, d, put in. Returns the ledger state.
--- @include "ledger"
local s = load(KEYS[1])
local new = tonumber(ARGV[2])
s.lambda = s.lambda + tonumber(ARGV[1]) - new * (s.dividend - tonumber(ARGV[3]))
s.rows, s.put_in = s.rows + new, s.put_in + tonumber(ARGV[4])
save(KEYS[1], s)
return state(s)
