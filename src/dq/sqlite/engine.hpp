//
// src/dq/sqlite/engine.hpp
//
// The engine behind dq::sqlite_store: one connection, one thread that owns it, and the queue
// of operations that thread runs in group transactions (one fsync for all the operations that
// arrived while the previous group was written). An operation is a sqlite_op, queued by a
// store and completed, once, on that store's executor: by the engine with its results, or by
// the watchdog with store_timeout. Wake-ups go to every store sharing the engine through its
// sqlite_waiter.
//
// The class is one, since every part touches the same connection and counts; its definitions
// are split along what they do:
//   engine.cpp       the thread, the watchdog and the group transaction
//   schema.cpp       opening the file: pragmas, tables, the schema version
//   tasks.cpp        what every operation does to a task's row, and trimming
//   producer_ops.cpp submit, cancel, reschedule, status, dead letters, probe
//   worker_ops.cpp   claim, start, renew, acknowledge, release, expired leases
//   query_ops.cpp    listing and counting tasks (list_tasks, count_tasks)
//   queue_ops.cpp    named queues' settings: create, update, read, list, delete
//   schedule_ops.cpp schedules: create, replace, read, list, delete, pause, trigger, and the
//                    materialiser's due_schedules and materialise
//

#ifndef TIMEWHEEL_SRC_DQ_SQLITE_ENGINE_HPP
#define TIMEWHEEL_SRC_DQ_SQLITE_ENGINE_HPP

#include "connection.hpp"

#include <timewheel/dq/sqlite_store.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace timewheel::dq::detail {

namespace sqlite {

constexpr std::int64_t delayed = 0, prefetched = 1, running = 2, finished = 3, dead = 4,
                       cancelled = 5;

inline std::int64_t now_ms() {
    return std::chrono::duration_cast<duration>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

inline time_point ms(std::int64_t v) {
    return time_point(duration(v));
}

// The columns every operation on one task reads.
struct row {
    std::int64_t rowid = 0;
    std::int64_t state = 0;
    std::int64_t due = 0;
    std::int64_t attempt = 0;
    std::int64_t created = 0;
    std::int64_t updated = 0;
    std::int64_t max_attempts = 0;
    std::int64_t base = 0;
    std::int64_t cap = 0;
    std::string last_error;
    std::string token;
    std::int64_t lease_until = 0;
    std::int64_t lease_attempt = 0;
    std::int64_t started = 0;
    std::string worker;

    bool claimed() const noexcept { return state == prefetched || state == running; }
    bool holds(std::string_view tok) const noexcept { return claimed() && token == tok; }
};

} // namespace sqlite

class sqlite_engine;

// One operation, run by the engine's thread inside a transaction, completed afterwards.
// With a timeout, the engine's watchdog may complete it first (store_timeout): whichever
// side takes it first answers, once; the engine never starts one that was answered.
class sqlite_op {
public:
    virtual ~sqlite_op() = default;
    virtual void run(sqlite_engine& e) = 0;
    virtual bool failed() const noexcept = 0;
    // ec empty: its results cleared, to be run again.
    virtual void fail(boost::system::error_code ec) = 0;

    // The engine's thread, before run(): false when it was answered already (not to run).
    bool begin() noexcept {
        int s = queued;
        return stage_.compare_exchange_strong(s, started, std::memory_order_acq_rel);
    }
    bool answered() const noexcept { return stage_.load(std::memory_order_acquire) == done; }
    // Completes the handler with the results, unless the watchdog did.
    void complete() {
        if (take()) {
            post_results();
        }
    }
    // The watchdog: completes the handler with store_timeout, unless the engine did.
    void expire() {
        if (take()) {
            post_timeout();
        }
    }

    std::chrono::steady_clock::time_point deadline{}; // set (under the queue's lock) by push
    // A write its caller is promised is on disk (a submit, a cancel...): its group commits
    // with fsync. false for the worker's transitions (sqlite_store_options::fsync_worker).
    bool durable = true;

protected:
    virtual void post_results() = 0;
    virtual void post_timeout() = 0;

private:
    enum { queued, started, done };
    bool take() noexcept { return stage_.exchange(done, std::memory_order_acq_rel) != done; }
    std::atomic<int> stage_{queued};
};

// Delivers wake-ups on the executor: to the pending wait, or to the next one.
class sqlite_waiter {
public:
    using error_code = boost::system::error_code;

    explicit sqlite_waiter(store::executor_type ex)
        : ex_(std::move(ex)) {}

    // Never changes: read from the engine's thread too.
    const store::executor_type& executor() const noexcept { return ex_; }

    void wait(store::handler<void(error_code, time_point)> h) {
        if (closed_) {
            post(std::move(h), boost::asio::error::operation_aborted, time_point{});
            return;
        }
        if (h_) {
            // One wait at a time: the older one gives way.
            post(take(), boost::asio::error::operation_aborted, time_point{});
        }
        if (pending_) {
            const auto t = *pending_;
            pending_.reset();
            post(std::move(h), error_code(), t);
            return;
        }
        h_.emplace(std::move(h));
    }

    void wake(time_point t) {
        if (closed_) {
            return;
        }
        if (h_) {
            post(take(), error_code(), t);
            return;
        }
        pending_ = pending_ ? std::min(*pending_, t) : t;
    }

    void close() {
        closed_ = true;
        if (h_) {
            post(take(), boost::asio::error::operation_aborted, time_point{});
        }
    }

private:
    // (an optional: Boost 1.81's any_completion_handler recurses forever on move assignment)
    store::handler<void(error_code, time_point)> take() {
        auto h = std::move(*h_);
        h_.reset();
        return h;
    }

    template <typename H>
    void post(H h, error_code ec, time_point t) {
        boost::asio::post(ex_, boost::asio::append(std::move(h), ec, t));
    }

    store::executor_type ex_;
    std::optional<store::handler<void(error_code, time_point)>> h_;
    std::optional<time_point> pending_;
    bool closed_ = false;
};

class sqlite_engine {
public:
    using error_code = boost::system::error_code;

    // Opens the file (schema.cpp) and starts the thread, and the watchdog with a timeout.
    explicit sqlite_engine(const sqlite_store_options& opt);
    ~sqlite_engine();

    sqlite_engine(const sqlite_engine&) = delete;
    sqlite_engine& operator=(const sqlite_engine&) = delete;

    // false when stopped (the operation is not taken).
    bool push(std::unique_ptr<sqlite_op>& op);

    // Runs what was queued, then ends the threads.
    void stop();

    // Every store sharing the engine gets each wake-up, on its own executor.
    void add_waiter(std::weak_ptr<sqlite_waiter> w) {
        std::lock_guard lk(waiters_m_);
        waiters_.push_back(std::move(w));
    }

    sqlite_store_stats stats() const noexcept {
        return {transactions_.load(std::memory_order_relaxed),
                operations_.load(std::memory_order_relaxed)};
    }

    // --- the operations, on the engine's thread, inside a transaction -------------------

    // producer_ops.cpp
    submit_result submit(const task& t, char kind, std::int64_t value, error_code& ec);
    cancel_result cancel(const std::string& id);
    void reschedule(const std::string& id, char kind, std::int64_t value, error_code& ec);
    task_status status(const std::string& id, error_code& ec);
    dead_page list_dead(std::optional<std::pair<std::int64_t, std::string>> after,
                        std::size_t count);
    void requeue_dead(const std::string& id, char kind, std::int64_t value, error_code& ec);
    void delete_dead(const std::string& id, error_code& ec);
    std::optional<time_point> earliest_due(time_point& now);
    time_point probe();

    // worker_ops.cpp
    claim_result claim(const claim_options& o);
    std::vector<start_result> start(const std::vector<lease_ref>& leases);
    std::vector<ack_result> renew(const std::vector<lease_ref>& leases, duration lease);
    std::vector<ack_result> acknowledge(const std::vector<ack>& acks);
    void release(const std::vector<lease_ref>& leases);

    // query_ops.cpp
    task_page list_tasks(const task_query& q, const std::optional<task_position>& from,
                         std::optional<task_position>& next);
    task_counts count_tasks();

    // schedule_ops.cpp
    create_schedule_result create_schedule(const schedule_spec& spec, error_code& ec);
    void replace_schedule(const schedule_spec& spec, error_code& ec);
    schedule_status get_schedule(const std::string& id, error_code& ec);
    schedule_page list_schedules(const std::string& after, std::size_t count);
    void delete_schedule(const std::string& id, error_code& ec);
    void pause_schedule(const std::string& id, bool paused, error_code& ec);
    std::string trigger_schedule(const std::string& id, error_code& ec);
    due_schedules_result due_schedules(duration window, std::size_t batch);
    std::vector<materialise_result> materialise(const std::vector<materialisation>& ms);

    // queue_ops.cpp
    create_queue_result create_queue(const queue_spec& spec, error_code& ec);
    void update_queue(const queue_spec& spec, error_code& ec);
    queue_status get_queue(const std::string& id, error_code& ec);
    queue_page list_queues(const std::string& prefix, const std::string& after, std::size_t count);
    void delete_queue(const std::string& id, error_code& ec);

private:
    // --- setup (schema.cpp) -------------------------------------------------------------

    [[noreturn]] void open_failed(int rc, const std::string& what);
    void open();
    std::int64_t count(const char* sql);

    void exec(const char* sql) { db_.exec(sql); }
    sqlite::statement& stmt(const char* sql) { return db_.stmt(sql); }

    // --- the thread (engine.cpp) --------------------------------------------------------

    static void name(std::thread& t, const char* n);
    void loop();
    void watch();
    void run_group(std::vector<std::unique_ptr<sqlite_op>>& group);
    error_code transact(std::span<sqlite_op* const> ops, bool trim_too);

    // --- a task's row (tasks.cpp) -------------------------------------------------------

    std::optional<sqlite::row> find(std::string_view id);
    std::optional<std::int64_t> earliest();
    void delay(const sqlite::row& r, std::int64_t due, std::int64_t attempt, std::string_view err,
               std::int64_t updated);
    void end(const sqlite::row& r, std::int64_t state, std::int64_t attempt, std::string_view err,
             std::int64_t now);
    void forget(std::int64_t rowid, std::string_view id, std::int64_t state);
    // Keeps counts_: a task left state `from` for state `to` (-1: none, it came or went).
    void moved(std::int64_t from, std::int64_t to) noexcept {
        if (from >= 0) {
            --counts_[static_cast<std::size_t>(from)];
        }
        if (to >= 0) {
            ++counts_[static_cast<std::size_t>(to)];
        }
    }
    void log(std::string_view id, std::int64_t att, std::string_view worker, std::int64_t started,
             std::int64_t ended, const char* outcome, std::string_view err);
    void trim(std::int64_t now);
    void trim_set(const char* by_age, const char* by_count, std::int64_t before, std::int64_t n,
                  std::size_t max);

    // --- the worker's side (worker_ops.cpp) ---------------------------------------------

    void expire(std::int64_t now);
    std::int64_t backoff(const sqlite::row& r, std::int64_t att);
    std::string token();

    sqlite_store_options opt_;
    std::chrono::steady_clock::duration timeout_; // 0: none (no watchdog)
    std::mutex waiters_m_;
    std::vector<std::weak_ptr<sqlite_waiter>> waiters_;
    sqlite::file_lock lock_; // before db_: let go of after the database is closed
    sqlite::connection db_;
    std::mt19937_64 rng_;
    // The tasks in each state (index: the state's number), counted at open and kept by every
    // write that changes a state (moved()): trimming and count_tasks read them, since a
    // COUNT over a million index entries takes about 170 ms.
    std::array<std::int64_t, 6> counts_{};
    std::vector<std::int64_t> woke_; // due times made delayed in this group
    bool logged_ = false;
    bool synced_ = true; // PRAGMA synchronous is FULL now (NORMAL: false)

    std::atomic<std::uint64_t> transactions_{0};
    std::atomic<std::uint64_t> operations_{0};

    // Under m_: the queue, the group being written, and the flags.
    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::unique_ptr<sqlite_op>> q_;
    std::vector<std::unique_ptr<sqlite_op>> running_;
    bool stopping_ = false;
    std::thread thread_;
    std::condition_variable watchdog_cv_;
    bool watchdog_idle_ = false; // waits for an operation, with no deadline to watch
    bool watchdog_stop_ = false;
    std::thread watchdog_;
};

} // namespace timewheel::dq::detail

#endif // TIMEWHEEL_SRC_DQ_SQLITE_ENGINE_HPP
