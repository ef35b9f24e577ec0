-- One page's AOPIC step or a seed's cash. KEYS: the ledger hash (if
-- ARGV[1] is '1'), then cash hashes. ARGV: shared ('1': KEYS[1] is the
-- ledger; '0': a cluster, no ledger here), d (the dividend to use without
-- the ledger), tax, outlinks (the page's, for the split; may exceed the
-- credits here), take (key index, 0: none), take member, credit
-- amount ('': the split's share), mode ('': the credits are the split;
-- 'put': cash put in; 'seed': put in, only for URLs without cash), then
-- key index and member per credit (members: 5 bytes, fpmap.py's). Rows
-- hold u, their cash at dividend 0 (include/cash.lua): a row's cash is
-- u + d, a new row's u is -d (cash 0 at d), a credit adds to u. A take
-- leaves u = -d and takes u + d, or nothing if that is not positive: with
-- a stale d (lower than the ledger's D) it takes less than the row holds
-- and the difference, D - d, stays in the row. Returns {cash taken, history, visits,
-- share, to Lambda, new rows, cash put in, per credit before, after (doubles)
-- and existed (a byte) packed big-endian in one string, ledger state or {}};
-- to Lambda includes what rounding the credited rows took (include/cash.lua).
--- @include "ledger"
local shared = ARGV[1] == '1'
local s
if shared then s = load(KEYS[1]) else s = {dividend = tonumber(ARGV[2])} end
local d, tax, outlinks = s.dividend, tonumber(ARGV[3]), tonumber(ARGV[4])
local new, put_in, cash, history, visits, to_lambda, share = 0, 0, 0, 0, 0, 0, 0
local take = tonumber(ARGV[5])
if take > 0 then
  local row = cash_get(KEYS[take], ARGV[6])
  local u = -d
  if row then
    u, history, visits = row[1], row[2], row[3]
    if u + d > 0 then cash, u = u + d, -d end
  else
    new = new + 1
  end
  history, visits = history + cash, visits + 1
  cash_put(KEYS[take], ARGV[6], u, history, visits)
  if outlinks <= 0 then
    to_lambda = cash
  else
    to_lambda = cash * tax
    share = (cash - to_lambda) / outlinks
  end
end
local amount = share
if ARGV[7] ~= '' then amount = tonumber(ARGV[7]) end
local mode = ARGV[8]
local credits, rounded = {}, 0
for i = 9, #ARGV, 2 do
  local key, fp = KEYS[tonumber(ARGV[i])], ARGV[i + 1]
  local row = cash_get(key, fp)
  local u, hist, vis, existed = -d, 0, 0, 0
  if row then u, hist, vis, existed = row[1], row[2], row[3], 1 end
  local before = math.max(0, u + d)
  local after = before
  if amount > 0 and not (mode == 'seed' and before ~= 0) then
    after = before + amount
    if mode ~= '' then put_in = put_in + amount end
    if existed == 0 then new = new + 1 end
    rounded = rounded + cash_put(key, fp, u + amount, hist, vis)
  end
  credits[#credits + 1] = struct.pack('>ddB', before, after, existed)
end
to_lambda = to_lambda + rounded  -- what the credited rows' rounding took
local ledger = {}
if shared then
  s.lambda, s.rows, s.put_in = s.lambda + to_lambda, s.rows + new, s.put_in + put_in
  save(KEYS[1], s)
  ledger = state(s)
end
return {fmt(cash), fmt(history), visits, fmt(share), fmt(to_lambda), new, fmt(put_in), table.concat(credits), ledger}
