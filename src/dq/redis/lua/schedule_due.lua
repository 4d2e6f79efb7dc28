-- schedule_due.lua: the shard's schedules whose next occurrence is due by now + window, for
-- the materialiser (reads only).
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..5]: window ms, batch.
-- Returns {Redis's clock ms, then id, record per schedule}, earliest first, at most batch.

local now = now_ms()
local ids = redis.call('ZRANGE', KSI, '-inf', fmt(now + tonumber(ARGV[4])), 'BYSCORE', 'LIMIT',
                       0, tonumber(ARGV[5]))
local out = {now}
for i = 1, #ids do
  out[#out + 1] = ids[i]
  out[#out + 1] = redis.call('HGET', KSC, ids[i])
end
return out
