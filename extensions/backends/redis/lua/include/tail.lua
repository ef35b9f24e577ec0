-- A host's tail: its queued URLs past its window (the URLs its back queue
-- holds, include/backq.lua), without a row or a list entry of their own, in
-- the string P:{T}:tail:HOST (format: extensions/backends/redis/tail.py): a
-- header, compressed blocks, then records appended here. The lease's field
-- t counts them.
--- @include "rows"
--- @include "backq"
local function tail_key(dir) return (string.gsub(dir, '}:lease:', '}:tail:', 1)) end
-- records to append, then tail_flush writes them (one SET: APPEND would
-- leave the string room to grow, up to its size again)
-- (code: the level * 2, + 1 if the record keeps its member)
local function tail_append(records, fp, code, row)
  local member = ''
  if code % 2 == 1 then member = fp_member(fp) end
  records[#records + 1] = fpmap_length(code) .. member .. fpmap_length(#row) .. row
end
local function tail_flush(dir, records)
  if #records == 0 then return end
  local key = tail_key(dir)
  redis.call('SET', key, (redis.call('GET', key) or '\0') .. table.concat(records))  -- '\0': no blocks yet
  redis.call('HINCRBY', dir, 't', #records)
end
-- bytes of the records appended after the blocks
local function tail_appended(dir)
  local key = tail_key(dir)
  local head = redis.call('GETRANGE', key, 0, 4)
  if head == '' then return 0 end
  local blocks, at = row_varint(head, 1)
  return redis.call('STRLEN', key) - (at - 1) - blocks
end
-- the records of blob (each with its member) into the window: a row added
-- where none is, then its list entry; t lowered by the records read. How
-- many were moved.
local function tail_refill(dir, urls, blob)
  local at, read, moved = 1, 0, 0
  while at <= #blob do
    local code, length
    code, at = row_varint(blob, at)
    local level, member = math.floor(code / 2), string.sub(blob, at, at + 4)
    length, at = row_varint(blob, at + 5)
    local fp = bq_fp(dir, member)
    read = read + 1
    if row_add(urls, fp, string.sub(blob, at, at + length - 1)) == 1 then
      bq_push(dir, level, fp)
      moved = moved + 1
    end
    at = at + length
  end
  if read > 0 and redis.call('HINCRBY', dir, 't', -read) <= 0 then redis.call('HDEL', dir, 't') end
  return moved
end
