//
// timewheel/dq/error.hpp
//
// The errors of the durable queue: bad input (named precisely, nothing written), what a
// store found (no such task, a stale lease), and a store that cannot take more.
//
#ifndef TIMEWHEEL_DQ_ERROR_HPP
#define TIMEWHEEL_DQ_ERROR_HPP

#include <boost/system/error_code.hpp>

#include <ostream>
#include <type_traits>

namespace timewheel::dq {

/// What went wrong, as a boost::system::error_code in dq::error_category().
/**
 * Failures of the store's transport keep their own codes (redis::error::request_timeout,
 * redis::error::closed...); cancellation is boost::asio::error::operation_aborted.
 */
enum class error {
    empty_id = 1,      ///< an id is required here and was empty
    id_too_long,       ///< the id is longer than limits::max_id_bytes
    invalid_id,        ///< the id holds bytes the store cannot key on (see the store's docs)
    payload_too_large, ///< the payload is longer than limits::max_payload_bytes
    due_out_of_range,  ///< the due time is before the epoch or after dq::max_due
    zero_attempts,     ///< retry_policy::max_attempts is 0
    invalid_backoff,   ///< retry_policy's base or cap is negative, or base > cap
    invalid_argument,  ///< another argument is out of range (a batch of 0, a negative lease...)
    not_found,         ///< no such task (or no such dead letter)
    wrong_state,       ///< the task is not in a state that allows this (e.g. reschedule a dead one)
    stale_lease,       ///< the lease's token is no longer the task's (fencing)
    store_full,        ///< the store has no room to write (SQLite: a full disk; Redis: OOM)
    store_error,       ///< the store answered with an error the queue did not expect
    not_configured,    ///< the queue's config in the store differs from the one given
    store_timeout,     ///< the store did not complete the operation within its timeout
    schedule_conflict, ///< a schedule with this id exists with another spec
    invalid_schedule_id, ///< a schedule id holds '{' or '}' (an occurrence's id makes it a hash
                         ///< tag)
    invalid_rule,        ///< a schedule needs exactly one of a cron expression and an interval > 0
    invalid_cron,        ///< the cron expression does not parse (cron::parse_error says where)
    unknown_zone,        ///< the time zone is not in the tz database (or not UTC with an interval)
    invalid_window,      ///< start_at or end_at out of range, or end_at not after start_at
    not_replicated,  ///< the write was made but fewer replicas than asked acknowledged it in time
                     ///< (dq::redis_store_options::wait_replicas): it may be lost in a failover
    store_too_old,   ///< the store's server lacks what the queue needs (dq::redis_store: Redis
                     ///< Functions, Redis 7.0 or later)
    invalid_queue,   ///< a queue name is not 1-64 bytes of [a-z0-9_-] with at most one `ns/`
    queue_conflict,  ///< a queue with this name exists with another spec
    queue_not_empty, ///< the queue still holds tasks (delayed, claimed or dead): not deleted
    default_queue,   ///< the default queue cannot be created, changed or deleted
};

/// The category of dq::error values; its name is "timewheel.dq".
const boost::system::error_category& error_category() noexcept;

/// Makes an error_code from a dq::error (found by argument-dependent lookup).
inline boost::system::error_code make_error_code(error e) noexcept {
    return {static_cast<int>(e), error_category()};
}

/// Writes the message of `e`.
inline std::ostream& operator<<(std::ostream& os, error e) {
    return os << make_error_code(e).message();
}

} // namespace timewheel::dq

/// @cond
template <>
struct boost::system::is_error_code_enum<timewheel::dq::error> : std::true_type {};
/// @endcond

#endif // TIMEWHEEL_DQ_ERROR_HPP
