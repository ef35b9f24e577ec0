-- A host's tail string rewritten (include/tail.lua), if its first bytes are
-- still the ones read: they become the replacement (records appended since
-- stay after it), and the records given go into the window (a compaction
-- gives none, a refill a window's worth). KEYS: lease, urls. ARGV: how many
-- bytes were read, their SHA1 (hex), the replacement (a header first), the
-- records. Returns the URLs moved into the window, or -1 (the string
-- changed meanwhile: nothing done).
--- @include "tail"
local key, n = tail_key(KEYS[1]), tonumber(ARGV[1])
if n == 0 then  -- there was no string: t is wrong (or the string came since)
  if redis.call('EXISTS', key) == 1 then return -1 end
  redis.call('HDEL', KEYS[1], 't')
  return 0
end
local head = redis.call('GETRANGE', key, 0, n - 1)
if #head ~= n or redis.sha1hex(head) ~= ARGV[2] then return -1 end
local new = ARGV[3] .. redis.call('GETRANGE', key, n, -1)
if new == '\0' then redis.call('DEL', key) else redis.call('SET', key, new) end
return tail_refill(KEYS[1], KEYS[2], ARGV[4])
