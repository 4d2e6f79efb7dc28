-- submit.lua: adds tasks, or replaces pending ones' payloads and due times, in order.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..]: groups of 10, one per task: id, kind ('a' absolute, 'r' relative), due ms,
--   payload, max_attempts, base ms, cap ms, replace ('1' to replace a pending task: delayed,
--   or prefetched, which its worker then loses as on a reschedule), max_delay ms ('' none;
--   only with replace: the due time is capped at the task's creation + max_delay, here, in
--   the same atomic step, so that two nodes debouncing one id cannot pass the cap), queue
--   ('' the default queue; a replaced task keeps its own).
-- Returns one answer per task: 'created' | 'replaced' | 'exists' (the id is known: pending
--   and not replaced, running, finished, cancelled or dead) | the error
--   'DQ due_out_of_range' (that task only).
-- The store sends the submits of one turn of its executor to a shard as one call: the call
-- (the request, the prelude, the clock, the wake-up) cost more than a task's own work.

local now = now_ms()
local out, woke = {}, {}
for i = 4, #ARGV, 10 do
  local id, payload, replace = ARGV[i], ARGV[i + 3], ARGV[i + 7] == '1'
  local due = due_from(ARGV[i + 1], ARGV[i + 2], now)
  local cap = ARGV[i + 8] ~= '' and tonumber(ARGV[i + 8])
  local answer
  if not due then
    answer = redis.error_reply('DQ due_out_of_range')
  else
    local bk = bkey(id)
    local r, n = read_rec(bk, id)
    if r then
      answer = 'exists'
      if replace and r.st == PENDING then
        local cv = redis.call('HGET', KK, id)
        if not cv or kk_decode(cv).st ~= RUNNING then
          if cv then
            redis.call('HDEL', KK, id)
            redis.call('ZREM', KL, id)
          else
            unplace(id, r.due)
          end
          if cap and due > r.created + cap then due = r.created + cap end
          r.payload = payload
          r.updated = now
          r.due = due
          write_rec(bk, id, r, n)
          place(id, due, now)
          woke[due] = true
          answer = 'replaced'
        end
      end
    elseif redis.call('HEXISTS', KDONE, id) == 1 then
      answer = 'exists'
    else
      if cap and due > now + cap then due = now + cap end
      write_rec(bk, id, {st = PENDING, created = now, updated = now, due = due,
                         max = tonumber(ARGV[i + 4]), base = tonumber(ARGV[i + 5]),
                         cap = tonumber(ARGV[i + 6]), att = 0, err = '', q = ARGV[i + 9],
                         payload = payload}, 0)
      place(id, due, now)
      woke[due] = true
      answer = 'created'
    end
  end
  out[#out + 1] = answer
end
if next(woke) then wake(woke) end
return out
