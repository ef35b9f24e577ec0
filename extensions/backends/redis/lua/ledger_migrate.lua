-- Fill the ledger hash from a crawl's old per-process copy (P:meta
-- aopic), once. KEYS: the ledger. ARGV: the five fields' values.
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], 'lambda', ARGV[1], 'dividend', ARGV[2], 'put_in', ARGV[3],
             'rows', ARGV[4], 'crawls', ARGV[5])
end
return 1
