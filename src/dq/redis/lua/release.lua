-- release.lua: gives back prefetched tasks (never started), delayed again at their due time.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..]: (id, token) pairs.
-- Returns one letter per lease: 'o' ok, 's' stale (or running).

local now = now_ms()
local res, woke = {}, {}
for i = 4, #ARGV, 2 do
  local id, tok = ARGV[i], ARGV[i + 1]
  local cv = redis.call('HGET', KK, id)
  local c = cv and kk_token(cv) == tok and kk_decode(cv)
  if c and c.st == PREFETCHED then
    redis.call('HDEL', KK, id)
    redis.call('ZREM', KL, id)
    place(id, c.due, now)
    woke[c.due] = true
    res[#res + 1] = 'o'
  else
    res[#res + 1] = 's'
  end
end
if next(woke) then wake(woke) end
return table.concat(res)
