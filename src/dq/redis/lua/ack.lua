-- ack.lua: records the outcomes of attempts: done, retried (backoff), deferred or dead.
-- KEYS, ARGV[1..10]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[11..]: groups of 7: id, token, kind ('s' success, 'r' retry, 'f' failure, 'd' defer),
--   retry_after ms or -1, error, started ms, ended ms (<= 0: from the lease, now).
--   A deferral delays the task by retry_after (-1: 0) and keeps its attempt count.
-- Returns one letter per ack: 'o' ok, 's' stale.

local now = now_ms()
local res, valid, gone, all, na, nv = {}, {}, {}, {}, 0, 0
for i = 11, #ARGV, 7 do
  na = na + 1
  all[na] = ARGV[i]
end
local cvs = redis.call('HMGET', KK, unpack(all))
for j = 1, na do
  local id, cv = all[j], cvs[j]
  if cv and kk_token(cv) == ARGV[5 + 7 * j] and not gone[id] then
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
-- at once, the done set's entry with the time formatted once per call.
local done_ids, nd, woke, any_dead, wk = {}, 0, {}, false, {}
local now_s = string.format('%d', now)
for k = 1, nv do
  local j = valid[k]
  local i = 4 + 7 * j
  local id, cv, kind = all[j], cvs[j], ARGV[i + 2]
  local att, cstarted, n, tl, wl = struct.unpack('>I4I6BBB', cv, 8)
  local worker = string.sub(cv, 21 + tl, 20 + tl + wl)
  local b = kk_bucket(cv, 21 + tl + wl)
  local bk = b and P .. 't:' .. b or bkey(id)
  local started, ended = tonumber(ARGV[i + 5]), tonumber(ARGV[i + 6])
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
    done_ids[nd + 1] = now_s
    done_ids[nd + 2] = id
    nd = nd + 2
    local w = wk[worker]
    if not w then
      w = 's' .. string.char(wl) .. worker .. '\0\0'
      wk[worker] = w
    end
    log_add(id, struct.pack('>I4I6I6', att, started, ended) .. w)
  else
    local err, after = ARGV[i + 4], tonumber(ARGV[i + 3])
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
flush_log()
if nd > 0 then
  redis.call('ZADD', KDONE, unpack(done_ids))
  trim(KDONE, DONE_MAX, DONE_AGE, now)
end
if any_dead then trim(KDEAD, DEAD_MAX, DEAD_AGE, now) end
if next(woke) then wake(woke) end
return table.concat(res)
