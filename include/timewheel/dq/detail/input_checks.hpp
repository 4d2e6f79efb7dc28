//
// timewheel/dq/detail/input_checks.hpp
//
// What dq::store checks before any store sees an operation (src/dq/store.cpp): ids, due
// times, retry policies and leases, each failing with the dq::error that names what was
// wrong; the bounds behind them; and how the stores encode a checked due time. One home, so
// that the Redis and SQLite stores refuse exactly the same input.
//
#ifndef TIMEWHEEL_DQ_DETAIL_INPUT_CHECKS_HPP
#define TIMEWHEEL_DQ_DETAIL_INPUT_CHECKS_HPP

#include <timewheel/dq/store.hpp>

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace timewheel::dq::detail {

/// The most leases or acks in one call (Redis's Lua unpack() takes about 8000 values).
inline constexpr std::size_t max_batch = 4000;
/// The largest backoff cap or retry delay, in ms (the stores keep times in 48 bits).
inline constexpr std::int64_t max_backoff_ms = (std::int64_t(1) << 48) - 1;
/// The most tasks one claim may ask for.
inline constexpr std::size_t max_claim_batch = 100000;
/// The most dead letters in one page.
inline constexpr std::size_t max_dead_page = 10000;
/// The most schedules in one page.
inline constexpr std::size_t max_schedule_page = 1000;
/// The most tasks in one page of store::list_tasks.
inline constexpr std::size_t max_task_page = 1000;
/// The most queues a page of store::list_queues holds.
inline constexpr std::size_t max_queue_page = 1000;
/// The longest part of a queue's name (the namespace, and the name after it).
inline constexpr std::size_t max_queue_part = 64;
/// The longest lease token (the stores make 32 hex digits).
inline constexpr std::size_t max_token_bytes = 64;
/// The longest worker name a claim may carry (it goes to the execution log).
inline constexpr std::size_t max_worker_bytes = 200;
/// How much of an outcome's error message the execution log keeps.
inline constexpr std::size_t max_error_bytes = 1024;

/// empty_id, id_too_long (over lim.max_id_bytes) or invalid_id (a NUL byte).
boost::system::error_code check_id(std::string_view id, const limits& lim);

/// due_out_of_range: an absolute time before the epoch or after max_due, or a delay longer
/// than max_due's distance from the epoch.
boost::system::error_code check_due(const due_time& due);

/// A due time as the stores' scripts and queries take it: kind 'a' (absolute, ms since the
/// epoch) or 'r' (relative to the store's clock, ms).
struct encoded_due {
    char kind;
    std::int64_t ms;
};
encoded_due encode_due(const due_time& due) noexcept;

/// A listing's cursor: `<state digit><'a' or 'd'><key ms>.<id in hex>`, printable and safe
/// in a URL, bound to the state and order it was made for.
std::string encode_task_cursor(task_state state, bool descending, const task_position& pos);

/// The position of a cursor made by encode_task_cursor for this state and order; nothing
/// for anything else.
std::optional<task_position> decode_task_cursor(std::string_view cursor, task_state state,
                                                bool descending);

/// Where a page of a listing starts and ends, from a checked query and its decoded cursor:
/// the start position, exclusive (an empty id is before every id of its key; -1 and
/// max_due + 1 are before and after every key), and the far end of the key range (ascending:
/// keys < end_key; descending: keys >= end_key). One home for both stores.
struct list_bounds {
    std::int64_t start_key = 0;
    std::string start_id;
    std::int64_t end_key = 0;
};
list_bounds bounds_of(const task_query& q, const std::optional<task_position>& from);

/// Whether `a` comes before `b` in a listing's order.
inline bool comes_before(const task_position& a, const task_position& b, bool descending) {
    const auto l = std::pair(a.key, std::string_view(a.id));
    const auto r = std::pair(b.key, std::string_view(b.id));
    return descending ? r < l : l < r;
}

/// A task's error, as store::submit refuses it: its id's, payload_too_large, due_out_of_range,
/// its policy's, invalid_argument (max_delay without replace, or out of [0, max_backoff_ms]).
/// An empty id is generated first (`t` keeps it).
boost::system::error_code check_task(task& t, const limits& lim);

/// zero_attempts or invalid_backoff.
boost::system::error_code check_policy(const retry_policy& p);

/// invalid_argument (over max_batch, or a token empty or over max_token_bytes), or an id's
/// error.
boost::system::error_code check_leases(const std::vector<lease_ref>& leases, const limits& lim);

/// A schedule spec's error: its id's (check_id against max_schedule_id_bytes, then
/// invalid_schedule_id), invalid_rule, invalid_cron, unknown_zone, invalid_window,
/// payload_too_large, its retry policy's, invalid_argument (misfire_limit 0).
boost::system::error_code check_schedule(const schedule_spec& spec, const limits& lim);

/// A schedule id's error (as check_schedule).
boost::system::error_code check_schedule_id(std::string_view id, const limits& lim);

/// A spec as the stores keep it: two strings, so that a store can tell a changed rule from a
/// changed template by comparing bytes. `rule`: cron, every, zone, start_at, end_at;
/// `rest`: payload, retry policy, misfire policy and limit, overlap policy. Neither holds
/// the id or the paused flag, which the stores keep apart.
struct encoded_spec {
    std::string rule;
    std::string rest;
};
encoded_spec encode_spec(const schedule_spec& spec);

/// The spec of `e` with `id` and `paused`; false when `e` is not encode_spec's output.
bool decode_spec(std::string_view rule, std::string_view rest, schedule_spec& out);

/// invalid_queue unless `name` is 1 to 64 bytes of [a-z0-9_-], optionally after one
/// namespace of the same alphabet and a slash ("default" passes: callers tell it apart).
boost::system::error_code check_queue_name(std::string_view name);

/// A queue spec's settings as both stores keep them (the name apart): "" for none, or
/// "r<attempts>,<base ms>,<cap ms>". Stores compare these bytes for an idempotent create.
std::string encode_queue_spec(const queue_spec& spec);
/// The settings of `e` into `out` (its id untouched); false when `e` is not
/// encode_queue_spec's output.
bool decode_queue_spec(std::string_view e, queue_spec& out);

/// A generated task id: 12 characters of [0-9A-Za-z] (71 random bits), from a generator of
/// the calling thread seeded by std::random_device.
std::string generate_id();

} // namespace timewheel::dq::detail

#endif // TIMEWHEEL_DQ_DETAIL_INPUT_CHECKS_HPP
