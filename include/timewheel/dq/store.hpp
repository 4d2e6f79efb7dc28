//
// timewheel/dq/store.hpp
//
// The one interface between the durable queue (dq::queue, dq::worker) and where tasks are
// kept: dq::redis_store (Redis, standalone or Cluster) and dq::sqlite_store (one SQLite
// file, <timewheel/dq/sqlite_store.hpp>). Every operation is asynchronous, completes
// through a type-erased handler on the store's executor, and is atomic in the store: a task
// is at every moment in exactly one state.
//
#ifndef TIMEWHEEL_DQ_STORE_HPP
#define TIMEWHEEL_DQ_STORE_HPP

#include <timewheel/dq/error.hpp>
#include <timewheel/dq/task.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/append.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace timewheel::dq {

/// The limits a store enforces on what it is given (bad input fails with a dq::error
/// naming the limit, before anything is written).
struct limits {
    std::size_t max_id_bytes = 256;
    std::size_t max_payload_bytes = 512 * 1024;
};

/// What a worker asks of one claim.
struct claim_options {
    duration horizon{200};   ///< claim tasks due by now + horizon (store's clock)
    std::size_t batch = 256; ///< at most this many tasks in all
    duration lease{30000};   ///< a lease runs until due + lease; renew to keep it longer
    std::string worker;      ///< the worker's name, for the log
    /// The store may start at once (claimed_task::running) up to this many of the tasks it
    /// claims whose due time has passed by its clock, saving their start() call. 0: none,
    /// every task is prefetched. A store may start fewer (or none) and stay correct.
    std::size_t start_due = 0;
};

/// Where tasks live. Implementations: dq::redis_store.
/**
 * The queue and the worker call a store only from its executor. A store reports bad input
 * with dq::error values and leaves itself unchanged; its transport's failures keep their own
 * codes. Every operation is atomic in the store.
 */
class store {
public:
    using executor_type = boost::asio::any_io_executor;

    template <typename Signature>
    using handler = boost::asio::any_completion_handler<Signature>;

    virtual ~store() = default;

    /// The executor on which the store's operations run and complete.
    virtual executor_type get_executor() const = 0;

    /// The limits this store enforces.
    virtual const dq::limits& get_limits() const noexcept = 0;

    // --- The producer's side ------------------------------------------------------------

    /// Creates a task (or finds one with its id). Completes with the task's id (generated
    /// when `t.id` was empty).
    virtual void submit(task t,
                        handler<void(boost::system::error_code, submit_result, std::string)> h) = 0;

    /// Cancels a delayed or prefetched task: it never starts.
    virtual void cancel(std::string id,
                        handler<void(boost::system::error_code, cancel_result)> h) = 0;

    /// Gives a delayed task a new due time; a prefetched one is taken back from its worker
    /// (its lease becomes stale) and delayed to the new time. Errors: not_found, wrong_state
    /// (running, finished, dead, cancelled).
    virtual void reschedule(std::string id, due_time due,
                            handler<void(boost::system::error_code)> h) = 0;

    /// Everything the store knows of a task. Error: not_found.
    virtual void status(std::string id,
                        handler<void(boost::system::error_code, task_status)> h) = 0;

    /// Dead letters, oldest death first, at most `count`, from `cursor` (empty: the start).
    virtual void list_dead(std::string cursor, std::size_t count,
                           handler<void(boost::system::error_code, dead_page)> h) = 0;

    /// Makes a dead task delayed again, due at `due`, with its attempts reset. Error:
    /// not_found (no such dead letter).
    virtual void requeue_dead(std::string id, due_time due,
                              handler<void(boost::system::error_code)> h) = 0;

    /// Forgets a dead task. Error: not_found.
    virtual void delete_dead(std::string id, handler<void(boost::system::error_code)> h) = 0;

    // --- The worker's side --------------------------------------------------------------

    /// First returns expired leases to delayed (or to dead, attempts exhausted), then leases
    /// up to `opt.batch` tasks due by now + `opt.horizon`, each with a fresh random token;
    /// up to `opt.start_due` of those already due by the store's clock may come back running
    /// (their lease then runs until now + `opt.lease`).
    virtual void claim(const claim_options& opt,
                       handler<void(boost::system::error_code, claim_result)> h) = 0;

    /// At the due time: turns prefetched tasks into running, one result per lease, in order.
    virtual void start(std::vector<lease_ref> leases,
                       handler<void(boost::system::error_code, std::vector<start_result>)> h) = 0;

    /// Extends leases to now + `lease`, one result per lease, in order.
    virtual void renew(std::vector<lease_ref> leases, duration lease,
                       handler<void(boost::system::error_code, std::vector<ack_result>)> h) = 0;

    /// Records how runs ended, one result per ack, in order.
    virtual void
    acknowledge(std::vector<ack> acks,
                handler<void(boost::system::error_code, std::vector<ack_result>)> h) = 0;

    /// Gives back prefetched tasks that were not started (a worker stopping): delayed again
    /// at their due time, their attempt not counted.
    virtual void release(std::vector<lease_ref> leases,
                         handler<void(boost::system::error_code)> h) = 0;

    /// Completes at the next wake-up: a submit (or reschedule, requeue, retry) that made a
    /// task its shard's earliest, with that task's due time. One wait at a time; a store
    /// with no way to publish may never complete it. Completes with operation_aborted when
    /// the store is closed.
    virtual void wait_wakeup(handler<void(boost::system::error_code, time_point)> h) = 0;

    /// The store's clock now.
    virtual void now(handler<void(boost::system::error_code, time_point)> h) = 0;

    /// A round trip that proves the store serves operations now, for a readiness probe:
    /// completes with the store's clock, or with the error an operation would meet (a store
    /// that does not answer within its operation timeout fails). dq::sqlite_store runs a query
    /// in a write transaction on its thread, behind what is queued there; dq::redis_store
    /// asks the server for TIME. This default is now(), for stores whose clock is a round trip.
    virtual void probe(handler<void(boost::system::error_code, time_point)> h) {
        now(std::move(h));
    }

    // --- Monitoring ---------------------------------------------------------------------

    /// The store's clock now, and the earliest due time of its delayed tasks (none when no
    /// task is delayed): a delayed task due before `now` waits for a worker, and `now` minus
    /// the earliest is how long the oldest has waited. Prefetched tasks are not counted (a
    /// worker holds them). A read for monitoring, not for the hot path (dq::redis_store
    /// visits every shard). A store that cannot tell completes with
    /// boost::asio::error::operation_not_supported (this default).
    virtual void earliest_due(
        handler<void(boost::system::error_code, time_point, std::optional<time_point>)> h) {
        boost::asio::post(get_executor(),
                          boost::asio::append(std::move(h),
                                              boost::system::error_code(
                                                  boost::asio::error::operation_not_supported),
                                              time_point{}, std::optional<time_point>()));
    }
};

} // namespace timewheel::dq

#endif // TIMEWHEEL_DQ_STORE_HPP
