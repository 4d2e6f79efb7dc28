-- submit.lua: adds a task, or replaces a pending one's payload and due time.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..11]: id, kind ('a' absolute, 'r' relative), due ms, payload, max_attempts, base ms,
--   cap ms, replace ('1' to replace a pending, unclaimed task).
-- Returns 'created' | 'replaced' | 'exists' (the id is known: pending, finished, cancelled or
--   dead); error 'DQ due_out_of_range'.

local id, payload, replace = ARGV[4], ARGV[7], ARGV[11] == '1'
local now = now_ms()
local due = due_from(ARGV[5], ARGV[6], now)
if not due then return redis.error_reply('DQ due_out_of_range') end
local bk = bkey(id)
local r, n = read_rec(bk, id)
if r then
  if replace and r.st == PENDING and redis.call('HEXISTS', KK, id) == 0 then
    local old = r.due
    r.payload = payload
    r.updated = now
    r.due = due
    write_rec(bk, id, r, n)
    unplace(id, old)
    place(id, due, now)
    wake({[due] = true})
    return 'replaced'
  end
  return 'exists'
end
if redis.call('HEXISTS', KDONE, id) == 1 then return 'exists' end
write_rec(bk, id, {st = PENDING, created = now, updated = now, due = due,
                   max = tonumber(ARGV[8]), base = tonumber(ARGV[9]), cap = tonumber(ARGV[10]),
                   att = 0, err = '', payload = payload}, 0)
place(id, due, now)
wake({[due] = true})
return 'created'
