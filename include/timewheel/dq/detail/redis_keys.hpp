//
// timewheel/dq/detail/redis_keys.hpp
//
// The key layout of dq::redis_store, in one table: every key and channel a queue Q uses, what
// it holds, and the name the Lua scripts give it. The store builds its key names from here
// (src/dq/redis/store_impl.cpp) and docs/dq.md cites this file instead of repeating it.
//
// A queue of S shards keeps shard s's keys under the prefix "{Q:s}:", whose hash tag puts them
// in one Cluster slot, so that every script runs on one node. A task or schedule id X is on
// shard hash(X) % S, where an id holding a hash tag ("{tag}", as Redis Cluster reads it) is
// hashed by its tag only: a schedule's occurrences ("{<schedule id>}@...") share its shard. Each
// shard script declares the keys of `shard_keys` as KEYS, in that order, and names the others
// itself from the prefix (ARGV[1], P in the scripts): keys named inside a script still share the
// slot.
//
#ifndef TIMEWHEEL_DQ_DETAIL_REDIS_KEYS_HPP
#define TIMEWHEEL_DQ_DETAIL_REDIS_KEYS_HPP

#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace timewheel::dq::detail::redis_keys {

/// One key of a shard: "{Q:s}:" followed by `suffix`.
struct shard_key {
    std::string_view suffix; ///< after the shard prefix
    std::string_view lua;    ///< its name in the scripts (src/dq/redis/lua/prelude/)
    std::string_view type;   ///< the Redis type
    std::string_view holds;  ///< what it holds
};

/// The keys every shard script takes, in KEYS order (KEYS[1] is `d`).
inline constexpr std::array<shard_key, 6> shard_keys{{
    {"d", "KD", "sorted set", "delayed tasks due within 10 s (AHEAD): id -> due ms"},
    {"l", "KL", "sorted set",
     "leases of claimed tasks: id -> lease expiry ms, and one member that is no task's at +inf "
     "(prelude/claimed.lua, KL_KEEP: keeps it a skiplist)"},
    {"k", "KK", "hash",
     "claimed tasks: id -> state (prefetched, running), due, attempt, started, token, worker, "
     "and where the record is (chunk count, bucket)"},
    {"done", "KDONE", "hash",
     "finished and cancelled tasks: id -> end ms, kind, and a finished task's log, packed"},
    {"dead", "KDEAD", "sorted set", "dead ids: id -> death ms"},
    {"h", "KLOG", "hash", "execution log: id -> its last attempts (log_maxlen), packed"},
}};

/// The keys of a shard that the scripts name themselves from the prefix (not in KEYS).
inline constexpr std::array<shard_key, 7> script_named_keys{{
    {"t:<b>", "bkey(id)", "hash",
     "task records: bucket b = hash(id) % buckets (prelude/records.lua, bnum), id -> the "
     "record in chunks of 64 bytes"},
    {"dl", "KDL", "list", "KDONE's ids in the order they ended, each after its end ms (I6)"},
    {"nc", "KNC", "string",
     "how many of KDONE's tasks are cancelled: count_tasks's finished is HLEN KDONE minus it"},
    {"wi", "KW", "sorted set", "index of the later slots: slot name -> slot start ms"},
    {"w:<start>", "P .. 'w:' .. name", "sorted set",
     "tasks due beyond 10 s, one slot of at most 128: id -> due ms"},
    {"sc", "KSC", "hash",
     "schedules: schedule id -> record (prelude/schedules.lua: flags, times, cursor, next, "
     "revision, counters, last task, spec)"},
    {"si", "KSI", "sorted set",
     "schedules not paused and not ended: schedule id -> next occurrence ms (the "
     "materialiser's index)"},
}};

/// Shard `shard`'s key prefix: "{Q:s}:" (ARGV[1] of every shard script).
inline std::string shard_prefix(std::string_view queue, std::size_t shard) {
    std::string p;
    p.reserve(queue.size() + 8);
    p.append("{").append(queue).append(":").append(std::to_string(shard)).append("}:");
    return p;
}

/// The queue's settings, checked once by every store that opens it: "{Q}:config", a hash
/// (shards, buckets, version: the layout of this table, 3). Read by the `config` script only,
/// which refuses a queue written in another layout.
inline std::string config_key(std::string_view queue) {
    std::string k;
    k.reserve(queue.size() + 9);
    k.append("{").append(queue).append("}:config");
    return k;
}

/// The wake-up channel "Q:wake" (ARGV[4], CHAN in the scripts): a script publishes
/// "<due ms> {Q:s}:" when it makes `due` the shard's earliest delayed time.
/// The named queues' settings records: a hash (field = the queue's name) and the ZSET of
/// their names, in one slot of their own (src/dq/redis/lua/queues.lua).
inline std::string queues_key(std::string_view queue) {
    std::string k;
    k.reserve(queue.size() + 9);
    k.append("{").append(queue).append(":queues}");
    return k;
}
inline std::string queue_names_key(std::string_view queue) {
    return queues_key(queue).append(":names");
}

inline std::string wake_channel(std::string_view queue) {
    std::string c;
    c.reserve(queue.size() + 5);
    c.append(queue).append(":wake");
    return c;
}

} // namespace timewheel::dq::detail::redis_keys

#endif // TIMEWHEEL_DQ_DETAIL_REDIS_KEYS_HPP
