-- start.lua: marks leased tasks running (their attempt begins), once due by Redis's clock.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..]: (id, token) pairs.
-- Returns one letter per lease: 'r' started, 's' stale, 'e' too early.

local now = now_ms()
local res, ha, ids, nh = {}, {}, {}, 0
for i = 4, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
local cvs = redis.call('HMGET', KK, unpack(ids))
local started = nil
for j = 1, #ids do
  local cv = cvs[j]
  if not cv or kk_token(cv) ~= ARGV[3 + 2 * j] then
    res[j] = 's'
  elseif struct.unpack('>I6', cv, 2) > now then
    res[j] = 'e'
  else
    if string.byte(cv, 1) ~= RUNNING then
      -- state and started replaced in place: byte 1, bytes 12..17
      started = started or struct.pack('>I6', now)
      ha[nh + 1] = ids[j]
      ha[nh + 2] = string.char(RUNNING) .. string.sub(cv, 2, 11) .. started .. string.sub(cv, 18)
      nh = nh + 2
    end
    res[j] = 'r'
  end
end
if nh > 0 then redis.call('HSET', KK, unpack(ha)) end
return table.concat(res)
