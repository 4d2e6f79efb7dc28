-- config.lua: records a queue's shape on first use, and refuses a store opened with another.
-- Not a shard function: it calls no begin() and uses none of the prelude.
-- KEYS[1]: {Q}:config (a hash: shards, buckets, version).
-- ARGV[1..2]: shards, buckets.
-- Returns 1 (recorded or the same), 0 (the queue exists with another shape or layout).

-- The version is the key layout's (redis_keys.hpp): 2 since finished tasks moved from a sorted
-- set to a hash and a list, and records to buckets of another hash; 3 since an id with a hash
-- tag ({tag}) is sharded by its tag only (so a layout-2 queue may hold such ids on another
-- shard) and shards keep schedules. A queue written in another layout is refused, never read
-- wrongly.
local LAYOUT = '3'
local s = redis.call('HGET', KEYS[1], 'shards')
if not s then
  redis.call('HSET', KEYS[1], 'shards', ARGV[1], 'buckets', ARGV[2], 'version', LAYOUT)
  return 1
end
if s ~= ARGV[1] or redis.call('HGET', KEYS[1], 'buckets') ~= ARGV[2] or
   redis.call('HGET', KEYS[1], 'version') ~= LAYOUT then
  return 0
end
return 1
