//
// src/dq/redis/scripts.hpp
//
// The Lua programs of dq::redis_store, one per operation, each atomic on one shard: the
// functions of one library of Redis Functions (Redis 7.0 or later), called with FCALL. Their
// text is in src/dq/redis/lua/<name>.lua, embedded at build time (embed_lua.cmake); each file
// opens with the KEYS and ARGV it takes and what it returns. The library is the prelude
// (lua/prelude/*.lua: the helpers the functions share, made once at load) and
// lua/schedule_helpers.lua, then each file as a function whose body starts with begin(KEYS,
// ARGV) (lua/prelude/header.lua). Every shard function takes the same keys and leading
// arguments:
//
//   KEYS: the shard's keys of redis_keys::shard_keys, in order
//         ({Q:s}:d  {Q:s}:l  {Q:s}:k  {Q:s}:done  {Q:s}:dead  {Q:s}:h)
//   ARGV[1..10]: key prefix "{Q:s}:", shards, buckets, wake-up channel, done_max,
//                done_retention ms, dead_max, dead_retention ms, log_maxlen, max_due ms
//   ARGV[11..]: the operation's own arguments
//
// The other keys of a shard (records, slots: redis_keys::script_named_keys) are named inside
// the scripts from the prefix, in the same slot. The library is named after its text's SHA1
// (timewheel_<12 hex digits>, redis::library), and so are its functions
// (timewheel_<hash>_<name>): two versions of timewheel on one Redis each call their own. The
// connection loads it before its first FCALL (redis::library).
//
#ifndef TIMEWHEEL_DQ_REDIS_SCRIPTS_HPP
#define TIMEWHEEL_DQ_REDIS_SCRIPTS_HPP

#include <timewheel/redis/script.hpp>

#include <string>

namespace timewheel::dq::detail::scripts {

/// One function of the library: what request::push_fcall takes.
struct function {
    const redis::library* library;
    std::string name;   ///< timewheel_<hash>_<operation>
    bool writes = true; ///< false for the no-writes ones: no WAIT after them
};

/// The library of every function below.
const redis::library& library();

/// The number of leading ARGV every shard script takes.
inline constexpr int header_args = 10;

const function& config();       ///< KEYS[1] = {Q}:config; ARGV shards, buckets -> 1 | 0
const function& submit();       ///< id kind due payload max base cap replace
const function& cancel();       ///< id
const function& reschedule();   ///< id kind due
const function& status();       ///< id
const function& list_dead();    ///< after_id (or "") after_score count
const function& requeue_dead(); ///< id kind due
const function& delete_dead();  ///< id
const function& claim();        ///< limit horizon lease worker start_due token_base
const function& start();        ///< (id token)...
const function& renew();        ///< lease (id token)...
const function& ack();          ///< (id token kind retry_after error started ended)...
const function& release();      ///< (id token)...
/// (no arguments) -> {Redis's clock ms, the shard's earliest delayed due ms or -1}
const function& earliest_due();
/// operation id [rule rest paused] (prelude/schedules.lua, lua/schedule.lua)
const function& schedule();
const function& schedule_list(); ///< after_id (or "") count
const function& schedule_due();  ///< window batch -> {now ms, (id record)...}
/// state descending start_key start_id end_key prefix limit scan
/// -> {bounded, key, id, (key id)...}
const function& list_tasks();
/// state id... -> (found due attempt error payload)...
const function& task_entries();
/// (no arguments) -> {now, delayed, prefetched, running, finished, dead, cancelled, due now,
/// earliest due or -1}
const function& count_tasks();
/// (id revision forbid cursor next skipped payload max base cap k (task_id due)*k)...
const function& materialise();
/// KEYS {Q:queues} {Q:queues}:names; create|update|delete name [spec] (lua/queues.lua)
const function& queues();
/// KEYS as queues(); get name | list start prefix count (lua/queues_read.lua)
const function& queues_read();

} // namespace timewheel::dq::detail::scripts

#endif // TIMEWHEEL_DQ_REDIS_SCRIPTS_HPP
