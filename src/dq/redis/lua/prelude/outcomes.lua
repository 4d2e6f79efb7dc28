-- prelude/outcomes.lua: what becomes of a task whose attempt ended: its retry delay, dead
-- letters, and the bounded forgetting of done and dead tasks.

-- Forgets the oldest entries of a done or dead set beyond its age or count (bounded work).
local function trim(key, maxn, age, now)
  local victims = redis.call('ZRANGEBYSCORE', key, '-inf', fmt(now - age), 'LIMIT', 0, 32)
  local over = redis.call('ZCARD', key) - #victims - maxn
  if over > 0 then
    local more = redis.call('ZRANGE', key, #victims, #victims + math.min(over, 32) - 1)
    for _, v in ipairs(more) do victims[#victims + 1] = v end
  end
  if #victims == 0 then return end
  for _, v in ipairs(victims) do
    local bk = bkey(v)
    local head = redis.call('HGET', bk, v)
    if head then delete_rec(bk, v, string.byte(head, 2)) end
  end
  redis.call('ZREM', key, unpack(victims))
  redis.call('HDEL', KLOG, unpack(victims))
end

-- The retry delay after attempt `att` failed: uniform in [0, min(cap, base * 2^(att-1))].
local function backoff(r, att)
  seed()
  local d = r.base * math.pow(2, math.max(att - 1, 0))
  if d > r.cap then d = r.cap end
  return math.floor(math.random() * (d + 1))
end

local function die(bk, id, r, n, now)
  r.st = DEAD
  write_rec(bk, id, r, n)
  redis.call('ZADD', KDEAD, fmt(now), id)
end
