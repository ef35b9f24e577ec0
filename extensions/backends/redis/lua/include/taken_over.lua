-- Whether another process took the host over from us (its lease_acquire put
-- our in-flight URLs back in the queue: they are no longer ours to move).
local function taken_over(lease, me)
  local owner = redis.call('HGET', lease, 'owner')
  return owner and owner ~= me
end
