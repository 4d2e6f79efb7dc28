-- prelude/header.lua: the arguments every shard script of dq::redis_store takes, the
-- constants they share, Redis's clock. The prelude is prelude/*.lua concatenated in the order
-- src/dq/CMakeLists.txt lists them (each part uses the names of the ones before); the store
-- sends it followed by one operation's file (src/dq/redis/scripts.cpp) as one script.
--
-- KEYS (include/timewheel/dq/detail/redis_keys.hpp, shard_keys, in order):
--   1 {Q:s}:d  2 {Q:s}:l  3 {Q:s}:k  4 {Q:s}:done  5 {Q:s}:dead  6 {Q:s}:h
-- ARGV[1..3]: key prefix "{Q:s}:", the queue's numbers packed ('>I6' each: shards,
--   buckets, done_max, done_retention ms, dead_max, dead_retention ms, log_maxlen, max_due
--   ms; tonumber of a decimal string costs about 1,300 instructions, a third of an empty
--   script's), wake-up channel
-- ARGV[4..]: the operation's own arguments (see its file).
-- Other keys of the shard are named from the prefix P: records P..'t:'..<bucket>
-- (records.lua), slots P..'w:'..<start> and their index P..'wi' (slots.lua): see
-- redis_keys.hpp, script_named_keys.
--
-- The per-task paths of claim, start and ack are written for the Lua interpreter, where
-- Redis spends most of its time: no table per task (a table grown field by field is rehashed
-- several times), no number formatted per task (Redis formats a Lua number argument with
-- "%.17g": times common to a call are formatted once, as strings), one concatenation per
-- value.
--
-- Writes under OOM: Redis refuses a script's first write command that may grow memory
-- (deny-oom) when over maxmemory, and lets the rest of the script run once it has written.
-- So every script either starts with such a write (submit: the record's HSET) and fails
-- whole, or starts with a deletion (cancel, ack, claim) and then completes.

local P, CHAN = ARGV[1], ARGV[3]
local S, B, DONE_MAX, DONE_AGE, DEAD_MAX, DEAD_AGE, LOG_MAX, MAX_DUE =
  struct.unpack('>I6I6I6I6I6I6I6I6', ARGV[2])
local KD, KL, KK, KDONE, KDEAD, KLOG = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local CHUNK, MAXCHUNKS = 64, 8
local DEF_MAX, DEF_BASE, DEF_CAP = 5, 1000, 600000
local PENDING, DEAD, CANCELLED = 0, 4, 5
local PREFETCHED, RUNNING = 1, 2

-- A number for a command's argument. Redis formats a Lua number argument with "%.17g" (about
-- 2,300 instructions, glibc's printf_fp); '%d' costs a third of that and spells every integer
-- the store uses (ms up to 2^48) the same. Constant arguments are string literals ('0').
local function fmt(n) return string.format('%d', n) end

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
