-- schedule_helpers.lua: reading and writing a schedule's record (its layout: prelude/
-- schedules.lua), and creating an occurrence's task, for schedule.lua and materialise.lua.
-- Put after the prelude in the library by src/dq/redis/scripts.cpp; no function of its own.

local function sc_decode(s)
  local f, created, updated, cursor, nxt, rev, occ, trig, smis, sovl, pos =
    struct.unpack('>BI6I6I6I6I6I6I6I6I6', s)
  local nl = struct.unpack('>I2', s, pos)
  local last = string.sub(s, pos + 2, pos + 1 + nl)
  pos = pos + 2 + nl
  local rl = struct.unpack('>I4', s, pos)
  local rule = string.sub(s, pos + 4, pos + 3 + rl)
  local rest = string.sub(s, pos + 4 + rl)
  local hasnext = f % 4 >= 2
  return {paused = f % 2 == 1, created = created, updated = updated, cursor = cursor,
          next = hasnext and nxt or nil, rev = rev, occ = occ, trig = trig, smis = smis,
          sovl = sovl, last = last, rule = rule, rest = rest}
end

local function sc_encode(r)
  local f = (r.paused and 1 or 0) + (r.next and 2 or 0)
  return struct.pack('>BI6I6I6I6I6I6I6I6I6', f, r.created, r.updated, r.cursor, r.next or 0,
                     r.rev, r.occ, r.trig, r.smis, r.sovl) ..
         struct.pack('>I2', #r.last) .. r.last .. struct.pack('>I4', #r.rule) .. r.rule .. r.rest
end

local function sc_read(id)
  local s = redis.call('HGET', KSC, id)
  if not s then return nil end
  return sc_decode(s)
end

-- Writes the record and keeps the index in step: listed at its next occurrence while it
-- runs and has one.
local function sc_write(id, r)
  redis.call('HSET', KSC, id, sc_encode(r))
  if r.paused or not r.next then
    redis.call('ZREM', KSI, id)
  else
    redis.call('ZADD', KSI, fmt(r.next), id)
  end
end

-- Whether a task id is known to the shard (pending, claimed, dead, cancelled or finished).
local function task_known(id)
  return redis.call('HEXISTS', bkey(id), id) == 1 or redis.call('HEXISTS', KDONE, id) == 1
end

-- Creates a delayed task due at `due` (a schedule's occurrence or trigger); the caller
-- checked task_known.
local function sc_create_task(id, due, now, payload, mx, bs, cp, woke)
  write_rec(bkey(id), id, {st = PENDING, created = now, updated = now, due = due, max = mx,
                           base = bs, cap = cp, att = 0, err = '', payload = payload}, 0)
  place(id, due, now)
  woke[due] = true
end
