-- prelude/records.lua: a task's record (its request and slow-changing state), in its bucket
-- hash P..'t:'..<b>: the id's hash and bucket, encoding, reading and writing in chunks.

-- A record (the task's request and its slow-changing state) is one string:
--   byte 1   flags: bits 0-2 state (0 pending, 4 dead, 5 cancelled), bit 3 a retry policy
--            other than the default follows, bit 4 an attempt count follows, bit 5 an error,
--            bit 6 an update time, bit 7 a queue's name (none: the default queue, so that a
--            default task's record does not grow; records written before queues read so)
--   byte 2   the number of 64-byte chunks it is stored in (1 when stored whole)
--   I6 created, I6 due, [I6 updated], [I4 max_attempts, I6 base, I6 cap], [I4 attempt],
--   [I2 length, error], [I1 length, queue], payload
-- It is kept in chunks of at most 64 bytes (Redis's hash-max-listpack-value), fields `id` and
-- `id NUL <k-1>`, so that the bucket hash stays a listpack; a record over 8 chunks is stored
-- whole. A claimed task's fast-changing state (token, due, prefetched/running, attempt,
-- worker, and where its record is: chunk count and bucket) is in {Q:s}:k instead, so that
-- claim, start and ack never rewrite a record on the way to success, and a successful ack
-- deletes it without reading it or hashing its id.

-- The record's bucket number as it appears in its key. The hash reads the id 8 bytes at a
-- time at three places (its start, its middle, its end: all of an id of up to 24 bytes, and
-- the parts where ids usually differ, counters and random tails, of a longer one), each read
-- one struct.unpack, folded modulo the prime 2^31 - 1 (exact in a double). A hash of every
-- byte cost 1.5 us a task in Lua, claim's largest per-task cost; this one costs 0.3. Ids
-- that differ only in a middle part away from those places share a bucket, which then grows
-- past a listpack: correct, and larger. '%d' spells an integer below 2^53 as it is.
local function fold(x, a, b) return ((x * 8191 + a) % 2147483647 * 8191 + b) % 2147483647 end
local function bnum(id)
  local n = #id
  local x = n
  if n >= 8 then
    x = fold(x, struct.unpack('>I4I4', id, 1))
    if n > 8 then x = fold(x, struct.unpack('>I4I4', id, n - 7)) end
    if n > 16 then x = fold(x, struct.unpack('>I4I4', id, (n - n % 2) / 2 - 3)) end
  else
    for i = 1, n do x = (x * 257 + string.byte(id, i)) % 2147483647 end
  end
  return string.format('%d', x % B)
end
local function bkey(id) return P .. 't:' .. bnum(id) end
local function chunk_name(id, k) return id .. '\0' .. string.char(k - 1) end
local C2 = '\0\1' -- id .. C2 names a record's second chunk

-- One table constructor (a table grown field by field is rehashed four times).
local function decode(s)
  local f = string.byte(s, 1)
  local created, due, pos = struct.unpack('>I6I6', s, 3)
  local updated = created
  if f % 128 >= 64 then updated, pos = struct.unpack('>I6', s, pos) end
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
  local q = ''
  if f >= 128 then
    local n = string.byte(s, pos)
    q = string.sub(s, pos + 1, pos + n)
    pos = pos + 1 + n
  end
  return {st = f % 8, created = created, due = due, updated = updated, max = mx, base = bs,
          cap = cp, att = att, err = err, q = q, payload = string.sub(s, pos)}
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
  if r.q and #r.q > 0 then
    f = f + 128
    parts[#parts + 1] = string.char(#r.q) .. r.q
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
  if f % 128 >= 64 then pos = 21 end
  local mx, bs, cp = DEF_MAX, DEF_BASE, DEF_CAP
  if f % 16 >= 8 then mx, bs, cp, pos = struct.unpack('>I4I6I6', s, pos) end
  local att = 0
  if f % 32 >= 16 then att, pos = struct.unpack('>I4', s, pos) end
  if f % 64 >= 32 then pos = pos + 2 + struct.unpack('>I2', s, pos) end
  if f >= 128 then pos = pos + 1 + string.byte(s, pos) end
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

