-- ack.lua: records the outcomes of attempts: done, retried (backoff), deferred or dead.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..]: groups of 5: id, token, '>c1i8' kind ('s' success, 'r' retry, 'f' failure,
--   'd' defer) and retry_after ms or -1, '>i6i6' started ms and ended ms (<= 0: from the
--   lease, now), error. Numbers packed, as strtod costs about 1,300 instructions a number, in
--   two arguments short enough for the caller's std::string to hold without allocating.
--   A deferral delays the task by retry_after (-1: 0) and keeps its attempt count.
-- Returns one letter per ack: 'o' ok, 's' stale.

local now = now_ms()
local res, valid, gone, all, na, nv = {}, {}, {}, {}, 0, 0
for i = 4, #ARGV, 5 do
  na = na + 1
  all[na] = ARGV[i]
end
local cvs = redis.call('HMGET', KK, unpack(all))
for j = 1, na do
  local id, cv = all[j], cvs[j]
  if cv and kk_token(cv) == ARGV[5 * j] and not gone[id] then
    nv = nv + 1
    valid[nv] = j
    gone[id] = true
    res[j] = 'o'
  else
    res[j] = 's'
  end
end
if nv == 0 then return table.concat(res) end
local ids = {}
for k = 1, nv do ids[k] = all[valid[k]] end
redis.call('HDEL', KK, unpack(ids))
redis.call('ZREM', KL, unpack(ids))
-- Success, per task: the record's HDEL (its bucket from KK: no hashing), a log entry packed
-- at once, its KDONE entry with the end time packed once per call. Only a task past its first
-- attempt can have earlier log entries to carry over from KLOG.
local sid, slog, ns, later, woke, any_dead, wk = {}, {}, 0, {}, {}, false, {}
local end6 = struct.pack('>I6', now)
for k = 1, nv do
  local j = valid[k]
  local i = 5 * j - 1
  local id, cv = all[j], cvs[j]
  local kind, after = struct.unpack('>c1i8', ARGV[i + 2])
  local started, ended = struct.unpack('>i6i6', ARGV[i + 3])
  local att, cstarted, n, tl, wl = struct.unpack('>I4I6BBB', cv, 8)
  local worker = string.sub(cv, 21 + tl, 20 + tl + wl)
  local b = kk_bucket(cv, 21 + tl + wl)
  local bk = b and P .. 't:' .. b or bkey(id)
  if started <= 0 then started = cstarted end
  if ended <= 0 then ended = now end
  if kind == 's' then
    if n == 1 then
      redis.call('HDEL', bk, id)
    elseif n == 2 then
      redis.call('HDEL', bk, id, id .. C2)
    else
      delete_rec(bk, id, n)
    end
    local w = wk[worker]
    if not w then
      w = 's' .. string.char(wl) .. worker .. '\0\0'
      wk[worker] = w
    end
    ns = ns + 1
    sid[ns] = id
    slog[ns] = struct.pack('>I4I6I6', att, started, ended) .. w
    if att > 1 then later[#later + 1] = ns end
  else
    local err = ARGV[i + 4]
    local r, rn = read_rec(bk, id)
    if r and kind == 'd' then
      -- A deferral: nothing ran. The record keeps its attempt count (the one before the
      -- claim) and nothing is logged.
      r.err = err
      r.updated = now
      if after < 0 then after = 0 end
      r.due = now + after
      write_rec(bk, id, r, rn)
      place(id, r.due, now)
      woke[r.due] = true
    elseif r then
      r.att = att
      r.err = err
      r.updated = now
      if kind == 'f' then
        log(id, att, worker, started, ended, 'failure', err)
        die(bk, id, r, rn, now)
        any_dead = true
      else
        log(id, att, worker, started, ended, 'retry', err)
        if att >= r.max then
          die(bk, id, r, rn, now)
          any_dead = true
        else
          local delay = after
          if delay < 0 then delay = backoff(r, att) end
          r.due = now + delay
          write_rec(bk, id, r, rn)
          place(id, r.due, now)
          woke[r.due] = true
        end
      end
    end
  end
end
if #later > 0 then
  local ids = {}
  for k = 1, #later do ids[k] = sid[later[k]] end
  local old = redis.call('HMGET', KLOG, unpack(ids))
  for k = 1, #later do
    if old[k] then slog[later[k]] = log_cap(old[k] .. slog[later[k]]) end
  end
  redis.call('HDEL', KLOG, unpack(ids))
end
for k = 1, ns do done_add(sid[k], end6, 'f', slog[k]) end
flush_log()
flush_done(now)
if any_dead then trim(KDEAD, DEAD_MAX, DEAD_AGE, now) end
if next(woke) then wake(woke) end
return table.concat(res)
