-- count_tasks.lua: how many tasks of the shard are in each state, for monitoring (reads only).
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..]: none.
-- Returns {Redis's clock ms, delayed, prefetched, running, finished, dead, cancelled, due now,
--   the earliest delayed due ms or -1}.
-- Costs O(slots + claimed tasks): KD's and each slot's ZCARD (no counter is kept of the
-- delayed tasks: one would cost every far submit a write), KK's values; KDEAD's ZCARD,
-- KDONE's HLEN and KNC for the rest. due now: the part of KD, and of the slots that start by
-- now (those no claim has moved into KD yet), due by now.

local now = now_ms()
local delayed = redis.call('ZCARD', KD)
local due = redis.call('ZCOUNT', KD, '-inf', fmt(now))
local slots = redis.call('ZRANGE', KW, '0', '-1', 'WITHSCORES')
for i = 1, #slots, 2 do
  local key = P .. 'w:' .. slots[i]
  delayed = delayed + redis.call('ZCARD', key)
  if tonumber(slots[i + 1]) <= now then due = due + redis.call('ZCOUNT', key, '-inf', fmt(now)) end
end
local prefetched, running = 0, 0
for _, v in ipairs(redis.call('HVALS', KK)) do
  if string.byte(v, 1) == RUNNING then running = running + 1 else prefetched = prefetched + 1 end
end
local cancelled = tonumber(redis.call('GET', KNC) or '0')
local done = redis.call('HLEN', KDONE)
return {now, delayed, prefetched, running, done - cancelled, redis.call('ZCARD', KDEAD),
        cancelled, due, earliest() or -1}
