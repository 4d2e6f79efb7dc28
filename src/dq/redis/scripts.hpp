//
// src/dq/redis/scripts.hpp
//
// The Lua scripts of dq::redis_store (scripts.cpp), one per operation, each
// atomic on one shard. Every shard script takes the same keys and leading arguments:
//
//   KEYS: {Q:s}:d  {Q:s}:l  {Q:s}:k  {Q:s}:done  {Q:s}:dead  {Q:s}:log
//   ARGV[1..10]: key prefix "{Q:s}:", shards, buckets, wake-up channel, done_max,
//                done_retention ms, dead_max, dead_retention ms, log_maxlen, max_due ms
//   ARGV[11..]: the operation's own arguments (see each script)
//
// Record buckets {Q:s}:t:<b> are named inside the scripts (from the id's hash), in the same
// slot as the declared keys.
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
const redis::script& claim();        ///< limit horizon lease worker
const redis::script& start();        ///< (id token)...
const redis::script& renew();        ///< lease (id token)...
const redis::script& ack();          ///< (id token kind retry_after error started ended)...
const redis::script& release();      ///< (id token)...
/// (no arguments) -> {Redis's clock ms, the shard's earliest delayed due ms or -1}
const redis::script& earliest_due();

} // namespace timewheel::dq::detail::scripts

#endif // TIMEWHEEL_DQ_REDIS_SCRIPTS_HPP
