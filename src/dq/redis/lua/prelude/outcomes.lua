-- prelude/outcomes.lua: what becomes of a task whose attempt ended: its retry delay, dead
-- letters, finished tasks, and the bounded forgetting of finished and dead ones.

-- Finished and cancelled tasks (remembered so that a re-submit answers `exists`): KDONE is a
-- hash, id -> I6 end ms, a kind byte, then for a finished task its log ('f': its record is
-- gone, its log moved here from KLOG) or nothing ('c' cancelled: its record stays, marked
-- cancelled, and so does its log in KLOG). KDL lists "I6 end ms .. id" in the order they
-- ended, so that the oldest are forgotten first, by age and by count. A finished task costs
-- one field of a variadic HSET and one element of a variadic RPUSH, and is forgotten with a
-- slice of an LTRIM and a field of an HDEL: a sorted set member and a log field, each added
-- and later removed by id, cost twice that.
-- KDL = P .. 'dl' (header.lua's begin)
-- How many of KDONE's tasks are cancelled (cancel adds, forgetting subtracts): count_tasks
-- tells finished from cancelled without reading KDONE's values.
-- KNC = P .. 'nc' (header.lua's begin). DONEH, DONEL, DONEN: the call's finished tasks,
-- emptied by begin().
local function done_add(id, end6, kind, logv)
  DONEN = DONEN + 1
  DONEH[2 * DONEN - 1] = id
  DONEH[2 * DONEN] = end6 .. kind .. logv
  DONEL[DONEN] = end6 .. id
end
local function flush_done(now)
  if DONEN == 0 then return end
  local pushed = DONEN
  redis.call('HSET', KDONE, unpack(DONEH))
  local len = redis.call('RPUSH', KDL, unpack(DONEL))
  DONEH, DONEL, DONEN = {}, {}, 0
  -- Forget the oldest beyond the count or the age: at least as many as were added, so that
  -- the list keeps up, and no more than 32 beyond that (bounded work per call).
  local over, cut = len - DONE_MAX, now - DONE_AGE
  if over <= 0 then
    local h = redis.call('LINDEX', KDL, '0')
    if struct.unpack('>I6', h) > cut then return end
  end
  local head = redis.call('LRANGE', KDL, '0', fmt(pushed + 31))
  local ids, k = {}, 0
  for i = 1, #head do
    local e = head[i]
    if i > over and struct.unpack('>I6', e) > cut then break end
    k = i
    ids[i] = string.sub(e, 7)
  end
  if k == 0 then return end
  redis.call('LTRIM', KDL, fmt(k), '-1')
  local vs = redis.call('HMGET', KDONE, unpack(ids))
  local logs = {}
  for i = 1, k do
    local v = vs[i]
    if v and string.byte(v, 7) == 99 then -- 'c': a cancelled task's record and log stay
      local id = ids[i]
      local bk = bkey(id)
      local rh = redis.call('HGET', bk, id)
      if rh then delete_rec(bk, id, string.byte(rh, 2)) end
      logs[#logs + 1] = id
    end
  end
  redis.call('HDEL', KDONE, unpack(ids))
  if #logs > 0 then
    redis.call('HDEL', KLOG, unpack(logs))
    redis.call('DECRBY', KNC, fmt(#logs))
  end
end

-- Forgets the oldest entries of the dead set beyond its age or count (bounded work).
local function trim(key, maxn, age, now)
  local victims = redis.call('ZRANGEBYSCORE', key, '-inf', fmt(now - age), 'LIMIT', '0', '32')
  local over = redis.call('ZCARD', key) - #victims - maxn
  if over > 0 then
    local more = redis.call('ZRANGE', key, fmt(#victims), fmt(#victims + math.min(over, 32) - 1))
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
