-- prelude/slots.lua: where a delayed task waits (KD or a slot), moving slots into KD as they
-- come within reach, the shard's earliest due time and the wake-ups that announce it.

-- Where a delayed task waits. Tasks due within AHEAD ms wait in KD, one sorted set; later
-- ones in small sorted sets, {Q:s}:w:<name>, indexed by KW (name -> the slot's start ms).
-- The slots partition time: a slot holds the tasks due from its start to the next slot's
-- start, so a task's slot is the one with the greatest start <= its due time. A slot that
-- would pass SLOT_MAX tasks splits at its median due time, so that each stays a listpack
-- (about 25 bytes a task instead of about 105 in a skiplist) however dense the due times:
-- zset-max-listpack-entries is 128. New slots start on a W-ms boundary. Claim moves the
-- slots coming within reach into KD.
local W, AHEAD, SLOT_MAX = 10000, 10000, 128
-- KW = P .. 'wi' (header.lua's begin)
local function covering(due)
  return redis.call('ZRANGE', KW, fmt(due), '-inf', 'BYSCORE', 'REV', 'LIMIT', '0', '1')[1]
end
-- Splits the full slot `name` at its median due time (the tasks due from it on move to a new
-- slot); nothing when all its tasks are due at the same ms.
local function split(name)
  local key = P .. 'w:' .. name
  -- A slot whose tasks are all due at one ms cannot split, and stays full: say so from its
  -- two ends, without reading it whole at every submit (which made a burst of tasks due at
  -- one ms cost O(n) each).
  if redis.call('ZRANGE', key, '0', '0', 'WITHSCORES')[2] ==
     redis.call('ZRANGE', key, '-1', '-1', 'WITHSCORES')[2] then
    return
  end
  local m = redis.call('ZRANGE', key, '0', '-1', 'WITHSCORES')
  local first = tonumber(m[2])
  local mid = tonumber(m[2 * math.floor(#m / 4) + 2])
  if mid <= first then
    mid = nil
    for i = 4, #m, 2 do
      local d = tonumber(m[i])
      if d > first then mid = d; break end
    end
    if not mid then return end
  end
  local args = {}
  for i = 1, #m, 2 do
    if tonumber(m[i + 1]) >= mid then
      args[#args + 1] = m[i + 1]
      args[#args + 1] = m[i]
    end
  end
  local new = string.format('%.0f', mid)
  redis.call('ZADD', P .. 'w:' .. new, unpack(args))
  redis.call('ZREMRANGEBYSCORE', key, new, '+inf')
  redis.call('ZADD', KW, new, new)
end
local function place(id, due, now)
  if due <= now + AHEAD then
    redis.call('ZADD', KD, fmt(due), id)
    return
  end
  local name = covering(due)
  if not name then
    local slot = math.floor(due / W)
    name = fmt(slot)
    redis.call('ZADD', KW, fmt(slot * W), name)
  elseif redis.call('ZCARD', P .. 'w:' .. name) >= SLOT_MAX then
    split(name)
    name = covering(due)
  end
  redis.call('ZADD', P .. 'w:' .. name, fmt(due), id)
end
local function unplace(id, due)
  if redis.call('ZREM', KD, id) == 1 then return end
  local name = covering(due)
  if not name then return end
  local key = P .. 'w:' .. name
  if redis.call('ZREM', key, id) == 1 and redis.call('EXISTS', key) == 0 then
    redis.call('ZREM', KW, name)
  end
end
-- Moves the slots that start by `limit` into KD (at most 64 slots a call, oldest first).
local function promote(limit)
  local slots = redis.call('ZRANGEBYSCORE', KW, '-inf', fmt(limit), 'LIMIT', '0', '64')
  if #slots == 0 then return end
  for _, slot in ipairs(slots) do
    local key = P .. 'w:' .. slot
    local m = redis.call('ZRANGE', key, '0', '-1', 'WITHSCORES')
    local args = {}
    for i = 1, #m, 2 do
      args[#args + 1] = m[i + 1]
      args[#args + 1] = m[i]
      if #args >= 4000 then
        redis.call('ZADD', KD, unpack(args))
        args = {}
      end
    end
    if #args > 0 then redis.call('ZADD', KD, unpack(args)) end
    redis.call('DEL', key)
  end
  redis.call('ZREM', KW, unpack(slots))
end
-- The shard's earliest delayed due time, or nil.
local function earliest()
  local h = redis.call('ZRANGE', KD, '0', '0', 'WITHSCORES')
  local e = h[2] and tonumber(h[2])
  local w = redis.call('ZRANGE', KW, '0', '0', 'WITHSCORES')
  if w[2] and (not e or tonumber(w[2]) < e) then
    local f = redis.call('ZRANGE', P .. 'w:' .. w[1], '0', '0', 'WITHSCORES')
    if f[2] and (not e or tonumber(f[2]) < e) then e = tonumber(f[2]) end
  end
  return e
end
-- Publishes a wake-up ("<due> {Q:s}:") when one of the due times in `dues` is now the
-- shard's earliest: workers lower their cached next-due of that shard.
local function wake(dues)
  local e = earliest()
  if e and dues[e] then redis.call('PUBLISH', CHAN, fmt(e) .. ' ' .. P) end
end

local function due_from(kind, value, now)
  local due = tonumber(value)
  if kind == 'r' then due = now + due end
  if due < 0 or due > MAX_DUE then return nil end
  return due
end

