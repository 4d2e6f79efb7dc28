-- prelude/claimed.lua: a claimed task's state in KK ({Q:s}:k), and lease tokens.

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


-- KL's first member, at +inf: never due, never a task's (an id has no NUL byte), longer than
-- zset-max-listpack-value (64), so that KL is a skiplist from its first claim and stays one.
-- A listpack of the leases in flight (up to 128) cost every claimed task a scan of it to
-- insert (about 15,000 instructions a task at 100 tasks in flight on a shard) and every ack
-- another to remove; the skiplist costs O(log n). The member also keeps KL from being deleted
-- and made again at every batch. Added first in each claim's ZADD (Redis makes the key a
-- skiplist when its first member is long, and converts a listpack KL of an older version).
-- (A literal: the library's top level, run at FUNCTION LOAD, cannot reach `string`.)
local KL_KEEP = '\0' ..
                'lease set kept a skiplist by this member, never a task id: -----'
