-- delete_dead.lua: forgets a dead task (its record and log).
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4]: id.
-- Returns 'ok'; error 'DQ not_found'.

local id = ARGV[4]
if redis.call('ZREM', KDEAD, id) == 0 then return redis.error_reply('DQ not_found') end
local bk = bkey(id)
local head = redis.call('HGET', bk, id)
if head then delete_rec(bk, id, string.byte(head, 2)) end
redis.call('HDEL', KLOG, id)
return 'ok'
