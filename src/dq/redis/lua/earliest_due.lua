-- earliest_due.lua: for monitoring (the age of the oldest due task); reads only.
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..]: none.
-- Returns {Redis's clock ms, the shard's earliest delayed due ms or -1}.

local now = now_ms()
return {now, earliest() or -1}
