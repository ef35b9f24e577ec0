-- A row script's URL-seen set, if it has one: KEYS[shard], with ARGV[at] its
-- kind ('bloom' or 'fpset') and ARGV[at + 1], ARGV[at + 2] its parameters.
-- Rows then start at ARGV[at + 3], each with 3 arguments (fingerprint, row,
-- one more) and the set's own: a Bloom filter's h1, h2, h3, an fpset's member.
--- @include "bloom"
--- @include "fpset"
local function rows_from(shard, at)
  if #KEYS < shard then return at, 3 end
  if ARGV[at] == 'bloom' then return at + 3, 6 end
  return at + 3, 4
end
-- Add the URL whose own arguments start at ARGV[j]: 1 if it was new, else 0.
local function seen_add(shard, at, j)
  if ARGV[at] == 'bloom' then
    return bloom_add(KEYS[shard], ARGV[at + 1], ARGV[at + 2], ARGV[j], ARGV[j + 1], ARGV[j + 2])
  end
  return fpset_add(KEYS[shard], ARGV[at + 1], ARGV[j])
end
-- Whether the row at ARGV[i] is new to the set (added now); true without one.
local function new_to_seen(shard, at, i)
  if #KEYS < shard then return true end
  return seen_add(shard, at, i + 3) == 1
end
