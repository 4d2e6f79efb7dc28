//
// timewheel/dq/sqlite_store.hpp
//
// The durable queue's embedded store: one SQLite database file, for one node with nothing
// else to run (docs/dq.md, "The SQLite store").
//
// Every operation runs on a thread of the store's own, which owns the one connection:
// SQLite's calls block, and a commit waits for fsync, so they never run on the thread that
// drives the wheel. Operations that arrive while a transaction is being written go into the
// next one (group commit): N submits cost one fsync, not N. An operation completes, on the
// store's executor, only once its transaction is durable (WAL, synchronous=FULL).
//
// Several threads, each with its own io_context, share one database through stores made
// with the sharing constructor: one file, one writer thread, one group commit for all, and
// each store completing on its own executor.
//
#ifndef TIMEWHEEL_DQ_SQLITE_STORE_HPP
#define TIMEWHEEL_DQ_SQLITE_STORE_HPP

#include <timewheel/dq/store.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace timewheel::dq {

/// The settings of a dq::sqlite_store.
struct sqlite_store_options {
    /// The database file, created (with its tables) if missing. Its directory must exist.
    std::string path = "timewheel-dq.db";

    /// What the store accepts.
    dq::limits limits{};

    /// Finished and cancelled tasks are remembered (so that a re-submit answers `exists`) for
    /// this long, and at most `done_max` of them.
    duration done_retention = std::chrono::hours(24 * 7);
    std::size_t done_max = 1000000;

    /// Dead letters are kept this long, and at most `dead_max` of them.
    duration dead_retention = std::chrono::hours(24 * 30);
    std::size_t dead_max = 1000000;

    /// The execution log keeps a task's attempts as long as the task is remembered, and at
    /// most this many entries in all (the oldest go first).
    std::size_t log_max = 1000000;

    /// The most operations written in one transaction (one fsync).
    std::size_t max_group = 1024;

    /// How long an operation may take, from its call to its completion, before it completes
    /// with dq::error::store_timeout (zero: no limit). A stall of the disk (a write or an
    /// fsync that does not return) then fails the operations queued behind it in time,
    /// instead of holding their callers. An operation that timed out before the store's
    /// thread started it is never run; one that was being written when its time ran out
    /// may have been done (like a Redis request that timed out). Also SQLite's busy timeout
    /// when the file is opened: how long to wait for another connection's lock.
    duration operation_timeout{0};

    /// false: synchronous=NORMAL, a commit does not wait for fsync (an acknowledged submit
    /// may be lost in a power failure, not in a crash of the process). For tests and
    /// benchmarks of what fsync costs.
    bool fsync = true;

    /// With `fsync`, whether the worker's own writes wait for it too: claim, start, renew,
    /// acknowledge, release. By default they do not (their transaction commits with
    /// synchronous=NORMAL): what a caller was promised (a submit, cancel, reschedule, a dead
    /// letter's retry or deletion, a schedule's change) is on disk when it completes, while a
    /// power failure may undo the worker's last transitions, not a crash of the process (the
    /// WAL is written either way). Undone, a started or acknowledged task is claimed again
    /// when its lease runs out and its handler runs once more, which at-least-once allows;
    /// its attempt count is then one lower than the calls made. A later fsync'd commit
    /// covers every commit before it (the WAL is appended in order), so a power failure
    /// never keeps a write and loses one made before it. true: every commit waits, at
    /// about one fsync per start and per ack batch (the worker's throughput bound by the
    /// disk's fsync latency).
    bool fsync_worker = false;
};

/// What a dq::sqlite_store has written so far.
struct sqlite_store_stats {
    std::uint64_t transactions = 0; ///< groups committed (one fsync each)
    std::uint64_t operations = 0;   ///< operations run in them
};

/// The error category of SQLite's result codes ("timewheel.dq.sqlite"): the store's
/// failures other than bad input keep SQLite's code, except a full disk (SQLITE_FULL), which
/// is dq::error::store_full.
const boost::system::error_category& sqlite_category() noexcept;

namespace detail {
class sqlite_engine;
class sqlite_waiter;
} // namespace detail

/// A dq::store in one SQLite database file.
/**
 * @code
 * boost::asio::io_context io;
 * dq::sqlite_store store(io.get_executor(), {.path = "/var/lib/app/tasks.db"});
 * dq::queue q(store);
 * q.async_submit({.id = "welcome:42", .due = 30s, .payload = body}, handler);
 * @endcode
 *
 * The store's clock is the node's system clock. Wake-ups are in-process: a submit,
 * reschedule, requeue, release or retry that makes a task the earliest delayed one completes
 * the pending wait_wakeup() (or the next one) with its due time.
 *
 * Errors: bad input fails with the same dq::error values as dq::redis_store, before anything
 * is written (ids must not contain NUL bytes, dq::error::invalid_id, so that ids move between
 * the stores); a full disk with dq::error::store_full (the operations that write: those that
 * only read still answer); an operation not done within sqlite_store_options::
 * operation_timeout with dq::error::store_timeout; other SQLite failures with their code in
 * sqlite_category(). The constructor throws boost::system::system_error when the file
 * cannot be opened or created, is not a database, or was written by a newer schema.
 *
 * Several io_contexts share one database through the sharing constructor (two stores
 * opened on the same file refuse each other: the file is locked):
 * @code
 * dq::sqlite_store first(io1.get_executor(), {.path = "tasks.db"});
 * dq::sqlite_store second(io2.get_executor(), first); // io2's thread uses this one
 * @endcode
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe, including stores sharing a database.@n
 * @e Shared @e objects: Unsafe. Use from the executor only.
 */
class sqlite_store final : public store {
public:
    /// Opens (or creates) the database and starts the store's thread.
    explicit sqlite_store(const executor_type& ex, sqlite_store_options opt = {});

    /// Another store on `other`'s database, completing on `ex`: the same file, thread and
    /// group commit, its own wake-ups (every store sharing the database gets each one). The
    /// database stays open, and its thread runs, until the last store sharing it closes.
    /** @throws std::invalid_argument when `other` is closed. */
    sqlite_store(const executor_type& ex, const sqlite_store& other);

    /// Completes a pending wait with operation_aborted; the last store of its database
    /// writes what was submitted before and stops the thread.
    ~sqlite_store() override;

    sqlite_store(const sqlite_store&) = delete;
    sqlite_store& operator=(const sqlite_store&) = delete;

    /// The options as given.
    const sqlite_store_options& options() const noexcept;

    /// What its database has written so far (all the stores sharing it).
    sqlite_store_stats stats() const noexcept;

    /// Like the destructor; operations started afterwards fail with operation_aborted (those
    /// started before still complete, on this store's executor).
    void close();

    executor_type get_executor() const override;
    const dq::limits& get_limits() const noexcept override;

    void wait_wakeup(handler<void(boost::system::error_code, time_point)> h) override;
    void now(handler<void(boost::system::error_code, time_point)> h) override;
    /// Reads the schema version in a write transaction on the store's thread, behind the
    /// operations queued there: fails when that thread cannot serve it within
    /// sqlite_store_options::operation_timeout (or the file cannot be read).
    void probe(handler<void(boost::system::error_code, time_point)> h) override;
    void earliest_due(
        handler<void(boost::system::error_code, time_point, std::optional<time_point>)> h) override;

private:
    // dq::store's operations, their input checked there.
    void do_submit(task t,
                   handler<void(boost::system::error_code, submit_result, std::string)> h) override;
    /// The tasks in one operation: one transaction.
    void do_submit_many(
        std::vector<task> tasks,
        handler<void(boost::system::error_code, std::vector<submit_outcome>)> h) override;
    void do_cancel(std::string id,
                   handler<void(boost::system::error_code, cancel_result)> h) override;
    void do_reschedule(std::string id, due_time due,
                       handler<void(boost::system::error_code)> h) override;
    void do_status(std::string id,
                   handler<void(boost::system::error_code, task_status)> h) override;
    void do_list_dead(std::string cursor, std::size_t count,
                      handler<void(boost::system::error_code, dead_page)> h) override;
    void do_requeue_dead(std::string id, due_time due,
                         handler<void(boost::system::error_code)> h) override;
    void do_delete_dead(std::string id, handler<void(boost::system::error_code)> h) override;
    void do_claim(const claim_options& opt,
                  handler<void(boost::system::error_code, claim_result)> h) override;
    void do_start(std::vector<lease_ref> leases,
                  handler<void(boost::system::error_code, std::vector<start_result>)> h) override;
    void do_renew(std::vector<lease_ref> leases, duration lease,
                  handler<void(boost::system::error_code, std::vector<ack_result>)> h) override;
    void
    do_acknowledge(std::vector<ack> acks,
                   handler<void(boost::system::error_code, std::vector<ack_result>)> h) override;
    void do_release(std::vector<lease_ref> leases,
                    handler<void(boost::system::error_code)> h) override;
    void
    do_list_tasks(task_query q, std::optional<task_position> from,
                  handler<void(boost::system::error_code, task_page, std::optional<task_position>)>
                      h) override;
    void do_count_tasks(handler<void(boost::system::error_code, task_counts)> h) override;

    // Schedules (src/dq/sqlite/sqlite_store.cpp).
    void
    do_create_schedule(schedule_spec spec,
                       handler<void(boost::system::error_code, create_schedule_result)> h) override;
    void do_replace_schedule(schedule_spec spec,
                             handler<void(boost::system::error_code)> h) override;
    void do_get_schedule(std::string id,
                         handler<void(boost::system::error_code, schedule_status)> h) override;
    void do_list_schedules(std::string cursor, std::size_t count,
                           handler<void(boost::system::error_code, schedule_page)> h) override;
    void do_delete_schedule(std::string id, handler<void(boost::system::error_code)> h) override;
    void do_create_queue(queue_spec spec,
                         handler<void(boost::system::error_code, create_queue_result)> h) override;
    void do_update_queue(queue_spec spec, handler<void(boost::system::error_code)> h) override;
    void do_get_queue(std::string id,
                      handler<void(boost::system::error_code, queue_status)> h) override;
    void do_list_queues(std::string id_prefix, std::string cursor, std::size_t count,
                        handler<void(boost::system::error_code, queue_page)> h) override;
    void do_delete_queue(std::string id, handler<void(boost::system::error_code)> h) override;
    bool checks_queue_empty() const noexcept override { return true; }
    void do_pause_schedule(std::string id, bool paused,
                           handler<void(boost::system::error_code)> h) override;
    void do_trigger_schedule(std::string id,
                             handler<void(boost::system::error_code, std::string)> h) override;
    void
    do_due_schedules(duration window, std::size_t batch,
                     handler<void(boost::system::error_code, due_schedules_result)> h) override;
    void do_materialise(
        std::vector<materialisation> m,
        handler<void(boost::system::error_code, std::vector<materialise_result>)> h) override;

    executor_type ex_;
    sqlite_store_options opt_;
    std::shared_ptr<detail::sqlite_waiter> waiter_;
    std::shared_ptr<detail::sqlite_engine> engine_;
    sqlite_store_stats stats_at_close_;
};

} // namespace timewheel::dq

#endif // TIMEWHEEL_DQ_SQLITE_STORE_HPP
