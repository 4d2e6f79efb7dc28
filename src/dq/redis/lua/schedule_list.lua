-- schedule_list.lua: one page of the shard's schedules, in id order (reads only).
-- KEYS, ARGV[1..3]: the shard's keys and the common header (prelude/header.lua).
-- ARGV[4..5]: after id ('' from the start), count.
-- Returns a flat array: id, record, per schedule after `after`, at most count.
-- The shard's ids are sorted here (no index is kept for listing, to keep a schedule's memory
-- small): a page costs O(schedules of the shard), for an administrator's listing.

local after, count = ARGV[4], tonumber(ARGV[5])
local ids = redis.call('HKEYS', KSC)
table.sort(ids)
local out = {}
for i = 1, #ids do
  local id = ids[i]
  if id > after then
    out[#out + 1] = id
    out[#out + 1] = redis.call('HGET', KSC, id)
    if #out == 2 * count then break end
  end
end
return out
