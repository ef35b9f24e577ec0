-- A host's back queue: one FIFO list of fingerprints per front-queue level
-- (P:{T}:bq:HOST:LEVEL, discovery order; each as its 5-byte member of
-- fpmap.lua, the tag T its top 24 bits), one of parked URLs (their origin
-- held: "fingerprint level", P:{T}:bq:HOST:p), and their directory, fields
-- of the host's lease hash P:{T}:lease:HOST (the key scripts are given as
-- the back queue's): each list's length, lLEVEL or p (a field goes when its
-- list empties), and t: how many URLs wait in the host's tail
-- (include/tail.lua); the lease's own fields are not the directory's.
-- A list may hold a fingerprint whose row is no longer queued (finished
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
    elseif string.find(field, '^l%d+$') then
      local level = tonumber(string.sub(field, 2))
      total = total + tonumber(all[i + 1])
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
-- a URL into its level's list (at its head with front), or parked
local function bq_push(dir, level, fp, front)
  redis.call(front and 'LPUSH' or 'RPUSH', bq_key(dir, level), fp_member(fp))
  redis.call('HINCRBY', dir, 'l' .. level, 1)
end
local function bq_park(dir, level, fp)
  redis.call('RPUSH', bq_key(dir, 'p'), fp .. ' ' .. level)
  redis.call('HINCRBY', dir, 'p', 1)
end
local function bq_taken(dir, field)
  local left = redis.call('HINCRBY', dir, field, -1)
  if left <= 0 then redis.call('HDEL', dir, field) end
  return left
end
-- the head of a level's list, out; and how many that level has left
local function bq_pop(dir, level)
  local member = redis.call('LPOP', bq_key(dir, level))
  if not member then  -- the count was wrong: forget it
    redis.call('HDEL', dir, 'l' .. level)
    return false, 0
  end
  return bq_fp(dir, member), bq_taken(dir, 'l' .. level)
end
-- a parked entry out ("fingerprint level")
local function bq_unpark_one(dir, entry)
  redis.call('LREM', bq_key(dir, 'p'), 1, entry)
  bq_taken(dir, 'p')
end
