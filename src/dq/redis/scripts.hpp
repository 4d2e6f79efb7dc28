//
// src/dq/redis/scripts.hpp
//
// The Lua programs of dq::redis_store, one per operation, each atomic on one shard. Their
// text is in src/dq/redis/lua/<name>.lua, embedded at build time (embed_lua.cmake); each file
// opens with the KEYS and ARGV it takes and what it returns. Every shard script is the
// prelude (lua/prelude/*.lua: the helpers they share, written once) followed by its own file,
// and takes the same keys and leading arguments:
//
//   KEYS: the shard's keys of redis_keys::shard_keys, in order
//         ({Q:s}:d  {Q:s}:l  {Q:s}:k  {Q:s}:done  {Q:s}:dead  {Q:s}:h)
//   ARGV[1..10]: key prefix "{Q:s}:", shards, buckets, wake-up channel, done_max,
//                done_retention ms, dead_max, dead_retention ms, log_maxlen, max_due ms
//   ARGV[11..]: the operation's own arguments
//
// The other keys of a shard (records, slots: redis_keys::script_named_keys) are named inside
// the scripts from the prefix, in the same slot. A redis::script keeps its text's SHA1: the
// store sends EVALSHA, and EVAL once when Redis does not know the script yet.
//
#ifndef TIMEWHEEL_DQ_REDIS_SCRIPTS_HPP
#define TIMEWHEEL_DQ_REDIS_SCRIPTS_HPP

#include <timewheel/redis/script.hpp>

namespace timewheel::dq::detail::scripts {

/// The number of leading ARGV every shard script takes.
inline constexpr int header_args = 10;

const redis::script& config();       ///< KEYS[1] = {Q}:config; ARGV shards, buckets -> 1 | 0
const redis::script& submit();       ///< id kind due payload max base cap replace
const redis::script& cancel();       ///< id
const redis::script& reschedule();   ///< id kind due
const redis::script& status();       ///< id
const redis::script& list_dead();    ///< after_id (or "") after_score count
const redis::script& requeue_dead(); ///< id kind due
const redis::script& delete_dead();  ///< id
const redis::script& claim();        ///< limit horizon lease worker start_due token_base
const redis::script& start();        ///< (id token)...
const redis::script& renew();        ///< lease (id token)...
const redis::script& ack();          ///< (id token kind retry_after error started ended)...
const redis::script& release();      ///< (id token)...
/// (no arguments) -> {Redis's clock ms, the shard's earliest delayed due ms or -1}
const redis::script& earliest_due();
/// operation id [rule rest paused] (prelude/schedules.lua, lua/schedule.lua)
const redis::script& schedule();
const redis::script& schedule_list(); ///< after_id (or "") count
const redis::script& schedule_due();  ///< window batch -> {now ms, (id record)...}
/// state descending start_key start_id end_key prefix limit scan
/// -> {bounded, key, id, (key id)...}
const redis::script& list_tasks();
/// state id... -> (found due attempt error payload)...
const redis::script& task_entries();
/// (no arguments) -> {now, delayed, prefetched, running, finished, dead, cancelled, due now,
/// earliest due or -1}
const redis::script& count_tasks();
/// (id revision forbid cursor next skipped payload max base cap k (task_id due)*k)...
const redis::script& materialise();

} // namespace timewheel::dq::detail::scripts

#endif // TIMEWHEEL_DQ_REDIS_SCRIPTS_HPP
