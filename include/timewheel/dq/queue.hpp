//
// timewheel/dq/queue.hpp
//
// The producer's side of the durable queue: submit, cancel, reschedule, status, the dead
// letters, and recurring schedules, each an asynchronous operation with any completion
// token, on a dq::store.
//
#ifndef TIMEWHEEL_DQ_QUEUE_HPP
#define TIMEWHEEL_DQ_QUEUE_HPP

#include <timewheel/dq/store.hpp>

#include <boost/asio/async_result.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace timewheel::dq {

/// Submits tasks to a store and manages them.
/**
 * @code
 * dq::redis_store store(io.get_executor(), redis_config, {.name = "mail"});
 * dq::queue q(store);
 * auto [ec, result, id] = co_await q.async_submit(
 *     {.id = "welcome:42", .due = 30s, .payload = body}, as_tuple(use_awaitable));
 * @endcode
 *
 * Every operation completes on the store's executor; call them from it.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe.
 */
class queue {
public:
    using executor_type = store::executor_type;

    /// Uses `s`, which must outlive the queue and every operation started on it.
    explicit queue(dq::store& s) noexcept
        : store_(&s) {}

    executor_type get_executor() const { return store_->get_executor(); }

    dq::store& get_store() const noexcept { return *store_; }

    /// Creates a task, unless one with its id exists (or, with task::replace, moves a
    /// delayed one).
    /**
     * @par Completion Signature
     * @code void(boost::system::error_code ec, submit_result result, std::string id) @endcode
     * Bad input (dq::error::empty_id is never returned: an empty id is generated) fails with
     * the dq::error that names it, and nothing is written.
     */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_submit(task t, Token&& token = {}) {
        return initiate<void(boost::system::error_code, submit_result, std::string)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, task t) { s.submit(std::move(t), std::move(h)); },
            std::move(t));
    }

    /// Submits several tasks in one round trip to each shard, each answered on its own
    /// (see store::submit_many).
    /**
     * @par Completion Signature
     * @code void(boost::system::error_code ec, std::vector<submit_outcome> outcomes) @endcode
     * `ec` is the call's own error (invalid_argument: no task, or more than
     * detail::max_batch); each task's error, if any, is in its outcome.
     */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_submit_many(std::vector<task> tasks, Token&& token = {}) {
        return initiate<void(boost::system::error_code, std::vector<submit_outcome>)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::vector<task> ts) {
                s.submit_many(std::move(ts), std::move(h));
            },
            std::move(tasks));
    }

    /// Cancels a delayed or prefetched task.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, cancel_result result) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_cancel(std::string id, Token&& token = {}) {
        return initiate<void(boost::system::error_code, cancel_result)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id) { s.cancel(std::move(id), std::move(h)); },
            std::move(id));
    }

    /// Moves a delayed (or prefetched) task to a new due time.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_reschedule(std::string id, due_time due, Token&& token = {}) {
        return initiate<void(boost::system::error_code)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id, due_time due) {
                s.reschedule(std::move(id), due, std::move(h));
            },
            std::move(id), due);
    }

    /// The state, attempts, times, last error and execution log of a task.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, task_status status) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_status(std::string id, Token&& token = {}) {
        return initiate<void(boost::system::error_code, task_status)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id) { s.status(std::move(id), std::move(h)); },
            std::move(id));
    }

    /// A page of dead letters; pass the page's cursor back for the next one.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, dead_page page) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_list_dead(std::string cursor, std::size_t count, Token&& token = {}) {
        return initiate<void(boost::system::error_code, dead_page)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string c, std::size_t n) {
                s.list_dead(std::move(c), n, std::move(h));
            },
            std::move(cursor), count);
    }

    /// Makes a dead letter a delayed task again, with its attempts reset.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_requeue_dead(std::string id, due_time due, Token&& token = {}) {
        return initiate<void(boost::system::error_code)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id, due_time due) {
                s.requeue_dead(std::move(id), due, std::move(h));
            },
            std::move(id), due);
    }

    /// Forgets a dead letter.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_delete_dead(std::string id, Token&& token = {}) {
        return initiate<void(boost::system::error_code)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id) {
                s.delete_dead(std::move(id), std::move(h));
            },
            std::move(id));
    }

    /// The store's clock now and the earliest due time of its delayed tasks (none when no
    /// task is delayed): see store::earliest_due(). For monitoring.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, time_point now,
     *           std::optional<time_point> earliest) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_earliest_due(Token&& token = {}) {
        return initiate<void(boost::system::error_code, time_point, std::optional<time_point>)>(
            std::forward<Token>(token), [](dq::store& s, auto h) { s.earliest_due(std::move(h)); });
    }

    /// A page of the tasks of one state (see task_query); pass the page's cursor back in
    /// the next query for the next one.
    /**
     * @par Completion Signature
     * @code void(boost::system::error_code ec, task_page page) @endcode
     * Bad input (store::list_tasks lists it) fails with the dq::error that names it.
     */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_list_tasks(task_query q, Token&& token = {}) {
        return initiate<void(boost::system::error_code, task_page)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, task_query q) { s.list_tasks(std::move(q), std::move(h)); },
            std::move(q));
    }

    /// How many tasks each state holds, how many delayed ones are due now, and the earliest
    /// due time: see store::count_tasks(). For monitoring.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, task_counts counts) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_count_tasks(Token&& token = {}) {
        return initiate<void(boost::system::error_code, task_counts)>(
            std::forward<Token>(token), [](dq::store& s, auto h) { s.count_tasks(std::move(h)); });
    }

    // --- Schedules (docs/dq.md, "Schedules"; dq::scheduler materialises them) -------------

    /// Stores a recurring schedule, or finds one with its id and the same spec.
    /**
     * @par Completion Signature
     * @code void(boost::system::error_code ec, create_schedule_result result) @endcode
     * A different spec under the id fails with dq::error::schedule_conflict; bad input
     * (store::create_schedule lists it) fails with the dq::error that names it, and nothing
     * is written. For a bad rule's details (the field and position of a cron expression),
     * call dq::schedule_rule(), which throws cron::parse_error.
     */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_create_schedule(schedule_spec spec, Token&& token = {}) {
        return initiate<void(boost::system::error_code, create_schedule_result)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, schedule_spec spec) {
                s.create_schedule(std::move(spec), std::move(h));
            },
            std::move(spec));
    }

    /// Replaces a schedule's spec (see store::replace_schedule).
    /** @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_replace_schedule(schedule_spec spec, Token&& token = {}) {
        return initiate<void(boost::system::error_code)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, schedule_spec spec) {
                s.replace_schedule(std::move(spec), std::move(h));
            },
            std::move(spec));
    }

    /// A schedule's spec, state, next occurrence and counters.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, schedule_status status) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_get_schedule(std::string id, Token&& token = {}) {
        return initiate<void(boost::system::error_code, schedule_status)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id) {
                s.get_schedule(std::move(id), std::move(h));
            },
            std::move(id));
    }

    /// A page of schedules; pass the page's cursor back for the next one.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, schedule_page page) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_list_schedules(std::string cursor, std::size_t count, Token&& token = {}) {
        return initiate<void(boost::system::error_code, schedule_page)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string c, std::size_t n) {
                s.list_schedules(std::move(c), n, std::move(h));
            },
            std::move(cursor), count);
    }

    /// Forgets a schedule; the tasks it created stay.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_delete_schedule(std::string id, Token&& token = {}) {
        return initiate<void(boost::system::error_code)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id) {
                s.delete_schedule(std::move(id), std::move(h));
            },
            std::move(id));
    }

    // --- Named queues' settings (store::create_queue...) ----------------------------------

    /// Stores a queue's settings, or finds the same (see store::create_queue).
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, create_queue_result result) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_create_queue(queue_spec spec, Token&& token = {}) {
        return initiate<void(boost::system::error_code, create_queue_result)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, queue_spec spec) {
                s.create_queue(std::move(spec), std::move(h));
            },
            std::move(spec));
    }

    /// Replaces a queue's settings (see store::update_queue).
    /** @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_update_queue(queue_spec spec, Token&& token = {}) {
        return initiate<void(boost::system::error_code)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, queue_spec spec) {
                s.update_queue(std::move(spec), std::move(h));
            },
            std::move(spec));
    }

    /// A queue's settings (see store::get_queue).
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, queue_status status) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_get_queue(std::string id, Token&& token = {}) {
        return initiate<void(boost::system::error_code, queue_status)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id) { s.get_queue(std::move(id), std::move(h)); },
            std::move(id));
    }

    /// A page of queues (see store::list_queues).
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, queue_page page) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_list_queues(std::string id_prefix, std::string cursor, std::size_t count,
                           Token&& token = {}) {
        return initiate<void(boost::system::error_code, queue_page)>(
            std::forward<Token>(token),
            [count](dq::store& s, auto h, std::string id_prefix, std::string cursor) {
                s.list_queues(std::move(id_prefix), std::move(cursor), count, std::move(h));
            },
            std::move(id_prefix), std::move(cursor));
    }

    /// Forgets a queue's settings (see store::delete_queue).
    /** @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_delete_queue(std::string id, Token&& token = {}) {
        return initiate<void(boost::system::error_code)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id) {
                s.delete_queue(std::move(id), std::move(h));
            },
            std::move(id));
    }

    /// Pauses a schedule.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_pause_schedule(std::string id, Token&& token = {}) {
        return initiate<void(boost::system::error_code)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id) {
                s.pause_schedule(std::move(id), std::move(h));
            },
            std::move(id));
    }

    /// Resumes a schedule, from now.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_resume_schedule(std::string id, Token&& token = {}) {
        return initiate<void(boost::system::error_code)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id) {
                s.resume_schedule(std::move(id), std::move(h));
            },
            std::move(id));
    }

    /// Creates one extra task of the schedule now; completes with its id.
    /** @par Completion Signature
     * @code void(boost::system::error_code ec, std::string task_id) @endcode */
    template <typename Token = boost::asio::default_completion_token_t<executor_type>>
    auto async_trigger_schedule(std::string id, Token&& token = {}) {
        return initiate<void(boost::system::error_code, std::string)>(
            std::forward<Token>(token),
            [](dq::store& s, auto h, std::string id) {
                s.trigger_schedule(std::move(id), std::move(h));
            },
            std::move(id));
    }

private:
    template <typename Signature, typename Token, typename Call, typename... Args>
    auto initiate(Token&& token, Call call, Args&&... args) {
        return boost::asio::async_initiate<Token, Signature>(
            [call](auto handler, dq::store* s, auto&&... a) {
                call(*s, store::handler<Signature>(std::move(handler)),
                     std::forward<decltype(a)>(a)...);
            },
            token, store_, std::forward<Args>(args)...);
    }

    dq::store* store_;
};

} // namespace timewheel::dq

#endif // TIMEWHEEL_DQ_QUEUE_HPP
