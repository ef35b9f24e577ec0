-- A host's in-flight URLs back to the head of their levels' queues (rows
-- back to queued); how many. The in-flight set scores each by its level.
--- @include "rows"
--- @include "backq"
local function requeue_inflight(inflight, back, urls)
  local taken = redis.call('ZRANGE', inflight, 0, -1, 'WITHSCORES')
  for i = 1, #taken, 2 do
    bq_push(back, taken[i + 1], taken[i], true)
    local row = row_get(urls, taken[i])
    if row and row_status(row) == S_INFLIGHT then
      row_put(urls, taken[i], row_with_status(row, S_QUEUED))
    end
  end
  redis.call('DEL', inflight)
  return #taken / 2
end
