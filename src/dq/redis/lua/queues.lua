-- queues.lua: a named queue's settings record (store::create_queue, update_queue,
-- delete_queue). No shard function: its keys are the queues', one slot for all of them.
-- KEYS[1] {<name>:queues}: a hash, field = the queue's name, value = '>I6I6I6' generation,
--   created ms, updated ms, then the spec as detail::encode_queue_spec spells it.
-- KEYS[2] {<name>:queues}:names: a ZSET of the names (score 0), for pages in byte order.
-- ARGV[1]: 'create' | 'update' | 'delete'; ARGV[2]: the name; ARGV[3]: the spec (create,
--   update).
-- Returns 'created' | 'exists' (the same spec) | 'ok'; the errors 'DQ queue_conflict' (create:
--   another spec), 'DQ not_found' (update, delete).

local op, name = ARGV[1], ARGV[2]
local v = redis.call('HGET', KEYS[1], name)
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if op == 'create' then
  if v then
    if string.sub(v, 19) == ARGV[3] then return 'exists' end
    return redis.error_reply('DQ queue_conflict')
  end
  redis.call('HSET', KEYS[1], name, struct.pack('>I6I6I6', 1, now, now) .. ARGV[3])
  redis.call('ZADD', KEYS[2], '0', name)
  return 'created'
end
if not v then return redis.error_reply('DQ not_found') end
if op == 'update' then
  local gen, created = struct.unpack('>I6I6', v)
  redis.call('HSET', KEYS[1], name, struct.pack('>I6I6I6', gen + 1, created, now) .. ARGV[3])
  return 'ok'
end
redis.call('HDEL', KEYS[1], name)
redis.call('ZREM', KEYS[2], name)
return 'ok'
