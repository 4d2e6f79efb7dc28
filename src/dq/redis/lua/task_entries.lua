-- task_entries.lua: the second step of a page of tasks (list_tasks.lua chose them): what a
-- page shows of each, if it is still in the state listed (reads only).
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4]: state (0..5); ARGV[5..]: ids.
-- Returns per id: 1, due, attempt, last error, payload, queue ('' default, '?' unknown: a
-- finished task); or 0, 0, 0, '', '', '' when it moved.
-- A finished task's record is gone: its due time is not kept (0), its attempt is its log's
-- last, its payload empty. A cancelled task's record has no payload.

local STATE = tonumber(ARGV[4])
local out = {}
local function add(ok, due, att, err, payload, q)
  out[#out + 1] = ok; out[#out + 1] = due; out[#out + 1] = att
  out[#out + 1] = err; out[#out + 1] = payload; out[#out + 1] = q or ''
end
for i = 5, #ARGV do
  local id = ARGV[i]
  if STATE == 3 then
    local v = redis.call('HGET', KDONE, id)
    if v and string.byte(v, 7) ~= 99 then
      local es = log_entries(string.sub(v, 8))
      add(1, 0, #es > 0 and es[#es][1] or 0, '', '', '?')
    else
      add(0, 0, 0, '', '')
    end
  else
    local r = read_rec(bkey(id), id)
    local cv = r and r.st ~= DEAD and r.st ~= CANCELLED and redis.call('HGET', KK, id)
    if not r then
      add(0, 0, 0, '', '')
    elseif STATE == PREFETCHED or STATE == RUNNING then
      local c = cv and kk_decode(cv)
      if c and c.st == STATE then
        add(1, c.due, STATE == RUNNING and c.att or r.att, r.err, r.payload, r.q)
      else
        add(0, 0, 0, '', '')
      end
    elseif (STATE == PENDING and not cv and r.st ~= DEAD and r.st ~= CANCELLED) or
           (STATE ~= PENDING and r.st == STATE) then
      add(1, r.due, r.att, r.err, r.payload, r.q)
    else
      add(0, 0, 0, '', '')
    end
  end
end
return out
