//
// src/dq/redis/scripts.cpp
//
// The Lua scripts of dq::redis_store. docs/dq.md explains the layout; the keys and leading
// arguments are in scripts.hpp.
//
// A record (the task's request and its slow-changing state) is one string:
//   byte 1   flags: bits 0-2 state (0 pending, 4 dead, 5 cancelled), bit 3 a retry policy
//            other than the default follows, bit 4 an attempt count follows, bit 5 an error,
//            bit 6 an update time
//   byte 2   the number of 64-byte chunks it is stored in (1 when stored whole)
//   I6 created, I6 due, [I6 updated], [I4 max_attempts, I6 base, I6 cap], [I4 attempt],
//   [I2 length, error], payload
// It is kept in chunks of at most 64 bytes (Redis's hash-max-listpack-value), fields `id` and
// `id NUL <k-1>`, so that the bucket hash stays a listpack; a record over 8 chunks is stored
// whole. A claimed task's fast-changing state (token, due, prefetched/running, attempt,
// worker, and where its record is: chunk count and bucket) is in {Q:s}:k instead, so that
// claim, start and ack never rewrite a record on the way to success, and a successful ack
// deletes it without reading it or hashing its id.
//
// The per-task paths of claim, start and ack are written for the Lua interpreter, where
// Redis spends most of its time: no table per task (a table grown field by field is rehashed
// several times), no number formatted per task (Redis formats a Lua number argument with
// "%.17g": times common to a call are formatted once, as strings), one concatenation per
// value.
//
// Writes under OOM: Redis refuses a script's first write command that may grow memory
// (deny-oom) when over maxmemory, and lets the rest of the script run once it has written.
// So every script either starts with such a write (submit: the record's HSET) and fails
// whole, or starts with a deletion (cancel, ack, claim) and then completes.
//

#include "scripts.hpp"

#include <string>

namespace timewheel::dq::detail::scripts {

namespace {

const char* const prelude = R"lua(
local P, S, B, CHAN = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4]
local DONE_MAX, DONE_AGE = tonumber(ARGV[5]), tonumber(ARGV[6])
local DEAD_MAX, DEAD_AGE = tonumber(ARGV[7]), tonumber(ARGV[8])
local LOG_MAX, MAX_DUE = tonumber(ARGV[9]), tonumber(ARGV[10])
local KD, KL, KK, KDONE, KDEAD, KLOG = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local CHUNK, MAXCHUNKS = 64, 8
local DEF_MAX, DEF_BASE, DEF_CAP = 5, 1000, 600000
local PENDING, DEAD, CANCELLED = 0, 4, 5
local PREFETCHED, RUNNING = 1, 2

-- Redis passes a Lua number to a command as "%.17g": exact, and without an exponent, for
-- every integer the store uses (ms up to 2^48). string.format would cost a microsecond.
local function fmt(n) return n end

-- Redis seeds math.random the same way in every script call: seed it from the clock (the
-- microseconds) before drawing tokens or jitter.
local T1, T2 = 0, 0
local function now_ms()
  local t = redis.call('TIME')
  T1, T2 = tonumber(t[1]), tonumber(t[2])
  return T1 * 1000 + math.floor(T2 / 1000)
end
local seeded = false
local function seed()
  if not seeded then
    math.randomseed((T1 % 2000) * 1000000 + T2)
    seeded = true
  end
end

-- djb2 modulo 2^32, three bytes per step (h < 2^32 stays exact: h * 33^3 < 2^48).
local function hash(id)
  local h, n, i = 5381, #id, 1
  while i <= n do
    local a, b, c = string.byte(id, i, i + 2)
    h = h * 33 + a
    if b then h = h * 33 + b end
    if c then h = h * 33 + c end
    h = h % 4294967296
    i = i + 3
  end
  return h
end
-- The record's bucket number as it appears in its key (bnum), and the key. '%d' costs half
-- of tostring's '%.14g' and spells an integer below 2^53 the same.
local function bnum(id)
  local h = hash(id)
  return string.format('%d', (h - h % S) / S % B)
end
local function bkey(id) return P .. 't:' .. bnum(id) end
local function chunk_name(id, k) return id .. '\0' .. string.char(k - 1) end
local C2 = '\0\1' -- id .. C2 names a record's second chunk

-- One table constructor (a table grown field by field is rehashed four times).
local function decode(s)
  local f = string.byte(s, 1)
  local created, due, pos = struct.unpack('>I6I6', s, 3)
  local updated = created
  if f >= 64 then updated, pos = struct.unpack('>I6', s, pos) end
  local mx, bs, cp = DEF_MAX, DEF_BASE, DEF_CAP
  if f % 16 >= 8 then mx, bs, cp, pos = struct.unpack('>I4I6I6', s, pos) end
  local att = 0
  if f % 32 >= 16 then att, pos = struct.unpack('>I4', s, pos) end
  local err = ''
  if f % 64 >= 32 then
    local n
    n, pos = struct.unpack('>I2', s, pos)
    err = string.sub(s, pos, pos + n - 1)
    pos = pos + n
  end
  return {st = f % 8, created = created, due = due, updated = updated, max = mx, base = bs,
          cap = cp, att = att, err = err, payload = string.sub(s, pos)}
end

local function encode(r)
  local f = r.st
  local parts = {struct.pack('>I6I6', r.created, r.due)}
  if r.updated ~= r.created then
    f = f + 64
    parts[#parts + 1] = struct.pack('>I6', r.updated)
  end
  if r.max ~= DEF_MAX or r.base ~= DEF_BASE or r.cap ~= DEF_CAP then
    f = f + 8
    parts[#parts + 1] = struct.pack('>I4I6I6', r.max, r.base, r.cap)
  end
  if r.att > 0 then
    f = f + 16
    parts[#parts + 1] = struct.pack('>I4', r.att)
  end
  if #r.err > 0 then
    f = f + 32
    parts[#parts + 1] = struct.pack('>I2', #r.err) .. r.err
  end
  parts[#parts + 1] = r.payload
  local body = table.concat(parts)
  local n = math.ceil((#body + 2) / CHUNK)
  if n > MAXCHUNKS then n = 1 end
  return string.char(f, n) .. body, n
end

-- The record as one string, from the HMGET of its first two chunks; the chunk count.
local function rec_string(bk, id, head, second)
  local n = string.byte(head, 2)
  if n == 1 then return head, 1 end
  if n == 2 then return head .. (second or ''), 2 end
  local parts = {head, second or ''}
  local names = {}
  for k = 3, n do names[#names + 1] = chunk_name(id, k) end
  local more = redis.call('HMGET', bk, unpack(names))
  for j = 1, #more do parts[#parts + 1] = more[j] or '' end
  return table.concat(parts), n
end

local function read_rec(bk, id)
  local v = redis.call('HMGET', bk, id, id .. C2)
  if not v[1] then return nil, 0 end
  local s, n = rec_string(bk, id, v[1], v[2])
  return decode(s), n
end

-- What a claim returns of a record, without decode()'s table (claim's per-task path):
-- attempt, max_attempts, base, cap, payload.
local function claim_fields(s)
  local f = string.byte(s, 1)
  local pos = 15
  if f >= 64 then pos = 21 end
  local mx, bs, cp = DEF_MAX, DEF_BASE, DEF_CAP
  if f % 16 >= 8 then mx, bs, cp, pos = struct.unpack('>I4I6I6', s, pos) end
  local att = 0
  if f % 32 >= 16 then att, pos = struct.unpack('>I4', s, pos) end
  if f % 64 >= 32 then pos = pos + 2 + struct.unpack('>I2', s, pos) end
  return att, mx, bs, cp, string.sub(s, pos)
end

local function write_rec(bk, id, r, old_n)
  local s, n = encode(r)
  if n == 1 then
    redis.call('HSET', bk, id, s)
  else
    local args = {}
    for k = 1, n do
      if k == 1 then args[#args + 1] = id else args[#args + 1] = chunk_name(id, k) end
      args[#args + 1] = string.sub(s, (k - 1) * CHUNK + 1, k * CHUNK)
    end
    redis.call('HSET', bk, unpack(args))
  end
  if old_n > n then
    local d = {}
    for k = n + 1, old_n do d[#d + 1] = chunk_name(id, k) end
    redis.call('HDEL', bk, unpack(d))
  end
end

local function delete_rec(bk, id, n)
  local d = {id}
  for k = 2, n do d[#d + 1] = chunk_name(id, k) end
  redis.call('HDEL', bk, unpack(d))
end

-- A claimed task's state in KK: state, due, attempt, started, the record's chunk count, the
-- lengths of the token and the worker, the token, the worker, then the record's bucket
-- number (as in its key) after its length byte, so that ack finds the record without hashing
-- the id again (a value written before the bucket was kept has padding there: '-' reads as a
-- length over 5, and the bucket is computed). Padded to 65 bytes so that KK is a hashtable
-- (O(1) lookups) even with a few hundred tasks in flight: a listpack would be scanned whole
-- at every lookup.
local KKF = '>BI6I4I6BBB'
local function kk_bucket(v, pos)
  local bl = string.byte(v, pos)
  if bl and bl <= 5 then return string.sub(v, pos + 1, pos + bl) end
  return nil
end
local function kk_decode(v)
  local st, due, att, started, n, tl, wl, pos = struct.unpack(KKF, v)
  return {st = st, due = due, att = att, started = started, n = n,
          token = string.sub(v, pos, pos + tl - 1),
          worker = string.sub(v, pos + tl, pos + tl + wl - 1), b = kk_bucket(v, pos + tl + wl)}
end
local function kk_encode(c)
  local v = struct.pack(KKF, c.st, c.due, c.att, c.started, c.n, #c.token, #c.worker) ..
            c.token .. c.worker
  if c.b then v = v .. string.char(#c.b) .. c.b end
  if #v < 65 then v = v .. string.rep('-', 65 - #v) end
  return v
end
local function kk_token(v) return string.sub(v, 21, 20 + string.byte(v, 19)) end

local function token(now)
  return string.format('%06x%07x%07x', now % 16777216, math.random(0, 268435455),
                       math.random(0, 268435455))
end

-- Where a delayed task waits. Tasks due within AHEAD ms wait in KD, one sorted set; later
-- ones in small sorted sets, {Q:s}:w:<name>, indexed by KW (name -> the slot's start ms).
-- The slots partition time: a slot holds the tasks due from its start to the next slot's
-- start, so a task's slot is the one with the greatest start <= its due time. A slot that
-- would pass SLOT_MAX tasks splits at its median due time, so that each stays a listpack
-- (about 25 bytes a task instead of about 105 in a skiplist) however dense the due times:
-- zset-max-listpack-entries is 128. New slots start on a W-ms boundary. Claim moves the
-- slots coming within reach into KD.
local W, AHEAD, SLOT_MAX = 10000, 10000, 128
local KW = P .. 'wi'
local function covering(due)
  return redis.call('ZRANGE', KW, due, '-inf', 'BYSCORE', 'REV', 'LIMIT', 0, 1)[1]
end
-- Splits the full slot `name` at its median due time (the tasks due from it on move to a new
-- slot); nothing when all its tasks are due at the same ms.
local function split(name)
  local key = P .. 'w:' .. name
  -- A slot whose tasks are all due at one ms cannot split, and stays full: say so from its
  -- two ends, without reading it whole at every submit (which made a burst of tasks due at
  -- one ms cost O(n) each).
  if redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')[2] ==
     redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')[2] then
    return
  end
  local m = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  local first = tonumber(m[2])
  local mid = tonumber(m[2 * math.floor(#m / 4) + 2])
  if mid <= first then
    mid = nil
    for i = 4, #m, 2 do
      local d = tonumber(m[i])
      if d > first then mid = d; break end
    end
    if not mid then return end
  end
  local args = {}
  for i = 1, #m, 2 do
    if tonumber(m[i + 1]) >= mid then
      args[#args + 1] = m[i + 1]
      args[#args + 1] = m[i]
    end
  end
  local new = string.format('%.0f', mid)
  redis.call('ZADD', P .. 'w:' .. new, unpack(args))
  redis.call('ZREMRANGEBYSCORE', key, mid, '+inf')
  redis.call('ZADD', KW, mid, new)
end
local function place(id, due, now)
  if due <= now + AHEAD then
    redis.call('ZADD', KD, due, id)
    return
  end
  local name = covering(due)
  if not name then
    local slot = math.floor(due / W)
    name = tostring(slot)
    redis.call('ZADD', KW, slot * W, name)
  elseif redis.call('ZCARD', P .. 'w:' .. name) >= SLOT_MAX then
    split(name)
    name = covering(due)
  end
  redis.call('ZADD', P .. 'w:' .. name, due, id)
end
local function unplace(id, due)
  if redis.call('ZREM', KD, id) == 1 then return end
  local name = covering(due)
  if not name then return end
  local key = P .. 'w:' .. name
  if redis.call('ZREM', key, id) == 1 and redis.call('EXISTS', key) == 0 then
    redis.call('ZREM', KW, name)
  end
end
-- Moves the slots that start by `limit` into KD (at most 64 slots a call, oldest first).
local function promote(limit)
  local slots = redis.call('ZRANGEBYSCORE', KW, '-inf', limit, 'LIMIT', 0, 64)
  if #slots == 0 then return end
  for _, slot in ipairs(slots) do
    local key = P .. 'w:' .. slot
    local m = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
    local args = {}
    for i = 1, #m, 2 do
      args[#args + 1] = m[i + 1]
      args[#args + 1] = m[i]
      if #args >= 4000 then
        redis.call('ZADD', KD, unpack(args))
        args = {}
      end
    end
    if #args > 0 then redis.call('ZADD', KD, unpack(args)) end
    redis.call('DEL', key)
  end
  redis.call('ZREM', KW, unpack(slots))
end
-- The shard's earliest delayed due time, or nil.
local function earliest()
  local h = redis.call('ZRANGE', KD, 0, 0, 'WITHSCORES')
  local e = h[2] and tonumber(h[2])
  local w = redis.call('ZRANGE', KW, 0, 0, 'WITHSCORES')
  if w[2] and (not e or tonumber(w[2]) < e) then
    local f = redis.call('ZRANGE', P .. 'w:' .. w[1], 0, 0, 'WITHSCORES')
    if f[2] and (not e or tonumber(f[2]) < e) then e = tonumber(f[2]) end
  end
  return e
end
-- Publishes a wake-up ("<due> {Q:s}:") when one of the due times in `dues` is now the
-- shard's earliest: workers lower their cached next-due of that shard.
local function wake(dues)
  local e = earliest()
  if e and dues[e] then redis.call('PUBLISH', CHAN, e .. ' ' .. P) end
end

local function due_from(kind, value, now)
  local due = tonumber(value)
  if kind == 'r' then due = now + due end
  if due < 0 or due > MAX_DUE then return nil end
  return due
end

-- The execution log: KLOG is a hash, id -> its attempts, each packed as I4 attempt, I6
-- started, I6 ended, a 1-byte outcome, a 1-byte worker length, the worker, I2 error length,
-- the error (20 bytes and up). Entries are gathered in LOGQ and written by flush_log() with
-- one HMGET and one variadic HSET per script; trim() and delete_dead forget them with the
-- task. A task keeps its last LOG_MAX entries. Unlike a stream scanned by status(), a lookup
-- is O(1) and an ack writes one field per task instead of a 7-field stream entry.
local LOGQ, LOGN = {}, 0
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
local function flush_log()
  if LOGN == 0 then return end
  local ids = {}
  for i = 1, LOGN do ids[i] = LOGQ[i] end
  local old = redis.call('HMGET', KLOG, unpack(ids))
  local args = {}
  for i = 1, LOGN do
    local id = ids[i]
    local v = LOGQ[id]
    if old[i] then
      v = old[i] .. v
      if #v > 20 * LOG_MAX then
        local es = log_entries(v)
        if #es > LOG_MAX then
          local keep = {}
          for k = #es - LOG_MAX + 1, #es do
            local x = es[k]
            keep[#keep + 1] = struct.pack('>I4I6I6', x[1], x[3], x[4]) .. x[5] ..
                              string.char(#x[2]) .. x[2] .. struct.pack('>I2', #x[6]) .. x[6]
          end
          v = table.concat(keep)
        end
      end
    end
    args[#args + 1] = id
    args[#args + 1] = v
  end
  redis.call('HSET', KLOG, unpack(args))
  LOGQ, LOGN = {}, 0
end

-- Forgets the oldest entries of a done or dead set beyond its age or count (bounded work).
local function trim(key, maxn, age, now)
  local victims = redis.call('ZRANGEBYSCORE', key, '-inf', fmt(now - age), 'LIMIT', 0, 32)
  local over = redis.call('ZCARD', key) - #victims - maxn
  if over > 0 then
    local more = redis.call('ZRANGE', key, #victims, #victims + math.min(over, 32) - 1)
    for _, v in ipairs(more) do victims[#victims + 1] = v end
  end
  if #victims == 0 then return end
  for _, v in ipairs(victims) do
    local bk = bkey(v)
    local head = redis.call('HGET', bk, v)
    if head then delete_rec(bk, v, string.byte(head, 2)) end
  end
  redis.call('ZREM', key, unpack(victims))
  redis.call('HDEL', KLOG, unpack(victims))
end

-- The retry delay after attempt `att` failed: uniform in [0, min(cap, base * 2^(att-1))].
local function backoff(r, att)
  seed()
  local d = r.base * math.pow(2, math.max(att - 1, 0))
  if d > r.cap then d = r.cap end
  return math.floor(math.random() * (d + 1))
end

local function die(bk, id, r, n, now)
  r.st = DEAD
  write_rec(bk, id, r, n)
  redis.call('ZADD', KDEAD, fmt(now), id)
end
)lua";

// ARGV[11..]: id, kind ('a' absolute, 'r' relative), due ms, payload, max_attempts, base, cap,
// replace ('1'). Returns created | exists | replaced.
const char* const submit_body = R"lua(
local id, payload, replace = ARGV[11], ARGV[14], ARGV[18] == '1'
local now = now_ms()
local due = due_from(ARGV[12], ARGV[13], now)
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
if redis.call('ZSCORE', KDONE, id) then return 'exists' end
write_rec(bk, id, {st = PENDING, created = now, updated = now, due = due,
                   max = tonumber(ARGV[15]), base = tonumber(ARGV[16]), cap = tonumber(ARGV[17]),
                   att = 0, err = '', payload = payload}, 0)
place(id, due, now)
wake({[due] = true})
return 'created'
)lua";

// ARGV[11]: id. Returns cancelled | not_found | too_late.
const char* const cancel_body = R"lua(
local id = ARGV[11]
local now = now_ms()
local bk = bkey(id)
local r, n = read_rec(bk, id)
if not r then
  if redis.call('ZSCORE', KDONE, id) then return 'too_late' end
  return 'not_found'
end
if r.st ~= PENDING then return 'too_late' end
local cv = redis.call('HGET', KK, id)
if cv then
  local c = kk_decode(cv)
  if c.st == RUNNING then return 'too_late' end
  redis.call('HDEL', KK, id)
  redis.call('ZREM', KL, id)
else
  unplace(id, r.due)
end
r.st = CANCELLED
r.updated = now
r.payload = ''
write_rec(bk, id, r, n)
redis.call('ZADD', KDONE, fmt(now), id)
trim(KDONE, DONE_MAX, DONE_AGE, now)
return 'cancelled'
)lua";

// ARGV[11..13]: id, kind, due. Returns 'ok' or an error reply.
const char* const reschedule_body = R"lua(
local id = ARGV[11]
local now = now_ms()
local due = due_from(ARGV[12], ARGV[13], now)
if not due then return redis.error_reply('DQ due_out_of_range') end
local bk = bkey(id)
local r, n = read_rec(bk, id)
if not r then
  if redis.call('ZSCORE', KDONE, id) then return redis.error_reply('DQ wrong_state') end
  return redis.error_reply('DQ not_found')
end
if r.st ~= PENDING then return redis.error_reply('DQ wrong_state') end
local cv = redis.call('HGET', KK, id)
if cv then
  if kk_decode(cv).st == RUNNING then return redis.error_reply('DQ wrong_state') end
  redis.call('HDEL', KK, id)
  redis.call('ZREM', KL, id)
else
  unplace(id, r.due)
end
place(id, due, now)
r.updated = now
r.due = due
write_rec(bk, id, r, n)
wake({[due] = true})
return 'ok'
)lua";

// ARGV[11]: id. Returns {state, attempt, due, created, updated, max, base, cap, error,
// payload, then per log entry: attempt, worker, started, ended, outcome, error}.
const char* const status_body = R"lua(
local id = ARGV[11]
local bk = bkey(id)
local r = read_rec(bk, id)
local out
if not r then
  local done = redis.call('ZSCORE', KDONE, id)
  if not done then return redis.error_reply('DQ not_found') end
  out = {'finished', 0, 0, 0, tonumber(done), DEF_MAX, DEF_BASE, DEF_CAP, '', ''}
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
  out = {state, att, due, r.created, r.updated, r.max, r.base, r.cap, r.err, r.payload}
end
local NAMES = {s = 'success', f = 'failure', r = 'retry', l = 'lease_expired'}
local v = redis.call('HGET', KLOG, id)
if v then
  for _, e in ipairs(log_entries(v)) do
    out[#out + 1] = e[1]; out[#out + 1] = e[2]; out[#out + 1] = e[3]
    out[#out + 1] = e[4]; out[#out + 1] = NAMES[e[5]] or e[5]; out[#out + 1] = e[6]
  end
end
return out
)lua";

// ARGV[11..13]: after_id ("" from the start), after_score, count. Entries in death order
// after (after_score, after_id): flat id, died, attempt, error.
const char* const list_dead_body = R"lua(
local after, count = ARGV[11], tonumber(ARGV[13])
local ids
if after ~= '' and redis.call('ZSCORE', KDEAD, after) then
  local rank = redis.call('ZRANK', KDEAD, after)
  ids = redis.call('ZRANGE', KDEAD, rank + 1, rank + count, 'WITHSCORES')
elseif after ~= '' then
  ids = redis.call('ZRANGE', KDEAD, '(' .. ARGV[12], '+inf', 'BYSCORE', 'LIMIT', 0, count,
                   'WITHSCORES')
else
  ids = redis.call('ZRANGE', KDEAD, 0, count - 1, 'WITHSCORES')
end
local out = {}
for i = 1, #ids, 2 do
  local id = ids[i]
  local r = read_rec(bkey(id), id)
  out[#out + 1] = id
  out[#out + 1] = tonumber(ids[i + 1])
  out[#out + 1] = r and r.att or 0
  out[#out + 1] = r and r.err or ''
end
return out
)lua";

// ARGV[11..13]: id, kind, due.
const char* const requeue_dead_body = R"lua(
local id = ARGV[11]
local now = now_ms()
local due = due_from(ARGV[12], ARGV[13], now)
if not due then return redis.error_reply('DQ due_out_of_range') end
if not redis.call('ZSCORE', KDEAD, id) then return redis.error_reply('DQ not_found') end
local bk = bkey(id)
local r, n = read_rec(bk, id)
if not r then
  redis.call('ZREM', KDEAD, id)
  return redis.error_reply('DQ not_found')
end
r.st = PENDING
r.att = 0
r.err = ''
r.updated = now
r.due = due
write_rec(bk, id, r, n)
redis.call('ZREM', KDEAD, id)
place(id, due, now)
wake({[due] = true})
return 'ok'
)lua";

// ARGV[11]: id.
const char* const delete_dead_body = R"lua(
local id = ARGV[11]
if redis.call('ZREM', KDEAD, id) == 0 then return redis.error_reply('DQ not_found') end
local bk = bkey(id)
local head = redis.call('HGET', bk, id)
if head then delete_rec(bk, id, string.byte(head, 2)) end
redis.call('HDEL', KLOG, id)
return 'ok'
)lua";

// ARGV[11..16]: limit, horizon ms, lease ms, worker, start_due, token base. Returns {server
// time, next due or -1, then per task: id, token, due, attempt, payload, max, base, cap,
// running (1: due by now and started here, up to start_due of them; 0: prefetched)}.
// A token is the caller's random base (new for every call) and the task's rank in the call.
const char* const claim_body = R"lua(
local limit, horizon, lease, worker = tonumber(ARGV[11]), tonumber(ARGV[12]),
                                      tonumber(ARGV[13]), ARGV[14]
local start_due, tbase = tonumber(ARGV[15]) or 0, ARGV[16] or ''
local now = now_ms()
seed()
-- Expired leases first: a prefetched task goes back at its due time (it never started); a
-- running one has used its attempt: retried now, or dead when it was the last.
local expired = redis.call('ZRANGEBYSCORE', KL, '-inf', fmt(now), 'LIMIT', 0, 64)
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
  local ids = redis.call('ZRANGEBYSCORE', KD, '-inf', fmt(now + horizon), 'WITHSCORES',
                         'LIMIT', 0, limit)
  local count = #ids / 2
  if count > 0 then
    redis.call('ZREMRANGEBYRANK', KD, 0, count - 1)
    -- Per task: one HMGET, no table, no number formatted (the lease expiry of a due task is
    -- the same string for all), the KK value packed at once.
    local za, ha, nz, no = {}, {}, 0, 2
    local started = 0
    local due_expiry = string.format('%d', now + lease)
    local tl = #tbase + 2
    local tails, pads = {}, {} -- by the bucket number's length: its length byte, the padding
    for i = 1, #ids, 2 do
      local id, due = ids[i], tonumber(ids[i + 1])
      local b = bnum(id)
      local bk = P .. 't:' .. b
      local v = redis.call('HMGET', bk, id, id .. C2)
      if v[1] then
        local s, rn = rec_string(bk, id, v[1], v[2])
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
          local k = (i - 1) / 2
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
        if due <= now then za[nz + 1] = due_expiry else za[nz + 1] = due + lease end
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
      redis.call('ZADD', KL, unpack(za))
      redis.call('HSET', KK, unpack(ha))
    end
  end
end
out[2] = earliest() or -1
return out
)lua";

// ARGV[11..]: (id, token) pairs. Returns one letter per lease: r started, s stale, e too early.
const char* const start_body = R"lua(
local now = now_ms()
local res, ha, ids, nh = {}, {}, {}, 0
for i = 11, #ARGV, 2 do ids[#ids + 1] = ARGV[i] end
local cvs = redis.call('HMGET', KK, unpack(ids))
local started = nil
for j = 1, #ids do
  local cv = cvs[j]
  if not cv or kk_token(cv) ~= ARGV[10 + 2 * j] then
    res[j] = 's'
  elseif struct.unpack('>I6', cv, 2) > now then
    res[j] = 'e'
  else
    if string.byte(cv, 1) ~= RUNNING then
      -- state and started replaced in place: byte 1, bytes 12..17
      started = started or struct.pack('>I6', now)
      ha[nh + 1] = ids[j]
      ha[nh + 2] = string.char(RUNNING) .. string.sub(cv, 2, 11) .. started .. string.sub(cv, 18)
      nh = nh + 2
    end
    res[j] = 'r'
  end
end
if nh > 0 then redis.call('HSET', KK, unpack(ha)) end
return table.concat(res)
)lua";

// ARGV[11]: lease ms; ARGV[12..]: (id, token) pairs. One letter per lease: o ok, s stale.
const char* const renew_body = R"lua(
local now = now_ms()
local lease = tonumber(ARGV[11])
local res = {}
for i = 12, #ARGV, 2 do
  local id, tok = ARGV[i], ARGV[i + 1]
  local cv = redis.call('HGET', KK, id)
  if cv and kk_token(cv) == tok then
    redis.call('ZADD', KL, 'XX', fmt(now + lease), id)
    res[#res + 1] = 'o'
  else
    res[#res + 1] = 's'
  end
end
return table.concat(res)
)lua";

// ARGV[11..]: groups of (id, token, kind s|r|f|d, retry_after ms or -1, error, started,
// ended); d (defer) delays the task by retry_after (-1: 0) and keeps its attempt count.
// One letter per ack: o ok, s stale.
const char* const ack_body = R"lua(
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
)lua";

// ARGV[11..]: (id, token) pairs of prefetched tasks, delayed again at their due time.
const char* const release_body = R"lua(
local now = now_ms()
local res, woke = {}, {}
for i = 11, #ARGV, 2 do
  local id, tok = ARGV[i], ARGV[i + 1]
  local cv = redis.call('HGET', KK, id)
  local c = cv and kk_token(cv) == tok and kk_decode(cv)
  if c and c.st == PREFETCHED then
    redis.call('HDEL', KK, id)
    redis.call('ZREM', KL, id)
    place(id, c.due, now)
    woke[c.due] = true
    res[#res + 1] = 'o'
  else
    res[#res + 1] = 's'
  end
end
if next(woke) then wake(woke) end
return table.concat(res)
)lua";

// For monitoring (the age of the oldest due task): reads only.
const char* const earliest_due_body = R"lua(
local now = now_ms()
return {now, earliest() or -1}
)lua";

const char* const config_body = R"lua(
local s = redis.call('HGET', KEYS[1], 'shards')
if not s then
  redis.call('HSET', KEYS[1], 'shards', ARGV[1], 'buckets', ARGV[2], 'version', '1')
  return 1
end
if s ~= ARGV[1] or redis.call('HGET', KEYS[1], 'buckets') ~= ARGV[2] then return 0 end
return 1
)lua";

redis::script make(const char* body) {
    return redis::script(std::string(prelude) + body);
}

} // namespace

// clang-format off
const redis::script& config() { static const redis::script s{config_body}; return s; }
const redis::script& submit() { static const redis::script s = make(submit_body); return s; }
const redis::script& cancel() { static const redis::script s = make(cancel_body); return s; }
const redis::script& reschedule() { static const redis::script s = make(reschedule_body); return s; }
const redis::script& status() { static const redis::script s = make(status_body); return s; }
const redis::script& list_dead() { static const redis::script s = make(list_dead_body); return s; }
const redis::script& requeue_dead() { static const redis::script s = make(requeue_dead_body); return s; }
const redis::script& delete_dead() { static const redis::script s = make(delete_dead_body); return s; }
const redis::script& claim() { static const redis::script s = make(claim_body); return s; }
const redis::script& start() { static const redis::script s = make(start_body); return s; }
const redis::script& renew() { static const redis::script s = make(renew_body); return s; }
const redis::script& ack() { static const redis::script s = make(ack_body); return s; }
const redis::script& release() { static const redis::script s = make(release_body); return s; }
const redis::script& earliest_due() { static const redis::script s = make(earliest_due_body); return s; }
// clang-format on

} // namespace timewheel::dq::detail::scripts
