-- prelude/schedules.lua: a recurring schedule's record, in the shard's hash P..'sc' (schedule
-- id -> record), and the index P..'si' (a sorted set: schedule id -> its next occurrence ms,
-- for those not paused and not ended), which the materialiser reads by score. A schedule
-- lives on shard hash(id) % S, and its occurrences' task ids "{id}@..." on the same shard
-- (the store shards an id with a hash tag by the tag), so that one script creates them.
--
-- A record is one string:
--   struct '>BI6I6I6I6I6I6I6I6I6': flags (bit 0 paused, bit 1 a next occurrence is known),
--   created, updated, cursor, next, revision, occurrences, triggers, skipped by misfire,
--   skipped by overlap; then I2 length, last task id; I4 length, rule; the rest (the spec as
--   dq::detail::encode_spec writes it: rule, and rest, opaque here but for sc_template).
-- The store's C++ decodes the same bytes (src/dq/redis/store_schedules.cpp).

local KSC, KSI = P .. 'sc', P .. 'si'

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
