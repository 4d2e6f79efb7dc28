-- materialise.lua: the materialiser's atomic step, per schedule: if its revision is the one
-- the materialiser planned from (and it is not paused), create the occurrences' tasks, move
-- the cursor and the next occurrence, add the counts; otherwise change nothing. The compare
-- of the revision, not the tasks' ids, makes each occurrence one task: a task that finished
-- and was forgotten is not created again, because its schedule's cursor has moved past it.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..]: per schedule: id, revision, forbid ('1': skip an occurrence whose previous
--   task is pending or claimed), cursor ms, next ms ('' none), skipped by misfire, payload,
--   max_attempts, base ms, cap ms, k; then k pairs (task id, due ms), in instant order.
-- Returns a flat array, per schedule: committed (1|0), tasks created, skipped by overlap.

local now = now_ms()
local out, woke = {}, {}
local i = 4
while i <= #ARGV do
  local id, rev, forbid = ARGV[i], tonumber(ARGV[i + 1]), ARGV[i + 2] == '1'
  local cursor, nxt, smis = tonumber(ARGV[i + 3]), ARGV[i + 4], tonumber(ARGV[i + 5])
  local payload, mx, bs, cp = ARGV[i + 6], tonumber(ARGV[i + 7]), tonumber(ARGV[i + 8]),
                              tonumber(ARGV[i + 9])
  local k = tonumber(ARGV[i + 10])
  local first = i + 11
  i = first + 2 * k
  local r = sc_read(id)
  if not r or r.rev ~= rev or r.paused then
    local n = #out
    out[n + 1], out[n + 2], out[n + 3] = 0, 0, 0
  else
    local created, overlapped, last = 0, 0, r.last
    for j = first, first + 2 * k - 1, 2 do
      local tid, due = ARGV[j], tonumber(ARGV[j + 1])
      local skip = false
      if forbid and last ~= '' then
        local head = redis.call('HGET', bkey(last), last)
        skip = head ~= false and string.byte(head, 1) % 8 == PENDING
      end
      if skip then
        overlapped = overlapped + 1
      else
        if not task_known(tid) then
          sc_create_task(tid, due, now, payload, mx, bs, cp, woke)
          created = created + 1
        end
        last = tid
      end
    end
    r.cursor, r.last = cursor, last
    r.next = nxt ~= '' and tonumber(nxt) or nil
    r.occ, r.smis, r.sovl = r.occ + created, r.smis + smis, r.sovl + overlapped
    r.rev = r.rev + 1
    sc_write(id, r)
    local n = #out
    out[n + 1], out[n + 2], out[n + 3] = 1, created, overlapped
  end
end
if next(woke) then wake(woke) end
return out
