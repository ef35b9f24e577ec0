-- The shared AOPIC ledger hash: load, save, and its state as scripts return it.
--- @include "cash"
--- @include "now"
local FIELDS = {'lambda', 'dividend', 'put_in', 'rows', 'crawls'}
local function load(key)
  local v = redis.call('HMGET', key, unpack(FIELDS))
  local s = {}
  for i = 1, #FIELDS do s[FIELDS[i]] = tonumber(v[i]) or 0 end
  return s
end
local function save(key, s)
  redis.call('HSET', key, 'lambda', fmt(s.lambda), 'dividend', fmt(s.dividend), 'put_in', fmt(s.put_in),
             'rows', s.rows, 'crawls', s.crawls)
end
local function state(s)
  return {fmt(s.lambda), fmt(s.dividend), fmt(s.put_in), s.rows, s.crawls}
end
