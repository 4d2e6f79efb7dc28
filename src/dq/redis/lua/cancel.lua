-- cancel.lua: cancels a pending task (delayed or prefetched, not running).
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4]: id.
-- Returns 'cancelled' | 'not_found' | 'too_late' (running, finished, dead or cancelled).

local id = ARGV[4]
local now = now_ms()
local bk = bkey(id)
local r, n = read_rec(bk, id)
if not r then
  if redis.call('HEXISTS', KDONE, id) == 1 then return 'too_late' end
  return 'not_found'
end
if r.st ~= PENDING then return 'too_late' end
local cv = redis.call('HGET', KK, id)
if cv then
  local c = kk_decode(cv)
  if c.st == RUNNING then return 'too_late' end
  redis.call('HDEL', KK, id)
  redis.call('ZREM', KL, id)
else
  unplace(id, r.due)
end
r.st = CANCELLED
r.updated = now
r.payload = ''
write_rec(bk, id, r, n)
redis.call('INCR', KNC)
done_add(id, struct.pack('>I6', now), 'c', '')
flush_done(now)
return 'cancelled'
