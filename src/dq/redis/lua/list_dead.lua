-- list_dead.lua: one page of the shard's dead tasks, in death order (reads only).
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..6]: after_id ('' from the start), after_score (its death ms), count.
-- Returns a flat array, per task after (after_score, after_id): id, died ms, attempt, error.

local after, count = ARGV[4], tonumber(ARGV[6])
local ids
if after ~= '' and redis.call('ZSCORE', KDEAD, after) then
  local rank = redis.call('ZRANK', KDEAD, after)
  ids = redis.call('ZRANGE', KDEAD, rank + 1, rank + count, 'WITHSCORES')
elseif after ~= '' then
  ids = redis.call('ZRANGE', KDEAD, '(' .. ARGV[5], '+inf', 'BYSCORE', 'LIMIT', 0, count,
                   'WITHSCORES')
else
  ids = redis.call('ZRANGE', KDEAD, 0, count - 1, 'WITHSCORES')
end
local out = {}
for i = 1, #ids, 2 do
  local id = ids[i]
  local r = read_rec(bkey(id), id)
  out[#out + 1] = id
  out[#out + 1] = tonumber(ids[i + 1])
  out[#out + 1] = r and r.att or 0
  out[#out + 1] = r and r.err or ''
end
return out
