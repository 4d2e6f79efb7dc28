-- status.lua: a task's state, request and execution log (reads only).
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4]: id.
-- Returns {state, attempt, due, created, updated, max_attempts, base, cap, error, payload,
--   queue ('' for the default queue, '?' for a finished task, whose record is gone), then
--   per log entry: attempt, worker, started, ended, outcome, error};
--   error 'DQ not_found'.

local id = ARGV[4]
local bk = bkey(id)
local r = read_rec(bk, id)
local out, v
if not r then
  local done = redis.call('HGET', KDONE, id)
  if not done then return redis.error_reply('DQ not_found') end
  out = {'finished', 0, 0, 0, struct.unpack('>I6', done), DEF_MAX, DEF_BASE, DEF_CAP, '', '',
         '?'}
  v = string.sub(done, 8)
else
  local state, att, due = 'delayed', r.att, 0
  if r.st == DEAD then
    state = 'dead'
  elseif r.st == CANCELLED then
    state = 'cancelled'
  else
    local cv = redis.call('HGET', KK, id)
    if cv then
      local c = kk_decode(cv)
      due = c.due
      if c.st == RUNNING then state = 'running'; att = c.att else state = 'prefetched' end
    else
      due = r.due
    end
  end
  out = {state, att, due, r.created, r.updated, r.max, r.base, r.cap, r.err, r.payload, r.q}
  v = redis.call('HGET', KLOG, id)
end
local NAMES = {s = 'success', f = 'failure', r = 'retry', l = 'lease_expired'}
if v then
  for _, e in ipairs(log_entries(v)) do
    out[#out + 1] = e[1]; out[#out + 1] = e[2]; out[#out + 1] = e[3]
    out[#out + 1] = e[4]; out[#out + 1] = NAMES[e[5]] or e[5]; out[#out + 1] = e[6]
  end
end
return out
