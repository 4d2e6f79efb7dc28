-- list_tasks.lua: the first step of a page of one state's tasks (store::list_tasks): the
-- positions (sort key, id) past a start, in the state's order, of this shard (reads only).
-- The store merges the shards' answers, then reads the chosen tasks with task_entries.lua.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..11]: state (0..5), descending ('1' or '0'), start key ms, start id (the start
--   position, exclusive; an empty id is before every id of its key), end key ms (ascending:
--   keys < end; descending: keys >= end), id prefix ('' for any), limit, scan (the most
--   entries to read past the start), queue ('' any, else only tasks of that queue,
--   'default' for those without one: each scanned task's record is read; not for finished
--   tasks, whose records are gone).
-- Returns {bounded, key, id, then key, id per entry}: up to `limit` entries whose id starts
--   with the prefix; bounded = 1 when `scan` entries were read first (the shard may hold more
--   past the position key, id: the store goes on from there), else 0 (key, id: 0, '').
--
-- Where each state is, and what a page reads (docs/dq.md, "Listing and counting"):
--   delayed     KD and the slots (a slot partitions time): both from the start's rank,
--               the slots in index order from the one covering the start: O(log n + scan).
--   dead        KDEAD, by (time, id): O(log n + scan).
--   prefetched, running  KK whole (no index in due order): O(claimed tasks of the shard).
--   finished, cancelled  KDL, in the order they ended: found by binary search on the end
--               time, the ties (tasks ended in one ms, an ack batch) sorted by id, the kind
--               read from KDONE: O(log n + scan + the tie at each end).

local STATE, DESC = tonumber(ARGV[4]), ARGV[5] == '1'
local SK, SI, EK = tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local PREFIX, LIMIT, SCAN = ARGV[9], tonumber(ARGV[10]), tonumber(ARGV[11])
local QUEUE = ARGV[12] or ''
-- Whether the task's queue is QUEUE (a task whose record is gone is not of any).
local function in_queue(id)
  local r = read_rec(bkey(id), id)
  if not r then return false end
  local q = r.q
  if q == '' then q = 'default' end
  return q == QUEUE
end

-- Byte order, as Redis orders the members of one score (Lua's < follows the locale).
local function lt(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
-- Whether (k1, i1) comes before (k2, i2) in the walk's order.
local function first(k1, i1, k2, i2)
  local before
  if k1 ~= k2 then before = k1 < k2 else before = lt(i1, i2) end
  if DESC then return not before and (k1 ~= k2 or i1 ~= i2) end
  return before
end
-- Whether (k, i) is past the start in the walk's order.
local function past(k, i) return first(SK, SI, k, i) end

-- The number of members of ZSET z before (SK, SI), or up to it too when `upto`.
local function rank_of(z, upto)
  local r = redis.call('ZCOUNT', z, '-inf', '(' .. fmt(SK))
  if SI == '' then return r end
  local n = redis.call('ZCOUNT', z, fmt(SK), fmt(SK))
  local lo, hi = 0, n
  while lo < hi do
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', z, fmt(r + mid), fmt(r + mid))[1]
    if lt(m, SI) or (upto and m == SI) then lo = mid + 1 else hi = mid end
  end
  return r + lo
end
-- Appends to ks, ids up to n members of z past the start, in the walk's order; `all`: every
-- member of z is past it (a later slot).
local function zfrom(z, n, ks, ids, all)
  local t
  if DESC then
    local r = all and redis.call('ZCARD', z) or rank_of(z, false)
    if r == 0 then return end
    t = redis.call('ZRANGE', z, fmt(math.max(0, r - n)), fmt(r - 1), 'WITHSCORES')
    for i = #t - 1, 1, -2 do
      ks[#ks + 1] = tonumber(t[i + 1]); ids[#ids + 1] = t[i]
    end
  else
    local r = all and 0 or rank_of(z, true)
    t = redis.call('ZRANGE', z, fmt(r), fmt(r + n - 1), 'WITHSCORES')
    for i = 1, #t, 2 do
      ks[#ks + 1] = tonumber(t[i + 1]); ids[#ids + 1] = t[i]
    end
  end
end
-- The slots' tasks past the start, at least n of them unless the slots end (or pass EK).
local function slots_from(n, ks, ids)
  local name = covering(SK)
  local at
  if name then
    at = tonumber(redis.call('ZSCORE', KW, name))
    zfrom(P .. 'w:' .. name, n, ks, ids, false)
  end
  while #ks < n do
    local t
    if DESC then
      if not at or at < EK then return end
      t = redis.call('ZRANGE', KW, '(' .. fmt(at), '-inf', 'BYSCORE', 'REV', 'LIMIT', '0', '16',
                     'WITHSCORES')
    else
      t = redis.call('ZRANGE', KW, at and '(' .. fmt(at) or '-inf', '+inf', 'BYSCORE', 'LIMIT',
                     '0', '16', 'WITHSCORES')
    end
    if #t == 0 then return end
    for i = 1, #t, 2 do
      at = tonumber(t[i + 1])
      if not DESC and at >= EK then return end
      zfrom(P .. 'w:' .. t[i], n - #ks, ks, ids, true)
      if #ks >= n or (DESC and at < EK) then return end
    end
  end
end
-- Claimed tasks of the state, sorted, past the start.
local function claimed_from(ks, ids)
  local all = redis.call('HGETALL', KK)
  local es = {}
  for i = 1, #all, 2 do
    local st, due = struct.unpack('>BI6', all[i + 1])
    if st == STATE and past(due, all[i]) then es[#es + 1] = {due, all[i]} end
  end
  table.sort(es, function(a, b) return first(a[1], a[2], b[1], b[2]) end)
  for i = 1, #es do ks[i] = es[i][1]; ids[i] = es[i][2] end
end
-- Finished or cancelled tasks past the start: a window of KDL around the start, sorted by
-- (end, id), the tie at its far edge read whole, the kind of each from KDONE (`kinds`).
local function done_from(n, ks, ids, kinds)
  local len = redis.call('LLEN', KDL)
  local function end_at(i) return (struct.unpack('>I6', redis.call('LINDEX', KDL, fmt(i)))) end
  -- The first index whose end is >= k (or > k when `after`).
  local function search(k, after)
    local lo, hi = 0, len
    while lo < hi do
      local mid = math.floor((lo + hi) / 2)
      local e = end_at(mid)
      if e < k or (after and e == k) then lo = mid + 1 else hi = mid end
    end
    return lo
  end
  -- The window [a, b) of KDL: the tie at the start's end time whole (some of it is past the
  -- start), n entries beyond it, and the whole tie at the far edge.
  local a, b
  if DESC then
    b = search(SK, SI ~= '')
    a = math.max(0, search(SK, false) - n)
    if a > 0 then a = search(end_at(a), false) end
  else
    a = search(SK, false)
    b = math.min(len, search(SK, true) + n)
    if b > a and b < len then b = search(end_at(b - 1), true) end
  end
  if a >= b then return end
  local w = redis.call('LRANGE', KDL, fmt(a), fmt(b - 1))
  local es, names = {}, {}
  for i = 1, #w do
    local k, id = struct.unpack('>I6', w[i]), string.sub(w[i], 7)
    if past(k, id) then
      es[#es + 1] = {k, id}
      names[#names + 1] = id
    end
  end
  table.sort(es, function(x, y) return first(x[1], x[2], y[1], y[2]) end)
  local vs = #names > 0 and redis.call('HMGET', KDONE, unpack(names)) or {}
  local kind = {}
  for i = 1, #names do
    if vs[i] then kind[names[i]] = string.byte(vs[i], 7) == 99 and CANCELLED or 3 end
  end
  for i = 1, #es do
    ks[i] = es[i][1]; ids[i] = es[i][2]; kinds[i] = kind[es[i][2]] or -1
  end
end

-- The sources, each in the walk's order: a second one (the slots) to merge with the first.
local ak, ai, bk, bi, kinds = {}, {}, {}, {}, nil
if STATE == PENDING then
  zfrom(KD, SCAN, ak, ai, false)
  slots_from(SCAN, bk, bi)
elseif STATE == DEAD then
  zfrom(KDEAD, SCAN, ak, ai, false)
elseif STATE == PREFETCHED or STATE == RUNNING then
  claimed_from(ak, ai)
else
  kinds = {}
  done_from(SCAN, ak, ai, kinds)
end

local out = {0, 0, ''}
local i, j, scanned, found = 1, 1, 0, 0
local np = #PREFIX
while found < LIMIT do
  local k, id, kind
  if ai[i] and (not bi[j] or first(ak[i], ai[i], bk[j], bi[j])) then
    k, id = ak[i], ai[i]
    if kinds then kind = kinds[i] end
    i = i + 1
  elseif bi[j] then
    k, id = bk[j], bi[j]
    j = j + 1
  else
    break
  end
  if (DESC and k < EK) or (not DESC and k >= EK) then break end
  scanned = scanned + 1
  if (not kinds or kind == STATE) and (np == 0 or string.sub(id, 1, np) == PREFIX) and
     (QUEUE == '' or in_queue(id)) then
    out[#out + 1] = k
    out[#out + 1] = id
    found = found + 1
  end
  if scanned >= SCAN and found < LIMIT then
    out[1], out[2], out[3] = 1, k, id
    break
  end
end
return out
