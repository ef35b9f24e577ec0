-- Origins held now (ended holds are dropped). KEYS: origins. ARGV: now.
-- Returns {origin, ms left, reason, ...}.
--- @include "hold_entries"
return entries(KEYS[1], now_ms(ARGV[1]), false)
