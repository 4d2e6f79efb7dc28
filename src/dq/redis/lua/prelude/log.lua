-- prelude/log.lua: the execution log of each task, in KLOG ({Q:s}:h).

-- The execution log: KLOG is a hash, id -> its attempts, each packed as I4 attempt, I6
-- started, I6 ended, a 1-byte outcome, a 1-byte worker length, the worker, I2 error length,
-- the error (20 bytes and up). Entries are gathered in LOGQ and written by flush_log() with
-- one HMGET and one variadic HSET per script; a finished task's log moves into its KDONE
-- entry (outcomes.lua), and trim() and delete_dead forget a dead one's with the task. A task
-- keeps its last LOG_MAX entries. Unlike a stream scanned by status(), a lookup is O(1) and
-- an ack writes one field per task instead of a 7-field stream entry.
-- LOGQ, LOGN: declared in header.lua, emptied by begin().
local OUTCOME = {success = 's', failure = 'f', retry = 'r', lease_expired = 'l'}
local function log_add(id, e)
  local q = LOGQ[id]
  if q then
    LOGQ[id] = q .. e
  else
    LOGN = LOGN + 1
    LOGQ[LOGN] = id
    LOGQ[id] = e
  end
end
local function log(id, att, worker, started, ended, outcome, err)
  log_add(id, struct.pack('>I4I6I6', att, started, ended) .. OUTCOME[outcome] ..
              string.char(#worker) .. worker .. struct.pack('>I2', #err) .. err)
end
local function log_entries(v)
  local out, pos, n = {}, 1, #v
  while pos <= n do
    local att, started, ended, p2 = struct.unpack('>I4I6I6', v, pos)
    local o = string.sub(v, p2, p2)
    local wl = string.byte(v, p2 + 1)
    local worker = string.sub(v, p2 + 2, p2 + 1 + wl)
    local el = struct.unpack('>I2', v, p2 + 2 + wl)
    local err = string.sub(v, p2 + 4 + wl, p2 + 3 + wl + el)
    out[#out + 1] = {att, worker, started, ended, o, err}
    pos = p2 + 4 + wl + el
  end
  return out
end
-- A packed log cut to its last LOG_MAX entries (an entry takes 20 bytes or more, so a log of
-- at most 20 * LOG_MAX bytes is not read).
local function log_cap(v)
  if #v <= 20 * LOG_MAX then return v end
  local es = log_entries(v)
  if #es <= LOG_MAX then return v end
  local keep = {}
  for k = #es - LOG_MAX + 1, #es do
    local x = es[k]
    keep[#keep + 1] = struct.pack('>I4I6I6', x[1], x[3], x[4]) .. x[5] .. string.char(#x[2]) ..
                      x[2] .. struct.pack('>I2', #x[6]) .. x[6]
  end
  return table.concat(keep)
end
local function flush_log()
  if LOGN == 0 then return end
  local ids = {}
  for i = 1, LOGN do ids[i] = LOGQ[i] end
  local old = redis.call('HMGET', KLOG, unpack(ids))
  local args = {}
  for i = 1, LOGN do
    local id = ids[i]
    local v = LOGQ[id]
    if old[i] then v = log_cap(old[i] .. v) end
    args[#args + 1] = id
    args[#args + 1] = v
  end
  redis.call('HSET', KLOG, unpack(args))
  LOGQ, LOGN = {}, 0
end

