//
// timewheel/dq/store.hpp
//
// The one interface between the durable queue (dq::queue, dq::worker) and where tasks are
// kept: dq::redis_store and dq::sqlite_store. Every operation is asynchronous, completes
// through a type-erased handler on the store's executor, and is atomic in the store: a task
// is at every moment in exactly one state.
//
// The operations that take input are not virtual: they check it here, once for every store
// (src/dq/store.cpp), and hand what passed to the store's do_* override. So two stores cannot
// refuse different input, and a store's code starts from input it can trust.
//
#ifndef TIMEWHEEL_DQ_STORE_HPP
#define TIMEWHEEL_DQ_STORE_HPP

#include <timewheel/dq/error.hpp>
#include <timewheel/dq/schedule.hpp>
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
    /// A schedule's id is at most this long, so that an occurrence's task id
    /// ("{<id>}@<28-byte instant>") stays within max_id_bytes.
    std::size_t max_schedule_id_bytes = 200;
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

/// A position in a listing (task_query): a sort key and an id. task_page::cursor encodes one.
struct task_position {
    time_point key{};
    std::string id;
    friend bool operator==(const task_position&, const task_position&) = default;
};

/// Where tasks live. Implementations: dq::redis_store, dq::sqlite_store.
/**
 * The queue and the worker call a store only from its executor. Bad input fails with the
 * dq::error value that names what was wrong, posted to the store's executor, before the
 * store sees it; its transport's failures keep their own codes. Every operation is atomic in
 * the store.
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
    /// when `t.id` was empty). Bad input: id_too_long, invalid_id, payload_too_large,
    /// due_out_of_range, zero_attempts, invalid_backoff.
    void submit(task t, handler<void(boost::system::error_code, submit_result, std::string)> h);

    /// Submits several tasks in one round trip to each shard (dq::sqlite_store: one
    /// transaction), in order, as if one after the other (a second task with an id submitted
    /// earlier in the batch finds it). Completes with one outcome per task, in order: each
    /// task is checked on its own (submit's bad input fails that task only, nothing of it
    /// written) and the store's failures reach the tasks they hit, so that no task fails
    /// silently. The error of the call itself: invalid_argument (no task, or more than
    /// detail::max_batch), nothing written.
    void submit_many(std::vector<task> tasks,
                     handler<void(boost::system::error_code, std::vector<submit_outcome>)> h);

    /// Cancels a delayed or prefetched task: it never starts.
    void cancel(std::string id, handler<void(boost::system::error_code, cancel_result)> h);

    /// Gives a delayed task a new due time; a prefetched one is taken back from its worker
    /// (its lease becomes stale) and delayed to the new time. Errors: not_found, wrong_state
    /// (running, finished, dead, cancelled).
    void reschedule(std::string id, due_time due, handler<void(boost::system::error_code)> h);

    /// Everything the store knows of a task. Error: not_found.
    void status(std::string id, handler<void(boost::system::error_code, task_status)> h);

    /// Dead letters, oldest death first, at most `count` (1 to detail::max_dead_page), from
    /// `cursor` (empty: the start; otherwise what the store gave as a page's next cursor).
    void list_dead(std::string cursor, std::size_t count,
                   handler<void(boost::system::error_code, dead_page)> h);

    /// Makes a dead task delayed again, due at `due`, with its attempts reset. Error:
    /// not_found (no such dead letter).
    void requeue_dead(std::string id, due_time due, handler<void(boost::system::error_code)> h);

    /// Forgets a dead task. Error: not_found.
    void delete_dead(std::string id, handler<void(boost::system::error_code)> h);

    // --- Schedules (docs/dq.md, "Schedules") -----------------------------------------------

    /// Stores a schedule, or finds one with its id and the same spec (`paused` aside).
    /// Errors: schedule_conflict (another spec under this id), and bad input, nothing
    /// written: empty_id, id_too_long (over limits::max_schedule_id_bytes), invalid_id (NUL),
    /// invalid_schedule_id ('{' or '}'), invalid_rule, invalid_cron, unknown_zone,
    /// invalid_window, payload_too_large, zero_attempts, invalid_backoff, invalid_argument
    /// (misfire_limit 0). A new schedule's cursor is the store's clock now.
    void create_schedule(schedule_spec spec,
                         handler<void(boost::system::error_code, create_schedule_result)> h);

    /// Replaces the spec of an existing schedule (its counters and last task stay). A changed
    /// rule (cron, every, zone, start_at, end_at) restarts the cursor from now (at the
    /// earliest: what was materialised stays materialised); `spec.paused` pauses or resumes.
    /// Errors: not_found, and create_schedule's bad input.
    void replace_schedule(schedule_spec spec, handler<void(boost::system::error_code)> h);

    /// A schedule's spec, state and counters, `next` filled in. Error: not_found.
    void get_schedule(std::string id, handler<void(boost::system::error_code, schedule_status)> h);

    /// Schedules in the store's order, at most `count` (1 to detail::max_schedule_page), from
    /// `cursor` (empty: the start; otherwise a page's cursor).
    void list_schedules(std::string cursor, std::size_t count,
                        handler<void(boost::system::error_code, schedule_page)> h);

    /// Forgets a schedule; the tasks it created stay, ordinary tasks. Error: not_found.
    void delete_schedule(std::string id, handler<void(boost::system::error_code)> h);

    /// Stops materialising (pausing a paused schedule is no error). Error: not_found.
    void pause_schedule(std::string id, handler<void(boost::system::error_code)> h);

    /// Materialises again, from now: occurrences missed while paused are skipped (not
    /// counted). Resuming a running schedule changes nothing. Error: not_found.
    void resume_schedule(std::string id, handler<void(boost::system::error_code)> h);

    /// Creates one extra task now (trigger_id(), the schedule's payload and retry policy),
    /// paused or not, whatever the overlap policy; the cursor does not move. Completes with
    /// the task's id. Error: not_found.
    void trigger_schedule(std::string id, handler<void(boost::system::error_code, std::string)> h);

    /// For the materialiser: schedules not paused whose next occurrence is due by the store's
    /// clock + `window`, at most `batch` (1 to detail::max_claim_batch) per shard.
    void due_schedules(duration window, std::size_t batch,
                       handler<void(boost::system::error_code, due_schedules_result)> h);

    /// For the materialiser: each materialisation as one atomic step (see materialisation),
    /// one result per materialisation, in order. At most detail::max_batch of them, with at
    /// most detail::max_batch occurrences in all; their task ids must be
    /// occurrence_id(schedule_id, at), their instants after nothing but the cursor.
    void materialise(std::vector<materialisation> m,
                     handler<void(boost::system::error_code, std::vector<materialise_result>)> h);

    // --- Named queues (docs/design/queues-and-flow-control.md, Decision 2) -------------
    // A queue's settings record. "default" always exists, implicitly, with no settings of its
    // own: get and list show it (generation 0), create, update and delete refuse it with
    // default_queue. A bad name fails with invalid_queue, nothing read or written. The
    // library's submit does not look the queue up (a record is what the service checks and
    // reads its defaults from): a task may name a queue that has no record.

    /// Stores a queue's settings, or finds one with its name and the same spec. Errors:
    /// queue_conflict (another spec under this name), invalid_queue, default_queue, and the
    /// spec's retry policy's (zero_attempts, invalid_backoff).
    void create_queue(queue_spec spec,
                      handler<void(boost::system::error_code, create_queue_result)> h);

    /// Replaces an existing queue's settings; its generation goes up by one. Errors:
    /// not_found, and create_queue's bad input.
    void update_queue(queue_spec spec, handler<void(boost::system::error_code)> h);

    /// A queue's settings. Error: not_found.
    void get_queue(std::string id, handler<void(boost::system::error_code, queue_status)> h);

    /// Queues in byte order of their names, "default" among them, at most `count` (1 to
    /// detail::max_queue_page), those starting with `id_prefix`, after `cursor` (empty: the
    /// start; otherwise a page's cursor, a name). invalid_argument for a bad count, a prefix
    /// or cursor longer than a name can be.
    void list_queues(std::string id_prefix, std::string cursor, std::size_t count,
                     handler<void(boost::system::error_code, queue_page)> h);

    /// Forgets a queue's settings, refused (queue_not_empty) while it holds delayed,
    /// prefetched, running or dead tasks; finished and cancelled ones do not count (they
    /// cannot run again). dq::sqlite_store checks on an index of the tasks by queue, in the
    /// delete's transaction. dq::redis_store keeps no index by queue: it walks list_tasks
    /// with the queue filter first, reading every record of those states (in pages), and a
    /// submit that lands between the walk and the delete leaves a task in a queue with no
    /// record (it runs, as any task does). Errors: not_found, queue_not_empty,
    /// default_queue, invalid_queue.
    void delete_queue(std::string id, handler<void(boost::system::error_code)> h);

    // --- Listing and counting (docs/dq.md, "Listing and counting") ------------------------

    /// A page of the tasks of one state, in its sort key's order (see task_query). Bad
    /// input fails with invalid_argument (a long id_prefix: id_too_long; one holding a NUL:
    /// invalid_id), nothing read.
    void list_tasks(task_query q, handler<void(boost::system::error_code, task_page)> h);

    /// How many tasks each state holds, how many delayed ones are due, the earliest due time.
    /// For monitoring: a store may visit every shard (see docs/dq.md for the cost).
    void count_tasks(handler<void(boost::system::error_code, task_counts)> h);

    // --- The worker's side --------------------------------------------------------------

    /// First returns expired leases to delayed (or to dead, attempts exhausted), then leases
    /// up to `opt.batch` tasks due by now + `opt.horizon`, each with a fresh random token;
    /// up to `opt.start_due` of those already due by the store's clock may come back running
    /// (their lease then runs until now + `opt.lease`).
    void claim(const claim_options& opt, handler<void(boost::system::error_code, claim_result)> h);

    /// At the due time: turns prefetched tasks into running, one result per lease, in order.
    void start(std::vector<lease_ref> leases,
               handler<void(boost::system::error_code, std::vector<start_result>)> h);

    /// Extends leases to now + `lease`, one result per lease, in order.
    void renew(std::vector<lease_ref> leases, duration lease,
               handler<void(boost::system::error_code, std::vector<ack_result>)> h);

    /// Records how runs ended, one result per ack, in order. An outcome's error is kept to
    /// its first detail::max_error_bytes bytes, a retry_after to detail::max_backoff_ms.
    void acknowledge(std::vector<ack> acks,
                     handler<void(boost::system::error_code, std::vector<ack_result>)> h);

    /// Gives back prefetched tasks that were not started (a worker stopping): delayed again
    /// at their due time, their attempt not counted.
    void release(std::vector<lease_ref> leases, handler<void(boost::system::error_code)> h);

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

private:
    // --- Schedules, on checked input ------------------------------------------------------
    // A spec passed every check (its rule builds); a schedule id is a valid id without
    // braces. A store without schedules fails each with operation_not_supported (these
    // defaults); dq::redis_store and dq::sqlite_store override them all.

    virtual void
    do_create_schedule(schedule_spec spec,
                       handler<void(boost::system::error_code, create_schedule_result)> h);
    virtual void do_replace_schedule(schedule_spec spec,
                                     handler<void(boost::system::error_code)> h);
    virtual void do_get_schedule(std::string id,
                                 handler<void(boost::system::error_code, schedule_status)> h);
    virtual void do_list_schedules(std::string cursor, std::size_t count,
                                   handler<void(boost::system::error_code, schedule_page)> h);
    virtual void do_delete_schedule(std::string id, handler<void(boost::system::error_code)> h);
    /// `paused`: pause (true) or resume (false).
    virtual void do_pause_schedule(std::string id, bool paused,
                                   handler<void(boost::system::error_code)> h);
    virtual void do_trigger_schedule(std::string id,
                                     handler<void(boost::system::error_code, std::string)> h);
    virtual void do_due_schedules(duration window, std::size_t batch,
                                  handler<void(boost::system::error_code, due_schedules_result)> h);
    virtual void
    do_materialise(std::vector<materialisation> m,
                   handler<void(boost::system::error_code, std::vector<materialise_result>)> h);

    // --- Named queues, on checked input ----------------------------------------------------
    // A name passed check_queue_name and is never "default"; a spec's policy passed its
    // checks. A store without them fails each with operation_not_supported (these defaults).

    virtual void do_create_queue(queue_spec spec,
                                 handler<void(boost::system::error_code, create_queue_result)> h);
    virtual void do_update_queue(queue_spec spec, handler<void(boost::system::error_code)> h);
    virtual void do_get_queue(std::string id,
                              handler<void(boost::system::error_code, queue_status)> h);
    /// Named queues only (never "default"), after `cursor` ("" the start), with the prefix.
    virtual void do_list_queues(std::string id_prefix, std::string cursor, std::size_t count,
                                handler<void(boost::system::error_code, queue_page)> h);
    /// After the walk found no task of the queue (none when checks_queue_empty()).
    virtual void do_delete_queue(std::string id, handler<void(boost::system::error_code)> h);
    /// True for a store whose do_delete_queue itself refuses a queue holding tasks, in the
    /// same atomic step as the delete (dq::sqlite_store, on an index): no walk first.
    virtual bool checks_queue_empty() const noexcept { return false; }

    // --- Listing, on checked input --------------------------------------------------------
    // list_tasks decodes the cursor into `from` (the last position a page returned: the
    // store lists strictly past it in the query's order) and encodes the page's `next` (the
    // position to go on from; empty: the walk is over) into task_page::cursor, so that a
    // store never sees cursor strings. `q.cursor` is cleared; the rest of `q` passed its
    // checks. A store without listing fails both with operation_not_supported (defaults).

    virtual void do_list_tasks(
        task_query q, std::optional<task_position> from,
        handler<void(boost::system::error_code, task_page, std::optional<task_position>)> h);
    virtual void do_count_tasks(handler<void(boost::system::error_code, task_counts)> h);

    // --- Each store's work, on checked input ---------------------------------------------
    // The operation of the same name calls these once its input passed every check: ids are
    // valid (a task's generated when it had none), due times in range, a vector of leases or
    // acks is never empty and within detail::max_batch, an ack's error and retry_after are
    // within their bounds. A list_dead cursor is the store's own: it checks that itself.

    virtual void
    do_submit(task t, handler<void(boost::system::error_code, submit_result, std::string)> h) = 0;
    /// The tasks that passed their checks, never empty; `h` gets one outcome each, in order.
    /// This default calls do_submit() for each at once and gathers the answers: right for a
    /// store that sends the submits of one turn of its executor together (dq::redis_store,
    /// one script call per shard).
    virtual void
    do_submit_many(std::vector<task> tasks,
                   handler<void(boost::system::error_code, std::vector<submit_outcome>)> h);
    virtual void do_cancel(std::string id,
                           handler<void(boost::system::error_code, cancel_result)> h) = 0;
    virtual void do_reschedule(std::string id, due_time due,
                               handler<void(boost::system::error_code)> h) = 0;
    virtual void do_status(std::string id,
                           handler<void(boost::system::error_code, task_status)> h) = 0;
    virtual void do_list_dead(std::string cursor, std::size_t count,
                              handler<void(boost::system::error_code, dead_page)> h) = 0;
    virtual void do_requeue_dead(std::string id, due_time due,
                                 handler<void(boost::system::error_code)> h) = 0;
    virtual void do_delete_dead(std::string id, handler<void(boost::system::error_code)> h) = 0;
    virtual void do_claim(const claim_options& opt,
                          handler<void(boost::system::error_code, claim_result)> h) = 0;
    virtual void
    do_start(std::vector<lease_ref> leases,
             handler<void(boost::system::error_code, std::vector<start_result>)> h) = 0;
    virtual void do_renew(std::vector<lease_ref> leases, duration lease,
                          handler<void(boost::system::error_code, std::vector<ack_result>)> h) = 0;
    virtual void
    do_acknowledge(std::vector<ack> acks,
                   handler<void(boost::system::error_code, std::vector<ack_result>)> h) = 0;
    virtual void do_release(std::vector<lease_ref> leases,
                            handler<void(boost::system::error_code)> h) = 0;
};

} // namespace timewheel::dq

#endif // TIMEWHEEL_DQ_STORE_HPP
