-- schedule.lua: the producer's operations on one schedule (prelude/schedules.lua).
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4]: the operation; ARGV[5]: the schedule id; then the operation's own:
--   create  rule, rest, paused ('1'|'0') -> 'created' | 'exists' | error DQ schedule_conflict
--   replace rule, rest, paused           -> 'ok' | error DQ not_found
--   get                                  -> the record | error DQ not_found
--   delete                               -> 'ok' | error DQ not_found
--   pause, resume                        -> 'ok' | error DQ not_found
--   trigger                              -> the new task's id | error DQ not_found
-- A restart (create, resume, a changed rule) puts the cursor at Redis's clock now (never
-- before what was materialised) and lists the schedule at it: the next materialiser pass
-- computes its next occurrence from there.

local op, id = ARGV[4], ARGV[5]
local now = now_ms()
local r = sc_read(id)

if op == 'create' then
  if r then
    if r.rule ~= ARGV[6] or r.rest ~= ARGV[7] then
      return redis.error_reply('DQ schedule_conflict')
    end
    return 'exists'
  end
  sc_write(id, {paused = ARGV[8] == '1', created = now, updated = now, cursor = now, next = now,
                rev = 1, occ = 0, trig = 0, smis = 0, sovl = 0, last = '', rule = ARGV[6],
                rest = ARGV[7]})
  return 'created'
end

if not r then return redis.error_reply('DQ not_found') end

if op == 'get' then return redis.call('HGET', KSC, id) end

if op == 'delete' then
  redis.call('HDEL', KSC, id)
  redis.call('ZREM', KSI, id)
  return 'ok'
end

local function restart()
  if now > r.cursor then r.cursor = now end
  r.next = r.cursor
end

if op == 'replace' then
  local paused = ARGV[8] == '1'
  if r.rule ~= ARGV[6] or (r.paused and not paused) then restart() end
  r.rule, r.rest, r.paused, r.updated, r.rev = ARGV[6], ARGV[7], paused, now, r.rev + 1
  sc_write(id, r)
  return 'ok'
end

if op == 'pause' or op == 'resume' then
  local paused = op == 'pause'
  if r.paused ~= paused then
    if not paused then restart() end
    r.paused, r.updated, r.rev = paused, now, r.rev + 1
    sc_write(id, r)
  end
  return 'ok'
end

if op == 'trigger' then
  -- The task template from the rest (dq::detail::encode_spec: "<length>:<bytes>" fields:
  -- max_attempts, base, cap, misfire, misfire_limit, overlap, payload).
  local f, pos = {}, 1
  for k = 1, 7 do
    local c = string.find(r.rest, ':', pos, true)
    local n = tonumber(string.sub(r.rest, pos, c - 1))
    f[k] = string.sub(r.rest, c + 1, c + n)
    pos = c + n + 1
  end
  -- A number whose task is still known (a schedule deleted and created again under its id)
  -- is passed over: a trigger always makes a new task.
  local n, tid = r.trig, nil
  repeat
    n = n + 1
    tid = '{' .. id .. '}@trigger-' .. fmt(n)
  until not task_known(tid)
  local woke = {}
  sc_create_task(tid, now, now, f[7], tonumber(f[1]), tonumber(f[2]), tonumber(f[3]), woke)
  wake(woke)
  r.trig, r.last = n, tid
  sc_write(id, r)
  return tid
end

return redis.error_reply('DQ unknown operation ' .. op)
