-- requeue_dead.lua: puts a dead task back as pending, attempts and error cleared.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..6]: id, kind ('a' | 'r'), due ms.
-- Returns 'ok'; errors 'DQ due_out_of_range', 'DQ not_found'.

local id = ARGV[4]
local now = now_ms()
local due = due_from(ARGV[5], ARGV[6], now)
if not due then return redis.error_reply('DQ due_out_of_range') end
if not redis.call('ZSCORE', KDEAD, id) then return redis.error_reply('DQ not_found') end
local bk = bkey(id)
local r, n = read_rec(bk, id)
if not r then
  redis.call('ZREM', KDEAD, id)
  return redis.error_reply('DQ not_found')
end
r.st = PENDING
r.att = 0
r.err = ''
r.updated = now
r.due = due
write_rec(bk, id, r, n)
redis.call('ZREM', KDEAD, id)
place(id, due, now)
wake({[due] = true})
return 'ok'
