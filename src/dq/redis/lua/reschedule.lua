-- reschedule.lua: moves a pending task (delayed or prefetched, not running) to a new due time.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..6]: id, kind ('a' | 'r'), due ms.
-- Returns 'ok'; errors 'DQ due_out_of_range', 'DQ not_found', 'DQ wrong_state'.

local id = ARGV[4]
local now = now_ms()
local due = due_from(ARGV[5], ARGV[6], now)
if not due then return redis.error_reply('DQ due_out_of_range') end
local bk = bkey(id)
local r, n = read_rec(bk, id)
if not r then
  if redis.call('HEXISTS', KDONE, id) == 1 then return redis.error_reply('DQ wrong_state') end
  return redis.error_reply('DQ not_found')
end
if r.st ~= PENDING then return redis.error_reply('DQ wrong_state') end
local cv = redis.call('HGET', KK, id)
if cv then
  if kk_decode(cv).st == RUNNING then return redis.error_reply('DQ wrong_state') end
  redis.call('HDEL', KK, id)
  redis.call('ZREM', KL, id)
else
  unplace(id, r.due)
end
place(id, due, now)
r.updated = now
r.due = due
write_rec(bk, id, r, n)
wake({[due] = true})
return 'ok'
