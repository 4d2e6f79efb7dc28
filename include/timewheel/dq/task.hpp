//
// timewheel/dq/task.hpp
//
// The vocabulary of the durable queue: what a producer submits, the states a task goes
// through, what a worker claims, and what it reports back. Times are milliseconds on the
// store's clock (Redis TIME, or the embedded store's system clock), never a node's.
//
#ifndef TIMEWHEEL_DQ_TASK_HPP
#define TIMEWHEEL_DQ_TASK_HPP

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

namespace timewheel::dq {

/// A time on the store's clock, in milliseconds since the Unix epoch.
using time_point = std::chrono::sys_time<std::chrono::milliseconds>;

/// A span of time, in milliseconds.
using duration = std::chrono::milliseconds;

/// The latest due time a task may have: year 9999 (what the stores and JSON can carry).
inline constexpr time_point max_due = time_point(duration(253402300799999));

/// When a task is due: an absolute time, or a delay measured from "now" on the store's clock
/// (turned into an absolute time by the store, so that no node's clock is involved).
using due_time = std::variant<time_point, duration>;

/// How a task that asks to be retried is retried: at most `max_attempts` runs in all, the
/// n-th retry after a delay drawn uniformly from [0, min(cap, base * 2^(n-1))] ("full jitter").
struct retry_policy {
    std::uint32_t max_attempts = 5; ///< runs in all, first included; at least 1
    duration base{1000};            ///< the backoff of the first retry, before jitter
    duration cap{600000};           ///< the largest backoff, before jitter
    friend bool operator==(const retry_policy&, const retry_policy&) = default;
};

/// The states of a task (seed 003's, made precise).
enum class task_state : std::uint8_t {
    delayed,    ///< waiting for its due time (or for a retry)
    prefetched, ///< claimed by a worker that holds it in its local wheel until due
    running,    ///< started by a worker; its handler runs
    finished,   ///< the handler reported success
    dead,       ///< failed permanently, or ran out of attempts (a dead letter)
    cancelled,  ///< cancelled before it started
};

/// The lower-case name of a state ("delayed", "prefetched"...).
constexpr const char* to_string(task_state s) noexcept {
    constexpr const char* names[] = {"delayed",  "prefetched", "running",
                                     "finished", "dead",       "cancelled"};
    return names[static_cast<int>(s)];
}

inline std::ostream& operator<<(std::ostream& os, task_state s) {
    return os << to_string(s);
}

/// What a producer submits.
struct task {
    /// The caller's idempotency key; empty means "generate one" (the result carries it).
    std::string id;
    /// When it is due.
    due_time due = duration(0);
    /// Opaque bytes handed to the worker's handler.
    std::string payload;
    /// How failures are retried.
    retry_policy retry;
    /// When a task with this id is still pending (delayed, or prefetched by a worker, which
    /// then loses it as on a reschedule), give it this due time and payload instead of
    /// answering `exists`. A task that is running, finished, dead or cancelled is never
    /// replaced: the answer is `exists`, nothing changed.
    bool replace = false;
    /// Debounce, with `replace` only: the due time a submit sets (the first one's included)
    /// is never later than the task's creation time (its first submit, on the store's clock)
    /// plus `max_delay`, so that a stream of replacing submits cannot put the task off for
    /// ever. The store caps it in the same atomic step as the replacement: two producers
    /// debouncing one id at once cannot pass it. From 0 to detail::max_backoff_ms.
    std::optional<duration> max_delay{};
    /// The named queue it belongs to (docs/design/queues-and-flow-control.md, Decision 1):
    /// 1 to 64 bytes of [a-z0-9_-], optionally after one namespace of the same alphabet and a
    /// slash (`acme/billing`). Empty (or "default") is the default queue, which the store
    /// keeps as no name, so that a default task's record does not grow. A replacing submit
    /// keeps the queue the task was created in. Anything else fails with invalid_queue.
    std::string queue{};
};

/// The name of the queue every task without one belongs to; it always exists.
inline constexpr const char* default_queue = "default";

/// A named queue's settings (docs/design/queues-and-flow-control.md, Decision 2). Only the
/// retry policy is a setting today: the rest of the design (rates, concurrency, pause,
/// signing secrets) is not built, and the service refuses it rather than accept a limit
/// that does nothing.
struct queue_spec {
    std::string id; ///< the queue's name (see task::queue), never "default"
    /// The retry policy of the queue's tasks that give none (the service applies it on
    /// submit; the library's task always carries a policy). Empty: the service's default.
    std::optional<retry_policy> retry{};
    friend bool operator==(const queue_spec&, const queue_spec&) = default;
};

/// A queue's settings as the store keeps them.
struct queue_status {
    queue_spec spec;
    /// 1 when created, one more on each update: a cache of the settings compares it.
    std::uint64_t generation = 0;
    time_point created{};
    time_point updated{};
};

/// A page of queues, in byte order of their names.
struct queue_page {
    std::vector<queue_status> entries;
    std::string cursor; ///< the next page's cursor (the last name returned); empty at the end
};

/// What a create_queue did.
enum class create_queue_result : std::uint8_t {
    created, ///< a new queue
    exists,  ///< a queue with this name and the same spec exists: nothing done
};

/// What a submit did.
enum class submit_result : std::uint8_t {
    created,  ///< a new task
    exists,   ///< a task with this id is known (pending, finished, dead or cancelled): nothing done
    replaced, ///< a delayed task with this id took the new due time and payload
};

/// What store::submit_many did with one task: its error (its own bad input, or the store's
/// failure for it: each task is answered on its own), what the submit did, and its id.
struct submit_outcome {
    boost::system::error_code ec;
    submit_result result = submit_result::created;
    std::string id;
};

/// What a cancel found.
enum class cancel_result : std::uint8_t {
    cancelled, ///< it was delayed or prefetched: it will never start
    not_found, ///< no such task (never submitted, or its record was trimmed)
    too_late,  ///< it is running, finished, dead or already cancelled: nothing changed
};

/// One attempt of a task, as the execution log keeps it.
struct attempt_record {
    std::uint32_t attempt = 0; ///< 1 for the first run
    std::string worker;        ///< the name of the worker that ran it
    time_point started{};
    time_point ended{};
    /// "success", "retry", "failure", "lease_expired", "cancelled" (a deferral is not an
    /// attempt: it is not logged)
    std::string outcome;
    std::string error; ///< what the handler said (empty on success)
};

/// Everything the store knows of one task.
struct task_status {
    std::string id;
    task_state state = task_state::delayed;
    std::uint32_t attempt = 0; ///< attempts started so far
    time_point due{};          ///< the current due time (next run, for a retry)
    time_point created{};
    time_point updated{};
    retry_policy retry;
    std::string last_error;
    std::string payload;
    std::vector<attempt_record> log; ///< oldest first (may be trimmed)
    /// Its queue's name ("default" for the default queue); empty when the store no longer
    /// knows it (dq::redis_store forgets a finished task's record, queue included).
    std::string queue{};
};

/// A page of dead letters.
struct dead_page {
    struct entry {
        std::string id;
        time_point died{};
        std::uint32_t attempt = 0;
        std::string last_error;
    };
    std::vector<entry> entries;
    std::string cursor; ///< pass back for the next page; empty when this was the last
};

/// What to list: the tasks of one state, in the order of that state's sort key.
/**
 * The sort key is the due time for delayed, prefetched and running tasks, and the time the
 * task ended for finished, cancelled and dead ones; ties are broken by id (byte order).
 * A page goes on from `cursor`, a position (sort key, id), never an offset: a task that stays
 * in the state during the whole walk is returned exactly once; one that moves meanwhile may
 * be missed or seen once. Bad input (limit 0 or over 1000, after >= before, a time out of
 * range, a cursor that does not decode or was made for another state or order) fails with
 * dq::error::invalid_argument (a long id_prefix: id_too_long), and nothing is read.
 */
struct task_query {
    task_state state = task_state::delayed; ///< required: each state has its own index
    bool descending = false;                ///< false: smallest sort key first
    std::optional<time_point> after;        ///< only tasks whose sort key is >= after
    std::optional<time_point> before;       ///< only tasks whose sort key is < before
    std::string id_prefix;                  ///< only ids starting with it; empty: any
    /// Only tasks of this queue ("default" for the default one); empty: any. Not with
    /// task_state::finished (dq::redis_store no longer knows a finished task's queue):
    /// invalid_argument. On Redis the filter reads each scanned task's record.
    std::string queue{};
    std::string cursor;      ///< a previous page's cursor; empty: the start
    std::size_t limit = 100; ///< at most this many entries, 1 to 1000
};

/// A page of tasks (see task_query).
struct task_page {
    struct entry {
        std::string id;
        task_state state = task_state::delayed;
        time_point key{}; ///< the sort key: due time, or the time the task ended
        time_point due{}; ///< the due time (its last one, for a task that ended)
        std::uint32_t attempt = 0;
        std::string last_error;
        std::string payload; ///< empty when the store no longer keeps it (see docs/dq.md)
        std::string queue{}; ///< its queue ("default"); empty when no longer known (finished)
    };
    std::vector<entry> entries;
    /// Pass back in task_query::cursor for the next page; empty after the last one. A page
    /// may be short, even empty, and still carry a cursor, when the store bounded its scan
    /// (an id_prefix on Redis, which has no index on ids): go on.
    std::string cursor;
};

/// How many tasks each state holds, and how late the delayed ones are.
struct task_counts {
    std::uint64_t delayed = 0;
    std::uint64_t prefetched = 0;
    std::uint64_t running = 0;
    std::uint64_t finished = 0; ///< as kept: the stores forget finished tasks by age and count
    std::uint64_t dead = 0;
    std::uint64_t cancelled = 0;          ///< as kept, like finished
    std::uint64_t due_now = 0;            ///< delayed tasks due by `now`: waiting for a worker
    std::optional<time_point> oldest_due; ///< the earliest due time of a delayed task
    time_point now{};                     ///< the store's clock when it counted
};

/// A task as a worker claims it.
struct claimed_task {
    std::string id;
    std::string token; ///< the fencing token of this lease: only its holder may finish the task
    time_point due{};
    std::uint32_t attempt = 0; ///< this run's number, 1 for the first
    std::string payload;
    retry_policy retry;
    /// Started by the claim itself (claim_options::start_due): due by the store's clock,
    /// already running there; no start() call is needed.
    bool running = false;
};

/// What one claim brought.
struct claim_result {
    std::vector<claimed_task> tasks;
    /// The earliest due time still delayed in the shards claimed from (empty if none).
    std::optional<time_point> next_due;
    /// The store's clock when it answered (for the worker's clock offset).
    time_point server_time{};
};

/// A reference to a lease: the task and the token its holder was given.
struct lease_ref {
    std::string id;
    std::string token;
};

/// What a start found for one lease.
enum class start_result : std::uint8_t {
    started,   ///< now running: call the handler
    stale,     ///< cancelled, or leased to someone else since: do not run
    too_early, ///< its due time has not come on the store's clock: arm it again
};

/// How a handler's run ended.
struct outcome {
    enum class kind : std::uint8_t {
        success, ///< done: finished
        retry,   ///< try again, after `retry_after` or the policy's backoff
        failure, ///< permanent: dead, whatever the attempts left
        /// Not run after all (the handler's own flow control held it back: nothing was
        /// done): delayed again by `retry_after` (0 when empty), its attempt given back:
        /// the attempt count stays what it was before the claim, so that the next run has
        /// the same number, and a deferral never makes a task dead. Not logged as an
        /// attempt; `error` becomes the task's last error.
        defer,
    };
    kind what = kind::success;
    std::optional<duration> retry_after; ///< for retry and defer: instead of the backoff
    std::string error;                   ///< for retry, failure and defer: what went wrong

    static outcome success() { return {}; }
    static outcome retry(std::string error, std::optional<duration> after = std::nullopt) {
        return {kind::retry, after, std::move(error)};
    }
    static outcome failure(std::string error) {
        return {kind::failure, std::nullopt, std::move(error)};
    }
    static outcome defer(std::string why, duration after) {
        return {kind::defer, after, std::move(why)};
    }
};

/// One acknowledgement: the lease, how the run ended, and when it ran (for the log).
struct ack {
    lease_ref lease;
    dq::outcome outcome;
    time_point started{}; ///< on the store's clock, as the worker estimates it
    time_point ended{};
};

/// What an ack (or a renew) found.
enum class ack_result : std::uint8_t {
    ok,    ///< recorded
    stale, ///< the token is no longer the task's: nothing changed (fencing)
};

/// The lower-case names of the results ("created", "not_found", "too_early", "stale"...), and
/// the retry policy as "{attempts, base ms, cap ms}", for logs and test messages.
constexpr const char* to_string(submit_result r) noexcept {
    constexpr const char* names[] = {"created", "exists", "replaced"};
    return names[static_cast<int>(r)];
}
constexpr const char* to_string(cancel_result r) noexcept {
    constexpr const char* names[] = {"cancelled", "not_found", "too_late"};
    return names[static_cast<int>(r)];
}
constexpr const char* to_string(start_result r) noexcept {
    constexpr const char* names[] = {"started", "stale", "too_early"};
    return names[static_cast<int>(r)];
}
constexpr const char* to_string(ack_result r) noexcept {
    constexpr const char* names[] = {"ok", "stale"};
    return names[static_cast<int>(r)];
}
constexpr const char* to_string(create_queue_result r) noexcept {
    return r == create_queue_result::created ? "created" : "exists";
}
inline std::ostream& operator<<(std::ostream& os, create_queue_result r) {
    return os << to_string(r);
}
inline std::ostream& operator<<(std::ostream& os, submit_result r) {
    return os << to_string(r);
}
inline std::ostream& operator<<(std::ostream& os, cancel_result r) {
    return os << to_string(r);
}
inline std::ostream& operator<<(std::ostream& os, start_result r) {
    return os << to_string(r);
}
inline std::ostream& operator<<(std::ostream& os, ack_result r) {
    return os << to_string(r);
}
inline std::ostream& operator<<(std::ostream& os, const retry_policy& p) {
    return os << '{' << p.max_attempts << ", " << p.base.count() << " ms, " << p.cap.count()
              << " ms}";
}

} // namespace timewheel::dq

#endif // TIMEWHEEL_DQ_TASK_HPP
