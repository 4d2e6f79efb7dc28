-- prelude/header.lua: the arguments every shard function of dq::redis_store takes, the
-- constants they share, Redis's clock. The prelude is prelude/*.lua concatenated in the order
-- src/dq/CMakeLists.txt lists them (each part uses the names of the ones before); the store
-- loads it once per connection as the top of one library of Redis Functions (FUNCTION LOAD),
-- followed by every operation's file as a function of its own (src/dq/redis/scripts.cpp).
-- The library's code runs once, at load: the helpers below are made once, not per call (as
-- a script's prelude was, about 50 closures and 50,000 instructions an empty call).
--
-- KEYS (include/timewheel/dq/detail/redis_keys.hpp, shard_keys, in order):
--   1 {Q:s}:d  2 {Q:s}:l  3 {Q:s}:k  4 {Q:s}:done  5 {Q:s}:dead  6 {Q:s}:h
-- ARGV[1..3]: key prefix "{Q:s}:", the queue's numbers packed ('>I6' each: shards,
--   buckets, done_max, done_retention ms, dead_max, dead_retention ms, log_maxlen, max_due
--   ms; tonumber of a decimal string costs about 1,300 instructions), wake-up channel
-- ARGV[4..]: the operation's own arguments (see its file).
-- Other keys of the shard are named from the prefix P: records P..'t:'..<bucket>
-- (records.lua), slots P..'w:'..<start> and their index P..'wi' (slots.lua): see
-- redis_keys.hpp, script_named_keys.
--
-- Each function starts with begin(KEYS, ARGV), which sets the library's per-call values
-- below from its keys and arguments and empties what a call gathers (the log and done
-- queues): Redis runs one function at a time, so they are the call's own, and the helpers
-- read them as they read a script's locals. A function may not create globals (Redis refuses
-- the load): every name here is a local of the library.
--
-- The per-task paths of claim, start and ack are written for the Lua interpreter, where
-- Redis spends most of its time: no table per task (a table grown field by field is rehashed
-- several times), no number formatted per task (Redis formats a Lua number argument with
-- "%.17g": times common to a call are formatted once, as strings), one concatenation per
-- value.
--
-- Writes under OOM: Redis refuses a function without the flag allow-oom before it runs when
-- over maxmemory, and lets one with it run whole (src/dq/redis/scripts.cpp sets the flags).
-- So submit and schedule (which grow memory) fail whole, while cancel, ack, claim, start,
-- renew and release (which end leases and free memory) complete; the read-only functions
-- are flagged no-writes, which Redis runs under OOM too.

-- The call's values, set by begin(): the header's, the key names, the queues of log.lua and
-- outcomes.lua, the clock.
local P, CHAN, S, B, DONE_MAX, DONE_AGE, DEAD_MAX, DEAD_AGE, LOG_MAX, MAX_DUE
local KD, KL, KK, KDONE, KDEAD, KLOG, KDL, KNC, KW, KSC, KSI
local LOGQ, LOGN, DONEH, DONEL, DONEN
local T1, T2, seeded = 0, 0, false
local function begin(KEYS, ARGV)
  P, CHAN = ARGV[1], ARGV[3]
  S, B, DONE_MAX, DONE_AGE, DEAD_MAX, DEAD_AGE, LOG_MAX, MAX_DUE =
    struct.unpack('>I6I6I6I6I6I6I6I6', ARGV[2])
  KD, KL, KK, KDONE, KDEAD, KLOG = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
  -- outcomes.lua, slots.lua, schedules.lua
  KDL, KNC, KW, KSC, KSI = P .. 'dl', P .. 'nc', P .. 'wi', P .. 'sc', P .. 'si'
  LOGQ, LOGN, DONEH, DONEL, DONEN = {}, 0, {}, {}, 0
  T1, T2, seeded = 0, 0, false
end
local CHUNK, MAXCHUNKS = 64, 8
local DEF_MAX, DEF_BASE, DEF_CAP = 5, 1000, 600000
local PENDING, DEAD, CANCELLED = 0, 4, 5
local PREFETCHED, RUNNING = 1, 2

-- A number for a command's argument. Redis formats a Lua number argument with "%.17g" (about
-- 2,300 instructions, glibc's printf_fp); '%d' costs a third of that and spells every integer
-- the store uses (ms up to 2^48) the same. Constant arguments are string literals ('0').
local function fmt(n) return string.format('%d', n) end

-- Seed math.random from the clock (the microseconds) before drawing tokens or jitter: Redis
-- seeds it the same way in every script call, and keeps one sequence across function calls.
local function now_ms()
  local t = redis.call('TIME')
  T1, T2 = tonumber(t[1]), tonumber(t[2])
  return T1 * 1000 + math.floor(T2 / 1000)
end
local function seed()
  if not seeded then
    math.randomseed((T1 % 2000) * 1000000 + T2)
    seeded = true
  end
end
