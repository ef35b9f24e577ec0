-- A host's back queue: one FIFO queue of fingerprints per front-queue level
-- (discovery order; each as its 5-byte member of fpmap.lua, the tag T its
-- top 24 bits), one list of parked URLs (their origin held: "fingerprint
-- level", P:{T}:bq:HOST:p), and their directory, in the host's lease hash
-- P:{T}:lease:HOST (the key scripts are given as the back queue's). A
-- level's queue is the field lLEVEL, its first members (BQ_INLINE bytes at
-- most: the hash stays a listpack), then, past them, the list
-- P:{T}:bq:HOST:LEVEL, whose length is the field oLEVEL; p is the parked
-- list's length and t how many URLs wait in the host's tail
-- (include/tail.lua); the lease's own fields are not the directory's. A
-- queue may hold a fingerprint whose row is no longer queued (finished
-- meanwhile, or a copy left behind by a promotion or a forced requeue):
-- takers skip it.
--- @include "now"
--- @include "fpmap"
local function bq_key(dir, level) return (string.gsub(dir, '}:lease:', '}:bq:', 1)) .. ':' .. level end
-- the signed decimal fingerprint of a list's member under the tag of dir
local function bq_fp(dir, member)
  local tag = tonumber(string.match(dir, '{(%x+)}'), 16)
  local b1, b2, b3, b4, b5 = string.byte(member, 1, 5)
  local low, sign = (((b1 * 256 + b2) * 256 + b3) * 256 + b4) * 256 + b5, ''
  if tag >= 8388608 then  -- negative: 2^64 minus the unsigned value
    sign, tag, low = '-', 16777215 - tag, 1099511627776 - low
    if low == 1099511627776 then tag, low = tag + 1, 0 end
  end
  -- tag * 2^40 + low in decimal, exact in doubles: 2^40 = 109951 * 10^7 + 1627776
  local below = tag * 1627776 + low
  local above = tag * 109951 + math.floor(below / 10000000)
  below = below % 10000000
  if above > 0 then return string.format('%s%.0f%07d', sign, above, below) end
  return string.format('%s%d', sign, below)
end
local BQ_INLINE = 60  -- bytes of a level's members in the lease hash (Redis keeps a listpack to 64)
-- the highest level with URLs (nil: none), how many are parked, how many
-- queued in all (the tail's included), how many in the tail
local function bq_state(dir)
  local all = redis.call('HGETALL', dir)
  local top, parked, total, tail = nil, 0, 0, 0
  for i = 1, #all, 2 do
    local field = all[i]
    if field == 'p' then
      parked = tonumber(all[i + 1])
      total = total + parked
    elseif field == 't' then
      tail = tonumber(all[i + 1])
      total = total + tail
    elseif string.find(field, '^[lo]%d+$') then
      local level = tonumber(string.sub(field, 2))
      if string.byte(field, 1) == 108 then total = total + #all[i + 1] / 5 else total = total + tonumber(all[i + 1]) end
      if not top or level > top then top = level end
    end
  end
  return top, parked, total, tail
end
local function bq_len(dir)
  local _, _, total = bq_state(dir)
  return total
end
-- the head score of a queue in that state (leases.py queue_score of its
-- best level, PARKED if only parked URLs are left, '' if empty)
local function bq_head_of(top, parked)
  if top then return fmt(-top * $LEVEL_SPAN) end
  if parked > 0 then return fmt($PARKED) end
  return ''
end
local function bq_head(dir)
  local top, parked = bq_state(dir)
  return bq_head_of(top, parked)
end
-- a level's members in the hash and its list's length
local function bq_level(dir, level)
  local got = redis.call('HMGET', dir, 'l' .. level, 'o' .. level)
  return got[1] or '', tonumber(got[2] or '0')
end
local function bq_save(dir, level, inline, spilled, was)
  if inline == '' then redis.call('HDEL', dir, 'l' .. level) else redis.call('HSET', dir, 'l' .. level, inline) end
  if spilled == was then return end
  if spilled > 0 then redis.call('HSET', dir, 'o' .. level, spilled) else redis.call('HDEL', dir, 'o' .. level) end
end
-- a URL into its level's queue (at its head with front)
local function bq_push(dir, level, fp, front)
  local member = fp_member(fp)
  local inline, spilled = bq_level(dir, level)
  local was = spilled
  if front then
    inline = member .. inline
    if #inline > BQ_INLINE then  -- the last member in the hash moves to the list's head
      redis.call('LPUSH', bq_key(dir, level), string.sub(inline, -5))
      inline, spilled = string.sub(inline, 1, -6), spilled + 1
    end
  elseif spilled > 0 or #inline >= BQ_INLINE then
    redis.call('RPUSH', bq_key(dir, level), member)
    redis.call('HSET', dir, 'o' .. level, spilled + 1)
    return
  else
    inline = inline .. member
  end
  bq_save(dir, level, inline, spilled, was)
end
-- the head of a level's queue, out (false: none); and how many that level has left
local function bq_pop(dir, level)
  local inline, spilled = bq_level(dir, level)
  local was = spilled
  if spilled > 0 and #inline < BQ_INLINE then  -- the hash's members first come from the list
    local want = math.min(spilled, (BQ_INLINE - #inline) / 5)
    local moved = redis.call('LPOP', bq_key(dir, level), want) or {}
    inline, spilled = inline .. table.concat(moved), spilled - want
    if #moved < want then spilled = 0 end  -- the list was shorter: its count was wrong
  end
  if inline == '' then
    bq_save(dir, level, '', 0, was)
    return false, 0
  end
  bq_save(dir, level, string.sub(inline, 6), spilled, was)
  return bq_fp(dir, string.sub(inline, 1, 5)), (#inline - 5) / 5 + spilled
end
local function bq_park(dir, level, fp)
  redis.call('RPUSH', bq_key(dir, 'p'), fp .. ' ' .. level)
  redis.call('HINCRBY', dir, 'p', 1)
end
-- a parked entry out ("fingerprint level")
local function bq_unpark_one(dir, entry)
  redis.call('LREM', bq_key(dir, 'p'), 1, entry)
  if redis.call('HINCRBY', dir, 'p', -1) <= 0 then redis.call('HDEL', dir, 'p') end
end
