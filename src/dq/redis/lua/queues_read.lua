-- queues_read.lua: named queues' settings records (store::get_queue, list_queues; reads
-- only). KEYS as queues.lua's.
-- ARGV[1] 'get', ARGV[2] the name: returns the record; the error 'DQ not_found'.
-- ARGV[1] 'list', ARGV[2] where to start (a ZRANGE BYLEX bound: '(' .. cursor or
--   '[' .. prefix, '-' for the start), ARGV[3] the prefix ('' any), ARGV[4] the most names:
--   returns {name, record, ...} of the names from there that start with the prefix.

if ARGV[1] == 'get' then
  local v = redis.call('HGET', KEYS[1], ARGV[2])
  if not v then return redis.error_reply('DQ not_found') end
  return v
end
local names = redis.call('ZRANGE', KEYS[2], ARGV[2], '+', 'BYLEX', 'LIMIT', '0', ARGV[4])
local prefix = ARGV[3]
local out = {}
for i = 1, #names do
  local n = names[i]
  if string.sub(n, 1, #prefix) ~= prefix then break end
  local v = redis.call('HGET', KEYS[1], n)
  if v then
    out[#out + 1] = n
    out[#out + 1] = v
  end
end
return out
