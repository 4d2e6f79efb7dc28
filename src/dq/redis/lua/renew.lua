-- renew.lua: extends leases still held.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4]: lease ms; ARGV[5..]: (id, token) pairs.
-- Returns one letter per lease: 'o' ok, 's' stale.

local now = now_ms()
local lease = tonumber(ARGV[4])
local res = {}
for i = 5, #ARGV, 2 do
  local id, tok = ARGV[i], ARGV[i + 1]
  local cv = redis.call('HGET', KK, id)
  if cv and kk_token(cv) == tok then
    redis.call('ZADD', KL, 'XX', fmt(now + lease), id)
    res[#res + 1] = 'o'
  else
    res[#res + 1] = 's'
  end
end
return table.concat(res)
