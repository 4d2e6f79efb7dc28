-- claim.lua: leases the tasks due within a horizon to a worker, after returning expired leases.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..9]: limit, horizon ms, lease ms, worker, start_due (how many of the tasks due by
--   now to start at once), token base (the caller's random prefix, new for every call).
-- Returns {server time ms, the shard's next due ms or -1, then per task: id, token, due,
--   attempt, payload, max_attempts, base, cap, running (1: due by now and started here, up
--   to start_due of them; 0: prefetched)}.
-- A token is the token base and the task's rank in the call (two characters).

local limit, horizon, lease, worker = tonumber(ARGV[4]), tonumber(ARGV[5]),
                                      tonumber(ARGV[6]), ARGV[7]
local start_due, tbase = tonumber(ARGV[8]) or 0, ARGV[9] or ''
local now = now_ms()
seed()
-- Expired leases first: a prefetched task goes back at its due time (it never started); a
-- running one has used its attempt: retried now, or dead when it was the last.
local expired = redis.call('ZRANGEBYSCORE', KL, '-inf', fmt(now), 'LIMIT', '0', '64')
if #expired > 0 then
  local cvs = redis.call('HMGET', KK, unpack(expired))
  redis.call('HDEL', KK, unpack(expired))
  redis.call('ZREM', KL, unpack(expired))
  local woke = {}
  for i, id in ipairs(expired) do
    if cvs[i] then
      local c = kk_decode(cvs[i])
      if c.st == RUNNING then
        local bk = bkey(id)
        local r, n = read_rec(bk, id)
        if r then
          r.att = c.att
          r.updated = now
          r.err = 'lease expired'
          log(id, c.att, c.worker, c.started, now, 'lease_expired', '')
          if c.att >= r.max then
            die(bk, id, r, n, now)
          else
            r.due = now
            write_rec(bk, id, r, n)
            place(id, now, now)
            woke[now] = true
          end
        end
      else
        place(id, c.due, now)
        woke[c.due] = true
      end
    end
  end
  flush_log()
  if next(woke) then wake(woke) end
end
promote(now + horizon + AHEAD)
local out = {now, -1}
if limit > 0 then
  -- Ids only: the due time is the record's (the score is always the record's due time), read
  -- from its bytes, where a score costs Redis a "%.17g" and Lua a strtod.
  local ids = redis.call('ZRANGEBYSCORE', KD, '-inf', fmt(now + horizon), 'LIMIT', '0', ARGV[4])
  local count = #ids
  if count > 0 then
    redis.call('ZREMRANGEBYRANK', KD, '0', fmt(count - 1))
    -- Per task: one HMGET, no table, no number formatted (the lease expiry of a due task is
    -- the same string for all), the KK value packed at once.
    local za, ha, nz, no = {}, {}, 0, 2
    local started = 0
    local due_expiry = string.format('%d', now + lease)
    local tl = #tbase + 2
    local tails, pads = {}, {} -- by the bucket number's length: its length byte, the padding
    for i = 1, count do
      local id = ids[i]
      local b = bnum(id)
      local bk = P .. 't:' .. b
      local v = redis.call('HMGET', bk, id, id .. C2)
      if v[1] then
        local s, rn = rec_string(bk, id, v[1], v[2])
        local due = struct.unpack('>I6', s, 9)
        local att, mx, bs, cp, payload = claim_fields(s)
        att = att + 1
        local st, at, run = PREFETCHED, 0, 0
        -- Nothing starts before its due time by this clock: only tasks due by now.
        if due <= now and started < start_due then
          st, at, run = RUNNING, now, 1
          started = started + 1
        end
        local tok, kv
        if tbase ~= '' then
          local k = i - 1
          tok = tbase .. string.char(48 + k % 64, 48 + (k - k % 64) / 64 % 64)
          local tail = tails[#b]
          if not tail then
            tail = string.char(#b)
            pads[#b] = string.rep('-', 65 - (21 + tl + #worker + #b))
            tails[#b] = tail
          end
          kv = struct.pack(KKF, st, due, att, at, rn, tl, #worker) .. tok .. worker .. tail ..
               b .. pads[#b]
        else
          tok = token(now)
          kv = kk_encode({st = st, due = due, att = att, started = at, n = rn, token = tok,
                          worker = worker, b = b})
        end
        if due <= now then za[nz + 1] = due_expiry else za[nz + 1] = fmt(due + lease) end
        za[nz + 2] = id
        ha[nz + 1] = id
        ha[nz + 2] = kv
        nz = nz + 2
        out[no + 1], out[no + 2], out[no + 3], out[no + 4], out[no + 5] = id, tok, due, att, payload
        out[no + 6], out[no + 7], out[no + 8], out[no + 9] = mx, bs, cp, run
        no = no + 9
      end
    end
    if nz > 0 then
      redis.call('ZADD', KL, '+inf', KL_KEEP, unpack(za))
      redis.call('HSET', KK, unpack(ha))
    end
  end
end
out[2] = earliest() or -1
return out
