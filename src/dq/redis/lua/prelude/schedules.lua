-- prelude/schedules.lua: a recurring schedule's record, in the shard's hash P..'sc' (schedule
-- id -> record), and the index P..'si' (a sorted set: schedule id -> its next occurrence ms,
-- for those not paused and not ended), which the materialiser reads by score. A schedule
-- lives on shard hash(id) % S, and its occurrences' task ids "{id}@..." on the same shard
-- (the store shards an id with a hash tag by the tag), so that one script creates them.
--
-- A record is one string:
--   struct '>BI6I6I6I6I6I6I6I6I6': flags (bit 0 paused, bit 1 a next occurrence is known),
--   created, updated, cursor, next, revision, occurrences, triggers, skipped by misfire,
--   skipped by overlap; then I2 length, last task id; I4 length, rule; the rest (the spec as
--   dq::detail::encode_spec writes it: rule, and rest, opaque here but for sc_template).
-- The store's C++ decodes the same bytes (src/dq/redis/store_schedules.cpp). Only the key
-- names are here, in every script; the helpers that read and write records are in
-- schedule_helpers.lua, which only the scripts that write schedules carry (a function in the
-- prelude is a closure made on every call of every script, the hot ones too).

local KSC, KSI = P .. 'sc', P .. 'si'
