//
// src/dq/redis/replies.hpp
//
// Reading the scripts' replies (and TIME's) into the store's vocabulary. Kept apart from the
// store so that the shape of each reply, which the Lua files document, is decoded in one
// place, and so that the store's operations read as request building: what a script returns
// is listed atop its lua/<name>.lua.
//
#ifndef TIMEWHEEL_DQ_REDIS_REPLIES_HPP
#define TIMEWHEEL_DQ_REDIS_REPLIES_HPP

#include <timewheel/dq/store.hpp>

#include <timewheel/redis/response.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace timewheel::dq::detail::replies {

/// An integer as Redis wants it in an argument.
std::string number(std::int64_t v);

/// Appends `v` as `bytes` big-endian bytes: the scripts' struct.unpack('>I6') / ('>i8') reads
/// it without the decimal parse (strtod) that tonumber costs. Signed values in two's
/// complement.
void append_packed(std::string& out, std::int64_t v, std::size_t bytes);

/// An integer from a string reply (0 when there is none).
std::int64_t to_int(std::string_view s);

/// A time in ms of the store's clock.
inline time_point ms(std::int64_t v) {
    return time_point(duration(v));
}

/// Checked reads of the integers in a script's reply. A well-formed reply may still carry a
/// value where it would do harm: a cast that truncates (attempts are 32 bits), a time that
/// overflows chrono arithmetic, a negative count. Each throws std::runtime_error naming the
/// field when the element is not an integer or is out of its range (the store answers
/// store_error, as for a reply of the wrong shape).
/// - int_in: [lo, hi];
/// - time_in: a time of the store's clock, [0, max_due] (year 9999);
/// - time_or_none: -1 (none) or a time as time_in;
/// - attempts: [0, 2^32 - 1]; max_attempts: [1, 2^32 - 1] (a task's policy);
/// - backoff: a retry policy's base or cap, [0, detail::max_backoff_ms];
/// - count: a number of tasks, [0, max_count] (a sum over 16384 shards stays in 64 bits).
inline constexpr std::int64_t max_count = (std::int64_t(1) << 48) - 1;
std::int64_t int_in(redis::reply r, std::int64_t lo, std::int64_t hi, const char* what);
time_point time_in(redis::reply r, const char* what);
std::int64_t time_or_none(redis::reply r, const char* what);
std::uint32_t attempts(redis::reply r, const char* what);
std::uint32_t max_attempts(redis::reply r, const char* what);
duration backoff(redis::reply r, const char* what);
std::uint64_t count(redis::reply r, const char* what);

/// Whether `v` is a time of the store's clock, [0, max_due], for the callers that check
/// without throwing.
bool is_time(std::int64_t v) noexcept;

/// The error a script's error reply stands for: a DQ error the script raised, store_full for
/// Redis's OOM refusal, store_error for anything else.
boost::system::error_code script_error(redis::reply r);

/// A submit answer, or nothing when it is none of submit.lua's words.
std::optional<submit_result> submit_reply(std::string_view s);
/// cancel.lua's reply, or nothing when it is not one of its words.
std::optional<cancel_result> cancel_reply(redis::reply r);
/// Whether `r` is the 'ok' of reschedule.lua, requeue_dead.lua and delete_dead.lua.
bool is_ok(redis::reply r);

/// status.lua's reply; throws on a malformed one (a short or ragged array, an element of
/// another type, an unknown state).
task_status status_reply(redis::reply rep, const std::string& id);

/// A task's queue as the scripts return it: '' the default queue ("default"), '?' a task
/// whose record is gone (""), else its name.
std::string queue_name(std::string_view stored);

/// Appends the entries of shard `shard`'s list_dead.lua reply to `page`, up to `count` in
/// all; `last` is the cursor of the last one appended. Throws on a malformed reply (not an
/// array of 4 elements a task, an element of another type).
void dead_reply(redis::reply rep, std::size_t shard, std::size_t count, dead_page& page,
                std::string& last);

/// TIME's reply in ms, or nothing when it is not one.
std::optional<std::int64_t> time_reply(redis::reply rep);

/// The head of a claim.lua reply: Redis's clock and the shard's next due (-1: none).
struct claim_head {
    std::int64_t now = 0;
    std::int64_t next_due = -1;
};

/// Decodes one shard's claim.lua reply, asked for at most `limit` tasks, appending its tasks
/// to `tasks`; throws on a malformed one (more tasks than `limit` included).
claim_head claim_reply(redis::reply rep, std::size_t limit, std::vector<claimed_task>& tasks);

} // namespace timewheel::dq::detail::replies

#endif // TIMEWHEEL_DQ_REDIS_REPLIES_HPP
