//
// src/dq/sqlite/sqlite_store.cpp
//
// dq::sqlite_store: validation on the caller's side, then every operation as a closure run
// by the engine's thread inside a group transaction (one fsync for all the operations that
// arrived while the previous one was written), its completion posted back to the executor.
//
// Several stores may share one engine (the sharing constructor): an operation carries the
// executor of the store it was started on, and its completion is posted there, so each of
// a server's io_contexts gets its own completions, while the file keeps one writer and one
// group commit. That per-store executor is why sharing is a second store object rather than
// the handlers' associated executors: the queue's and the worker's handlers often have none
// (plain lambdas), and their completion must still land on the thread that started them.
// The semantics are those of the Redis scripts (src/dq/redis_scripts.cpp), state by state.
//
// Schema (version 1):
//   tasks  one row per task, its state a number (0 delayed, 1 prefetched, 2 running,
//          3 finished, 4 dead, 5 cancelled); a claimed task's lease (token, expiry, attempt,
//          start, worker) in nullable columns. Partial indexes make each question the store
//          asks an index range: delayed by due, claimed by lease expiry, done and dead by age.
//   log    one row per attempt, by task; a task's rows go when the task is forgotten.
//   meta   schema_version.
//

#include <timewheel/dq/sqlite_store.hpp>

#include <timewheel/dq/detail/input_checks.hpp>

#include <boost/asio/append.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/execution/outstanding_work.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/prefer.hpp>
#include <boost/system/system_error.hpp>

#include <pthread.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace timewheel::dq {

namespace {

class sqlite_category_impl final : public boost::system::error_category {
public:
    const char* name() const noexcept override { return "timewheel.dq.sqlite"; }
    std::string message(int ev) const override { return sqlite3_errstr(ev); }
};

} // namespace

const boost::system::error_category& sqlite_category() noexcept {
    static const sqlite_category_impl c;
    return c;
}

namespace detail {

namespace {

using boost::system::error_code;

constexpr std::int64_t delayed = 0, prefetched = 1, running = 2, finished = 3, dead = 4,
                       cancelled = 5;
constexpr std::int64_t schema_version = 1;
// Bounded work per group: expired leases handled by one claim, victims of one trim.
constexpr int expired_per_claim = 64;
constexpr int trim_per_group = 256;

error_code sqlite_error(int rc) {
    if ((rc & 0xff) == SQLITE_FULL) {
        return error::store_full;
    }
    return {rc, sqlite_category()};
}

// A failed SQLite call inside an operation: the operation's savepoint is rolled back.
struct sqlite_failure {
    int rc;
};

std::int64_t now_ms() {
    return std::chrono::duration_cast<duration>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

time_point ms(std::int64_t v) {
    return time_point(duration(v));
}

// A prepared statement, reset (and its bindings kept until rebound) when a use ends.
class statement {
public:
    statement(sqlite3* db, const char* sql) {
        const int rc = sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s_, nullptr);
        if (rc != SQLITE_OK) {
            throw sqlite_failure{rc};
        }
    }
    ~statement() { sqlite3_finalize(s_); }
    statement(const statement&) = delete;
    statement& operator=(const statement&) = delete;
    sqlite3_stmt* get() const noexcept { return s_; }

private:
    sqlite3_stmt* s_ = nullptr;
};

// One use of a statement: bind, step, read the columns; reset at the end.
class query {
public:
    explicit query(statement& s)
        : s_(s.get()) {}
    ~query() { sqlite3_reset(s_); }
    query(const query&) = delete;
    query& operator=(const query&) = delete;

    query& bind(int i, std::int64_t v) {
        check(sqlite3_bind_int64(s_, i, v));
        return *this;
    }
    // As a BLOB: ids, payloads and errors are bytes, compared with memcmp.
    query& bind(int i, std::string_view v) {
        static const char empty = 0;
        check(sqlite3_bind_blob(s_, i, v.empty() ? &empty : v.data(), static_cast<int>(v.size()),
                                SQLITE_STATIC));
        return *this;
    }
    query& bind_null(int i) {
        check(sqlite3_bind_null(s_, i));
        return *this;
    }
    // true: a row is there to read; false: done.
    bool step() {
        const int rc = sqlite3_step(s_);
        if (rc == SQLITE_ROW) {
            return true;
        }
        if (rc == SQLITE_DONE) {
            return false;
        }
        throw sqlite_failure{rc};
    }
    void run() {
        while (step()) {
        }
    }
    std::int64_t integer(int i) const { return sqlite3_column_int64(s_, i); }
    bool is_null(int i) const { return sqlite3_column_type(s_, i) == SQLITE_NULL; }
    std::string text(int i) const {
        const void* p = sqlite3_column_blob(s_, i);
        const int n = sqlite3_column_bytes(s_, i);
        return p ? std::string(static_cast<const char*>(p), static_cast<std::size_t>(n))
                 : std::string();
    }

private:
    static void check(int rc) {
        if (rc != SQLITE_OK) {
            throw sqlite_failure{rc};
        }
    }
    sqlite3_stmt* s_;
};

const char* const schema_sql = R"sql(
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY NOT NULL, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS tasks(
  id BLOB NOT NULL UNIQUE,
  state INTEGER NOT NULL,
  due INTEGER NOT NULL,
  attempt INTEGER NOT NULL,
  created INTEGER NOT NULL,
  updated INTEGER NOT NULL,
  max_attempts INTEGER NOT NULL,
  base INTEGER NOT NULL,
  cap INTEGER NOT NULL,
  last_error BLOB NOT NULL,
  payload BLOB NOT NULL,
  token BLOB,
  lease_until INTEGER,
  lease_attempt INTEGER,
  started INTEGER,
  worker BLOB);
CREATE INDEX IF NOT EXISTS tasks_delayed ON tasks(due) WHERE state = 0;
CREATE INDEX IF NOT EXISTS tasks_leased ON tasks(lease_until) WHERE state IN (1, 2);
CREATE INDEX IF NOT EXISTS tasks_done ON tasks(updated) WHERE state IN (3, 5);
CREATE INDEX IF NOT EXISTS tasks_dead ON tasks(updated, id) WHERE state = 4;
CREATE TABLE IF NOT EXISTS log(
  seq INTEGER PRIMARY KEY,
  id BLOB NOT NULL,
  attempt INTEGER NOT NULL,
  worker BLOB NOT NULL,
  started INTEGER NOT NULL,
  ended INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  error BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS log_by_id ON log(id, seq);
)sql";

// The columns every operation on one task reads.
constexpr const char* find_sql =
    "SELECT rowid, state, due, attempt, created, updated, max_attempts, base, cap, last_error, "
    "token, lease_until, lease_attempt, started, worker FROM tasks WHERE id = ?1";

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

} // namespace

// One operation, run by the engine's thread inside a transaction, completed afterwards.
// With a timeout, the engine's watchdog may complete it first (store_timeout): whichever
// side takes it first answers, once; the engine never starts one that was answered.
class sqlite_op {
public:
    virtual ~sqlite_op() = default;
    virtual void run(sqlite_engine& e) = 0;
    virtual bool failed() const noexcept = 0;
    // ec empty: its results cleared, to be run again.
    virtual void fail(error_code ec) = 0;

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
    explicit sqlite_engine(const sqlite_store_options& opt)
        : opt_(opt)
        , timeout_(std::max(opt.operation_timeout, duration(0))) {
        std::random_device rd;
        rng_.seed((std::uint64_t(rd()) << 32) ^ rd());
        open();
        thread_ = std::thread([this] { loop(); });
        name(thread_, "tw-dq-sqlite");
        if (timeout_.count() > 0) {
            watchdog_ = std::thread([this] { watch(); });
            name(watchdog_, "tw-dq-watchdog");
        }
    }

    ~sqlite_engine() {
        stop();
        stmts_.clear();
        sqlite3_close_v2(db_);
    }

    sqlite_engine(const sqlite_engine&) = delete;
    sqlite_engine& operator=(const sqlite_engine&) = delete;

    // false when stopped (the operation is not taken).
    bool push(std::unique_ptr<sqlite_op>& op) {
        bool wake_watchdog = false;
        {
            std::lock_guard lk(m_);
            if (stopping_) {
                return false;
            }
            // Deadlines in queue order: the watchdog looks at the oldest only.
            op->deadline = std::chrono::steady_clock::now() + timeout_;
            q_.push_back(std::move(op));
            wake_watchdog = watchdog_idle_;
        }
        cv_.notify_one();
        if (wake_watchdog) {
            watchdog_cv_.notify_one();
        }
        return true;
    }

    // Runs what was queued, then ends the threads.
    void stop() {
        {
            std::lock_guard lk(m_);
            stopping_ = true;
        }
        cv_.notify_one();
        if (thread_.joinable()) {
            thread_.join();
        }
        {
            std::lock_guard lk(m_);
            watchdog_stop_ = true;
        }
        watchdog_cv_.notify_one();
        if (watchdog_.joinable()) {
            watchdog_.join();
        }
    }

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

    submit_result submit(const task& t, char kind, std::int64_t value, error_code& ec) {
        const auto now = now_ms();
        const auto due = due_from(kind, value, now);
        if (!due) {
            ec = error::due_out_of_range;
            return submit_result::created;
        }
        if (auto r = find(t.id)) {
            if (t.replace && r->state == delayed) {
                query q(stmt("UPDATE tasks SET payload = ?2, due = ?3, updated = ?4 "
                             "WHERE rowid = ?1"));
                q.bind(1, r->rowid).bind(2, t.payload).bind(3, *due).bind(4, now).run();
                woke_.push_back(*due);
                return submit_result::replaced;
            }
            return submit_result::exists;
        }
        query q(stmt("INSERT INTO tasks(id, state, due, attempt, created, updated, max_attempts, "
                     "base, cap, last_error, payload) VALUES (?1, 0, ?2, 0, ?3, ?3, ?4, ?5, ?6, "
                     "x'', ?7)"));
        q.bind(1, t.id).bind(2, *due).bind(3, now);
        q.bind(4, static_cast<std::int64_t>(t.retry.max_attempts))
            .bind(5, t.retry.base.count())
            .bind(6, t.retry.cap.count())
            .bind(7, t.payload)
            .run();
        woke_.push_back(*due);
        return submit_result::created;
    }

    cancel_result cancel(const std::string& id) {
        auto r = find(id);
        if (!r) {
            return cancel_result::not_found;
        }
        if (r->state != delayed && r->state != prefetched) {
            return cancel_result::too_late;
        }
        end(*r, cancelled, r->attempt, r->last_error, now_ms());
        return cancel_result::cancelled;
    }

    void reschedule(const std::string& id, char kind, std::int64_t value, error_code& ec) {
        const auto now = now_ms();
        const auto due = due_from(kind, value, now);
        if (!due) {
            ec = error::due_out_of_range;
            return;
        }
        auto r = find(id);
        if (!r) {
            ec = error::not_found;
            return;
        }
        if (r->state != delayed && r->state != prefetched) {
            ec = error::wrong_state;
            return;
        }
        delay(*r, *due, r->attempt, r->last_error, now);
    }

    task_status status(const std::string& id, error_code& ec) {
        task_status out;
        query q(stmt("SELECT state, due, attempt, created, updated, max_attempts, base, cap, "
                     "last_error, payload, lease_attempt FROM tasks WHERE id = ?1"));
        q.bind(1, id);
        if (!q.step()) {
            ec = error::not_found;
            return out;
        }
        out.id = id;
        const auto state = q.integer(0);
        out.state = static_cast<task_state>(state);
        out.due = ms(q.integer(1));
        out.attempt = static_cast<std::uint32_t>(state == running ? q.integer(10) : q.integer(2));
        out.created = ms(q.integer(3));
        out.updated = ms(q.integer(4));
        out.retry.max_attempts = static_cast<std::uint32_t>(q.integer(5));
        out.retry.base = duration(q.integer(6));
        out.retry.cap = duration(q.integer(7));
        out.last_error = q.text(8);
        out.payload = q.text(9);
        query l(stmt("SELECT attempt, worker, started, ended, outcome, error FROM log "
                     "WHERE id = ?1 ORDER BY seq"));
        l.bind(1, id);
        while (l.step()) {
            attempt_record a;
            a.attempt = static_cast<std::uint32_t>(l.integer(0));
            a.worker = l.text(1);
            a.started = ms(l.integer(2));
            a.ended = ms(l.integer(3));
            a.outcome = l.text(4);
            a.error = l.text(5);
            out.log.push_back(std::move(a));
        }
        return out;
    }

    // Cursor: "<died ms>:<id>" of the last entry returned.
    dead_page list_dead(std::optional<std::pair<std::int64_t, std::string>> after,
                        std::size_t count) {
        dead_page page;
        const auto limit = static_cast<std::int64_t>(count) + 1;
        auto read = [&](query& q) {
            while (q.step()) {
                if (page.entries.size() == count) {
                    const auto& last = page.entries.back();
                    page.cursor =
                        std::to_string(last.died.time_since_epoch().count()) + ":" + last.id;
                    break;
                }
                dead_page::entry e;
                e.id = q.text(0);
                e.died = ms(q.integer(1));
                e.attempt = static_cast<std::uint32_t>(q.integer(2));
                e.last_error = q.text(3);
                page.entries.push_back(std::move(e));
            }
        };
        if (after) {
            query q(stmt("SELECT id, updated, attempt, last_error FROM tasks WHERE state = 4 "
                         "AND (updated, id) > (?1, ?2) ORDER BY updated, id LIMIT ?3"));
            q.bind(1, after->first).bind(2, after->second).bind(3, limit);
            read(q);
        } else {
            query q(stmt("SELECT id, updated, attempt, last_error FROM tasks WHERE state = 4 "
                         "ORDER BY updated, id LIMIT ?1"));
            q.bind(1, limit);
            read(q);
        }
        return page;
    }

    void requeue_dead(const std::string& id, char kind, std::int64_t value, error_code& ec) {
        const auto now = now_ms();
        const auto due = due_from(kind, value, now);
        if (!due) {
            ec = error::due_out_of_range;
            return;
        }
        auto r = find(id);
        if (!r || r->state != dead) {
            ec = error::not_found;
            return;
        }
        delay(*r, *due, 0, std::string(), now);
        --dead_count_;
    }

    void delete_dead(const std::string& id, error_code& ec) {
        auto r = find(id);
        if (!r || r->state != dead) {
            ec = error::not_found;
            return;
        }
        forget(r->rowid, id);
        --dead_count_;
    }

    claim_result claim(const claim_options& o) {
        const auto now = now_ms();
        claim_result out;
        out.server_time = ms(now);
        expire(now);
        struct pick {
            std::int64_t rowid;
            claimed_task t;
        };
        std::vector<pick> picks;
        {
            query q(stmt("SELECT rowid, id, due, attempt, payload, max_attempts, base, cap "
                         "FROM tasks WHERE state = 0 AND due <= ?1 ORDER BY due LIMIT ?2"));
            q.bind(1, now + o.horizon.count()).bind(2, static_cast<std::int64_t>(o.batch));
            while (q.step()) {
                pick p;
                p.rowid = q.integer(0);
                p.t.id = q.text(1);
                p.t.due = ms(q.integer(2));
                p.t.attempt = static_cast<std::uint32_t>(q.integer(3) + 1);
                p.t.payload = q.text(4);
                p.t.retry.max_attempts = static_cast<std::uint32_t>(q.integer(5));
                p.t.retry.base = duration(q.integer(6));
                p.t.retry.cap = duration(q.integer(7));
                picks.push_back(std::move(p));
            }
        }
        out.tasks.reserve(picks.size());
        for (auto& p : picks) {
            p.t.token = token();
            query u(stmt("UPDATE tasks SET state = 1, token = ?2, lease_until = ?3, "
                         "lease_attempt = ?4, worker = ?5, started = 0 WHERE rowid = ?1"));
            u.bind(1, p.rowid)
                .bind(2, p.t.token)
                .bind(3, std::max(p.t.due.time_since_epoch().count(), now) + o.lease.count())
                .bind(4, static_cast<std::int64_t>(p.t.attempt))
                .bind(5, o.worker)
                .run();
            out.tasks.push_back(std::move(p.t));
        }
        if (auto e = earliest()) {
            out.next_due = ms(*e);
        }
        return out;
    }

    std::vector<start_result> start(const std::vector<lease_ref>& leases) {
        const auto now = now_ms();
        std::vector<start_result> out;
        out.reserve(leases.size());
        for (const auto& l : leases) {
            auto r = find(l.id);
            if (!r || !r->holds(l.token)) {
                out.push_back(start_result::stale);
            } else if (r->due > now) {
                out.push_back(start_result::too_early);
            } else {
                if (r->state != running) {
                    query u(stmt("UPDATE tasks SET state = 2, started = ?2 WHERE rowid = ?1"));
                    u.bind(1, r->rowid).bind(2, now).run();
                }
                out.push_back(start_result::started);
            }
        }
        return out;
    }

    std::vector<ack_result> renew(const std::vector<lease_ref>& leases, duration lease) {
        const auto now = now_ms();
        std::vector<ack_result> out;
        out.reserve(leases.size());
        for (const auto& l : leases) {
            auto r = find(l.id);
            if (!r || !r->holds(l.token)) {
                out.push_back(ack_result::stale);
                continue;
            }
            query u(stmt("UPDATE tasks SET lease_until = ?2 WHERE rowid = ?1"));
            u.bind(1, r->rowid).bind(2, now + lease.count()).run();
            out.push_back(ack_result::ok);
        }
        return out;
    }

    std::vector<ack_result> acknowledge(const std::vector<ack>& acks) {
        const auto now = now_ms();
        std::vector<ack_result> out;
        out.reserve(acks.size());
        for (const auto& a : acks) {
            // An ack clears the token: a second ack of the same lease in a batch is stale.
            auto r = find(a.lease.id);
            if (!r || !r->holds(a.lease.token)) {
                out.push_back(ack_result::stale);
                continue;
            }
            out.push_back(ack_result::ok);
            auto started = a.started.time_since_epoch().count();
            auto ended = a.ended.time_since_epoch().count();
            if (started <= 0) {
                started = r->started;
            }
            if (ended <= 0) {
                ended = now;
            }
            const auto att = r->lease_attempt;
            const std::string_view err = a.outcome.error;
            switch (a.outcome.what) {
            case outcome::kind::success:
                log(a.lease.id, att, r->worker, started, ended, "success", "");
                end(*r, finished, att, "", now);
                break;
            case outcome::kind::failure:
                log(a.lease.id, att, r->worker, started, ended, "failure", err);
                end(*r, dead, att, err, now);
                break;
            case outcome::kind::retry:
                log(a.lease.id, att, r->worker, started, ended, "retry", err);
                if (att >= r->max_attempts) {
                    end(*r, dead, att, err, now);
                } else {
                    const auto wait =
                        a.outcome.retry_after ? a.outcome.retry_after->count() : backoff(*r, att);
                    delay(*r, now + wait, att, err, now);
                }
                break;
            case outcome::kind::defer:
                // Nothing ran: the attempt is given back (the count stays the one before
                // the claim) and nothing is logged.
                delay(*r, now + (a.outcome.retry_after ? a.outcome.retry_after->count() : 0),
                      r->attempt, err, now);
                break;
            }
        }
        return out;
    }

    // The delayed index's first entry: one index read.
    std::optional<time_point> earliest_due(time_point& now) {
        now = ms(now_ms());
        if (auto e = earliest()) {
            return ms(*e);
        }
        return std::nullopt;
    }

    // The readiness probe: the file answers a query (in the group's write transaction).
    time_point probe() {
        query q(stmt("SELECT value FROM meta WHERE key = 'schema_version'"));
        if (!q.step()) {
            throw sqlite_failure{SQLITE_CORRUPT};
        }
        return ms(now_ms());
    }

    void release(const std::vector<lease_ref>& leases) {
        for (const auto& l : leases) {
            auto r = find(l.id);
            if (r && r->holds(l.token) && r->state == prefetched) {
                delay(*r, r->due, r->attempt, r->last_error, r->updated);
            }
        }
    }

private:
    // --- setup --------------------------------------------------------------------------

    [[noreturn]] void open_failed(int rc, const std::string& what) {
        std::string msg = "dq::sqlite_store: cannot open '" + opt_.path + "': " + what;
        if (db_) {
            msg += std::string(" (") + sqlite3_errmsg(db_) + ")";
            stmts_.clear();
            sqlite3_close_v2(db_);
            db_ = nullptr;
        }
        throw boost::system::system_error(sqlite_error(rc), msg);
    }

    void exec(const char* sql) {
        const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
        if (rc != SQLITE_OK) {
            throw sqlite_failure{rc};
        }
    }

    void open() {
        int rc = sqlite3_open_v2(opt_.path.c_str(), &db_,
                                 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                                 nullptr);
        if (rc != SQLITE_OK) {
            open_failed(rc, sqlite3_errstr(rc));
        }
        sqlite3_extended_result_codes(db_, 1);
        // Another connection's lock (a process still closing the file) is waited for this
        // long before the open fails; afterwards this one holds the file alone.
        const auto busy_ms =
            std::chrono::duration_cast<std::chrono::milliseconds>(timeout_).count();
        sqlite3_busy_timeout(db_, static_cast<int>(std::min<std::int64_t>(
                                      busy_ms, std::numeric_limits<int>::max())));
        try {
            // Exclusive: no other connection (another store on the same file) may write
            // behind this one's back, and WAL needs no shared memory.
            exec("PRAGMA locking_mode = EXCLUSIVE");
            {
                statement s(db_, "PRAGMA journal_mode = WAL");
                query q(s);
                if (!q.step() || q.text(0) != "wal") {
                    open_failed(SQLITE_ERROR, "the journal cannot be put in WAL mode");
                }
            }
            exec(opt_.fsync ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
            exec("BEGIN IMMEDIATE");
            exec(schema_sql);
            std::optional<std::int64_t> version;
            {
                statement s(db_, "SELECT value FROM meta WHERE key = 'schema_version'");
                query q(s);
                if (q.step()) {
                    version = q.integer(0);
                }
            }
            if (!version) {
                exec("INSERT INTO meta(key, value) VALUES ('schema_version', 1)");
            } else if (*version > schema_version) {
                exec("ROLLBACK");
                std::string what = "schema version ";
                what += std::to_string(*version);
                what += " is newer than this library's (";
                what += std::to_string(schema_version);
                what += ")";
                open_failed(SQLITE_ERROR, what);
            }
            exec("COMMIT");
            done_count_ = count("SELECT count(*) FROM tasks WHERE state IN (3, 5)");
            dead_count_ = count("SELECT count(*) FROM tasks WHERE state = 4");
        } catch (const sqlite_failure& f) {
            open_failed(f.rc, sqlite3_errstr(f.rc));
        }
    }

    std::int64_t count(const char* sql) {
        statement s(db_, sql);
        query q(s);
        return q.step() ? q.integer(0) : 0;
    }

    statement& stmt(const char* sql) {
        auto& s = stmts_[sql];
        if (!s) {
            s = std::make_unique<statement>(db_, sql);
        }
        return *s;
    }

    // --- the thread ---------------------------------------------------------------------

    static void name(std::thread& t, const char* n) {
        // For an operator (top -H) and for the fault tests, which stop this very thread.
#ifdef __linux__
        pthread_setname_np(t.native_handle(), n);
#else
        (void)t;
        (void)n;
#endif
    }

    // The group (running_) is filled and emptied under the lock, for the watchdog to see;
    // this thread reads it meanwhile.
    void loop() {
        std::vector<std::unique_ptr<sqlite_op>> finished;
        for (;;) {
            {
                std::unique_lock lk(m_);
                cv_.wait(lk, [&] { return stopping_ || !q_.empty(); });
                if (q_.empty()) {
                    return;
                }
                while (!q_.empty() && running_.size() < std::max<std::size_t>(opt_.max_group, 1)) {
                    running_.push_back(std::move(q_.front()));
                    q_.pop_front();
                }
            }
            run_group(running_);
            {
                std::lock_guard lk(m_);
                running_.swap(finished);
            }
            finished.clear(); // outside the lock
        }
    }

    // Fails the operations whose time has run out: those still queued are taken out of the
    // queue (never to run); those of the group being written are answered, their results
    // dropped when the group ends.
    void watch() {
        std::vector<std::unique_ptr<sqlite_op>> expired;
        std::unique_lock lk(m_);
        while (!watchdog_stop_) {
            const auto now = std::chrono::steady_clock::now();
            std::optional<std::chrono::steady_clock::time_point> next;
            for (auto& op : running_) {
                if (op->answered()) {
                    continue;
                }
                if (op->deadline > now) {
                    next = op->deadline;
                    break;
                }
                op->expire();
            }
            while (!next && !q_.empty()) {
                if (q_.front()->deadline > now) {
                    next = q_.front()->deadline;
                    break;
                }
                q_.front()->expire();
                expired.push_back(std::move(q_.front()));
                q_.pop_front();
            }
            if (!expired.empty()) {
                lk.unlock();
                expired.clear();
                lk.lock();
                continue;
            }
            watchdog_idle_ = !next;
            if (next) {
                watchdog_cv_.wait_until(lk, *next);
            } else {
                watchdog_cv_.wait(lk);
            }
            watchdog_idle_ = false;
        }
    }

    void run_group(std::vector<std::unique_ptr<sqlite_op>>& group) {
        std::vector<sqlite_op*> ops;
        ops.reserve(group.size());
        for (auto& op : group) {
            if (op->begin()) {
                ops.push_back(op.get());
            }
        }
        const auto ec = ops.empty() ? error_code() : transact(ops, true);
        if (ec == error::store_full && ops.size() > 1) {
            // A full disk fails the whole group at its commit: each operation alone again,
            // so that those that write nothing (reads, the probe) still answer.
            for (auto* op : ops) {
                if (op->answered()) {
                    continue;
                }
                op->fail({});
                sqlite_op* one[] = {op};
                if (const auto e = transact(one, false)) {
                    op->fail(e);
                }
            }
        } else if (ec) {
            for (auto* op : ops) {
                op->fail(ec);
            }
        }
        for (auto& op : group) {
            op->complete();
        }
    }

    // Runs `ops` in one transaction (then trims, when `trim`): the transaction's error, or
    // success and the wake-up it makes.
    error_code transact(std::span<sqlite_op* const> ops, bool trim_too) {
        woke_.clear();
        const auto done_before = done_count_;
        const auto dead_before = dead_count_;
        std::optional<std::int64_t> wake;
        error_code group_ec;
        try {
            exec("BEGIN IMMEDIATE");
            for (auto* op : ops) {
                exec("SAVEPOINT op");
                int lost = SQLITE_OK;
                try {
                    op->run(*this);
                } catch (const sqlite_failure& f) {
                    op->fail(sqlite_error(f.rc));
                    lost = f.rc;
                } catch (const std::exception&) {
                    op->fail(error::store_error);
                }
                if (lost != SQLITE_OK && sqlite3_get_autocommit(db_)) {
                    // SQLite rolled the whole transaction back (a full disk may): the group
                    // fails as the operation did, not with the savepoint's "no such savepoint".
                    throw sqlite_failure{lost};
                }
                if (op->failed()) {
                    // What a failed operation wrote goes; its counts were not changed
                    // before its checks passed, except on a SQLite failure (recounted).
                    exec("ROLLBACK TO op");
                }
                exec("RELEASE op");
            }
            if (trim_too) {
                trim(now_ms());
            }
            if (!woke_.empty()) {
                const auto e = earliest();
                if (e && std::find(woke_.begin(), woke_.end(), *e) != woke_.end()) {
                    wake = e;
                }
            }
            exec("COMMIT");
        } catch (const sqlite_failure& f) {
            group_ec = sqlite_error(f.rc);
            sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
            done_count_ = done_before;
            dead_count_ = dead_before;
            wake.reset();
        }
        if (group_ec) {
            return group_ec;
        }
        transactions_.fetch_add(1, std::memory_order_relaxed);
        operations_.fetch_add(ops.size(), std::memory_order_relaxed);
        if (wake) {
            const auto t = ms(*wake);
            std::lock_guard lk(waiters_m_);
            std::erase_if(waiters_, [](const auto& w) { return w.expired(); });
            for (const auto& w : waiters_) {
                if (auto s = w.lock()) {
                    boost::asio::post(s->executor(), [w, t] {
                        if (auto s = w.lock()) {
                            s->wake(t);
                        }
                    });
                }
            }
        }
        return {};
    }

    // --- helpers ------------------------------------------------------------------------

    static std::optional<std::int64_t> due_from(char kind, std::int64_t value, std::int64_t now) {
        const auto due = kind == 'r' ? now + value : value;
        if (due < 0 || due > max_due.time_since_epoch().count()) {
            return std::nullopt;
        }
        return due;
    }

    std::optional<row> find(std::string_view id) {
        query q(stmt(find_sql));
        q.bind(1, id);
        if (!q.step()) {
            return std::nullopt;
        }
        row r;
        r.rowid = q.integer(0);
        r.state = q.integer(1);
        r.due = q.integer(2);
        r.attempt = q.integer(3);
        r.created = q.integer(4);
        r.updated = q.integer(5);
        r.max_attempts = q.integer(6);
        r.base = q.integer(7);
        r.cap = q.integer(8);
        r.last_error = q.text(9);
        r.token = q.text(10);
        r.lease_until = q.integer(11);
        r.lease_attempt = q.integer(12);
        r.started = q.integer(13);
        r.worker = q.text(14);
        return r;
    }

    std::optional<std::int64_t> earliest() {
        query q(stmt("SELECT due FROM tasks WHERE state = 0 ORDER BY due LIMIT 1"));
        if (q.step()) {
            return q.integer(0);
        }
        return std::nullopt;
    }

    // Delayed again (a retry, a reschedule, a requeue, a release): the lease goes.
    void delay(const row& r, std::int64_t due, std::int64_t attempt, std::string_view err,
               std::int64_t updated) {
        query u(stmt("UPDATE tasks SET state = 0, due = ?2, attempt = ?3, last_error = ?4, "
                     "updated = ?5, token = NULL, lease_until = NULL, lease_attempt = NULL, "
                     "started = NULL, worker = NULL WHERE rowid = ?1"));
        u.bind(1, r.rowid).bind(2, due).bind(3, attempt).bind(4, err).bind(5, updated).run();
        woke_.push_back(due);
    }

    // Finished, dead or cancelled. The payload stays (status() shows what the task was in
    // every state, timewheeld's callback included) until the row is trimmed: on disk it
    // costs what the task cost while it was delayed, for done_retention at most.
    void end(const row& r, std::int64_t state, std::int64_t attempt, std::string_view err,
             std::int64_t now) {
        query u(stmt("UPDATE tasks SET state = ?2, attempt = ?3, last_error = ?4, updated = ?5, "
                     "token = NULL, lease_until = NULL, lease_attempt = NULL, started = NULL, "
                     "worker = NULL WHERE rowid = ?1"));
        u.bind(1, r.rowid).bind(2, state).bind(3, attempt).bind(4, err).bind(5, now).run();
        if (state == dead) {
            ++dead_count_;
        } else {
            ++done_count_;
        }
    }

    void forget(std::int64_t rowid, std::string_view id) {
        query d(stmt("DELETE FROM tasks WHERE rowid = ?1"));
        d.bind(1, rowid).run();
        query l(stmt("DELETE FROM log WHERE id = ?1"));
        l.bind(1, id).run();
    }

    void log(std::string_view id, std::int64_t att, std::string_view worker, std::int64_t started,
             std::int64_t ended, const char* outcome, std::string_view err) {
        query q(stmt("INSERT INTO log(id, attempt, worker, started, ended, outcome, error) "
                     "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
        q.bind(1, id).bind(2, att).bind(3, worker).bind(4, started).bind(5, ended);
        q.bind(6, std::string_view(outcome)).bind(7, err).run();
        logged_ = true;
    }

    // Expired leases go back: a prefetched task at its due time (it never started); a
    // running one has used its attempt: retried now, or dead when it was the last.
    void expire(std::int64_t now) {
        std::vector<std::pair<std::int64_t, std::string>> ids;
        {
            query q(stmt("SELECT rowid, id FROM tasks WHERE state IN (1, 2) AND lease_until <= ?1 "
                         "ORDER BY lease_until LIMIT ?2"));
            q.bind(1, now).bind(2, expired_per_claim);
            while (q.step()) {
                ids.emplace_back(q.integer(0), q.text(1));
            }
        }
        for (const auto& [rowid, id] : ids) {
            auto r = find(id);
            if (!r) {
                continue;
            }
            if (r->state == prefetched) {
                delay(*r, r->due, r->attempt, r->last_error, r->updated);
                continue;
            }
            log(id, r->lease_attempt, r->worker, r->started, now, "lease_expired", "");
            if (r->lease_attempt >= r->max_attempts) {
                end(*r, dead, r->lease_attempt, "lease expired", now);
            } else {
                delay(*r, now, r->lease_attempt, "lease expired", now);
            }
        }
    }

    // The retry delay after attempt `att` failed: uniform in [0, min(cap, base * 2^(att-1))].
    std::int64_t backoff(const row& r, std::int64_t att) {
        const auto shift = std::max<std::int64_t>(att - 1, 0);
        std::int64_t d = r.cap;
        if (r.base == 0) {
            d = 0;
        } else if (shift < 62 && r.base <= (r.cap >> shift)) {
            d = r.base << shift;
        }
        return std::uniform_int_distribution<std::int64_t>(0, d)(rng_);
    }

    std::string token() {
        static constexpr char hex[] = "0123456789abcdef";
        std::string t(20, '0');
        std::uint64_t a = rng_();
        std::uint64_t b = rng_();
        for (std::size_t i = 0; i < t.size(); ++i) {
            std::uint64_t& v = i < 10 ? a : b;
            t[i] = hex[v & 15];
            v >>= 4;
        }
        return t;
    }

    // Forgets done and dead tasks beyond their age or count, and the oldest log entries
    // beyond log_max (bounded work per group; the next group goes on).
    void trim(std::int64_t now) {
        trim_set("SELECT rowid, id FROM tasks WHERE state IN (3, 5) AND updated <= ?1 "
                 "ORDER BY updated LIMIT ?2",
                 "SELECT rowid, id FROM tasks WHERE state IN (3, 5) ORDER BY updated LIMIT ?2",
                 now - opt_.done_retention.count(), done_count_, opt_.done_max);
        trim_set("SELECT rowid, id FROM tasks WHERE state = 4 AND updated <= ?1 "
                 "ORDER BY updated LIMIT ?2",
                 "SELECT rowid, id FROM tasks WHERE state = 4 ORDER BY updated LIMIT ?2",
                 now - opt_.dead_retention.count(), dead_count_, opt_.dead_max);
        if (logged_) {
            logged_ = false;
            const auto last = sqlite3_last_insert_rowid(db_);
            const auto keep = static_cast<std::int64_t>(std::max<std::size_t>(opt_.log_max, 1));
            if (last > keep) {
                query d(stmt("DELETE FROM log WHERE seq <= ?1"));
                d.bind(1, last - keep).run();
            }
        }
    }

    void trim_set(const char* by_age, const char* by_count, std::int64_t before, std::int64_t& n,
                  std::size_t max) {
        std::vector<std::pair<std::int64_t, std::string>> victims;
        {
            query q(stmt(by_age));
            q.bind(1, before).bind(2, trim_per_group);
            while (q.step()) {
                victims.emplace_back(q.integer(0), q.text(1));
            }
        }
        const auto over = n - static_cast<std::int64_t>(victims.size()) -
                          static_cast<std::int64_t>(
                              std::min<std::size_t>(max, std::numeric_limits<std::int64_t>::max()));
        if (over > 0 && victims.size() < trim_per_group) {
            // The oldest first; those the age pass took are among them.
            const std::size_t aged = victims.size();
            query q(stmt(by_count));
            q.bind(2,
                   static_cast<std::int64_t>(aged) + std::min<std::int64_t>(over, trim_per_group));
            while (q.step()) {
                const auto rowid = q.integer(0);
                if (std::none_of(victims.begin(),
                                 victims.begin() + static_cast<std::ptrdiff_t>(aged),
                                 [&](const auto& v) { return v.first == rowid; })) {
                    victims.emplace_back(rowid, q.text(1));
                }
            }
        }
        for (const auto& [rowid, id] : victims) {
            forget(rowid, id);
        }
        n -= static_cast<std::int64_t>(victims.size());
    }

    sqlite_store_options opt_;
    std::chrono::steady_clock::duration timeout_; // 0: none (no watchdog)
    std::mutex waiters_m_;
    std::vector<std::weak_ptr<sqlite_waiter>> waiters_;
    sqlite3* db_ = nullptr;
    std::unordered_map<const char*, std::unique_ptr<statement>> stmts_;
    std::mt19937_64 rng_;
    std::int64_t done_count_ = 0;
    std::int64_t dead_count_ = 0;
    std::vector<std::int64_t> woke_; // due times made delayed in this group
    bool logged_ = false;

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

namespace {

// An operation whose closure `fn(engine, ec, results...)` fills its results.
template <typename Fn, typename... R>
class fn_op final : public sqlite_op {
public:
    fn_op(const store::executor_type& ex, store::handler<void(error_code, R...)> h, Fn fn)
        : ex_(ex)
        , work_(boost::asio::prefer(ex, boost::asio::execution::outstanding_work.tracked))
        , h_(std::move(h))
        , fn_(std::move(fn)) {}

    void run(sqlite_engine& e) override {
        std::apply([&](R&... r) { fn_(e, ec_, r...); }, results_);
    }
    bool failed() const noexcept override { return static_cast<bool>(ec_); }
    void fail(error_code ec) override {
        ec_ = ec;
        results_ = {};
    }

private:
    void post_results() override {
        std::apply(
            [&](R&... r) {
                boost::asio::post(ex_, boost::asio::append(std::move(h_), ec_, std::move(r)...));
            },
            results_);
    }
    void post_timeout() override {
        boost::asio::post(
            ex_, boost::asio::append(std::move(h_), error_code(error::store_timeout), R{}...));
    }

    store::executor_type ex_;
    store::executor_type work_; // the io_context keeps running while the operation is away
    store::handler<void(error_code, R...)> h_;
    Fn fn_;
    error_code ec_;
    std::tuple<R...> results_;
};

} // namespace

} // namespace detail

namespace {

using boost::system::error_code;

template <typename H, typename... Args>
void post_now(const store::executor_type& ex, H h, Args&&... args) {
    boost::asio::post(ex, boost::asio::append(std::move(h), std::forward<Args>(args)...));
}

// Hands `fn` to the engine; fails the handler with operation_aborted when it is closed.
template <typename... R, typename Fn>
void enqueue(detail::sqlite_engine* engine, const store::executor_type& ex,
             store::handler<void(error_code, R...)> h, Fn fn) {
    if (!engine) {
        post_now(ex, std::move(h), error_code(boost::asio::error::operation_aborted), R{}...);
        return;
    }
    std::unique_ptr<detail::sqlite_op> op =
        std::make_unique<detail::fn_op<Fn, R...>>(ex, std::move(h), std::move(fn));
    if (!engine->push(op)) {
        // Stopped: complete it here (push left it with us).
        op->fail(boost::asio::error::operation_aborted);
        op->complete();
    }
}

} // namespace

namespace {

sqlite_store_options checked(sqlite_store_options opt) {
    if (opt.path.empty()) {
        throw std::invalid_argument("dq::sqlite_store: the database path is empty");
    }
    if (opt.done_retention.count() < 0 || opt.dead_retention.count() < 0) {
        throw std::invalid_argument("dq::sqlite_store: retention must not be negative");
    }
    return opt;
}

} // namespace

sqlite_store::sqlite_store(const executor_type& ex, sqlite_store_options opt)
    : ex_(ex)
    , opt_(checked(std::move(opt)))
    , waiter_(std::make_shared<detail::sqlite_waiter>(ex))
    , engine_(std::make_shared<detail::sqlite_engine>(opt_)) {
    engine_->add_waiter(waiter_);
}

namespace {

const std::shared_ptr<detail::sqlite_engine>&
open_engine(const std::shared_ptr<detail::sqlite_engine>& e) {
    if (!e) {
        throw std::invalid_argument("dq::sqlite_store: the store to share is closed");
    }
    return e;
}

} // namespace

sqlite_store::sqlite_store(const executor_type& ex, const sqlite_store& other)
    : ex_(ex)
    , opt_(other.opt_)
    , waiter_(std::make_shared<detail::sqlite_waiter>(ex))
    , engine_(open_engine(other.engine_)) {
    engine_->add_waiter(waiter_);
}

sqlite_store::~sqlite_store() {
    close();
}

void sqlite_store::close() {
    if (engine_) {
        // The last store of the database writes what is queued and stops the thread here;
        // no other can share it any more (sharing copies from a store that holds it).
        if (engine_.use_count() == 1) {
            engine_->stop();
        }
        stats_at_close_ = engine_->stats();
        engine_.reset();
    }
    waiter_->close();
}

sqlite_store_stats sqlite_store::stats() const noexcept {
    return engine_ ? engine_->stats() : stats_at_close_;
}

const sqlite_store_options& sqlite_store::options() const noexcept {
    return opt_;
}

store::executor_type sqlite_store::get_executor() const {
    return ex_;
}

const dq::limits& sqlite_store::get_limits() const noexcept {
    return opt_.limits;
}

void sqlite_store::do_submit(
    task t, handler<void(boost::system::error_code, submit_result, std::string)> h) {
    const auto due = detail::encode_due(t.due);
    enqueue<submit_result, std::string>(engine_.get(), ex_, std::move(h),
                                        [t = std::move(t), kind = due.kind,
                                         value = due.ms](detail::sqlite_engine& e, error_code& ec,
                                                         submit_result& r, std::string& id) {
                                            r = e.submit(t, kind, value, ec);
                                            if (!ec) {
                                                id = t.id;
                                            }
                                        });
}

void sqlite_store::do_cancel(std::string id,
                             handler<void(boost::system::error_code, cancel_result)> h) {
    enqueue<cancel_result>(engine_.get(), ex_, std::move(h),
                           [id = std::move(id)](detail::sqlite_engine& e, error_code&,
                                                cancel_result& r) { r = e.cancel(id); });
}

void sqlite_store::do_reschedule(std::string id, due_time due,
                                 handler<void(boost::system::error_code)> h) {
    const auto d = detail::encode_due(due);
    enqueue<>(engine_.get(), ex_, std::move(h),
              [id = std::move(id), kind = d.kind, value = d.ms](
                  detail::sqlite_engine& e, error_code& ec) { e.reschedule(id, kind, value, ec); });
}

void sqlite_store::do_status(std::string id,
                             handler<void(boost::system::error_code, task_status)> h) {
    enqueue<task_status>(engine_.get(), ex_, std::move(h),
                         [id = std::move(id)](detail::sqlite_engine& e, error_code& ec,
                                              task_status& r) { r = e.status(id, ec); });
}

void sqlite_store::do_list_dead(std::string cursor, std::size_t count,
                                handler<void(boost::system::error_code, dead_page)> h) {
    std::optional<std::pair<std::int64_t, std::string>> after;
    error_code ec;
    if (!cursor.empty()) {
        const auto colon = cursor.find(':');
        std::int64_t died = -1;
        if (colon != std::string::npos) {
            const auto r = std::from_chars(cursor.data(), cursor.data() + colon, died);
            if (r.ec != std::errc() || r.ptr != cursor.data() + colon) {
                died = -1;
            }
        }
        if (died < 0 || colon + 1 >= cursor.size()) {
            ec = error::invalid_argument;
        } else {
            after.emplace(died, cursor.substr(colon + 1));
        }
    }
    if (ec) {
        post_now(ex_, std::move(h), ec, dead_page{});
        return;
    }
    enqueue<dead_page>(
        engine_.get(), ex_, std::move(h),
        [after = std::move(after), count](detail::sqlite_engine& e, error_code&, dead_page& r) {
            r = e.list_dead(after, count);
        });
}

void sqlite_store::do_requeue_dead(std::string id, due_time due,
                                   handler<void(boost::system::error_code)> h) {
    const auto d = detail::encode_due(due);
    enqueue<>(engine_.get(), ex_, std::move(h),
              [id = std::move(id), kind = d.kind, value = d.ms](detail::sqlite_engine& e,
                                                                error_code& ec) {
                  e.requeue_dead(id, kind, value, ec);
              });
}

void sqlite_store::do_delete_dead(std::string id, handler<void(boost::system::error_code)> h) {
    enqueue<>(
        engine_.get(), ex_, std::move(h),
        [id = std::move(id)](detail::sqlite_engine& e, error_code& ec) { e.delete_dead(id, ec); });
}

void sqlite_store::do_claim(const claim_options& opt,
                            handler<void(boost::system::error_code, claim_result)> h) {
    enqueue<claim_result>(
        engine_.get(), ex_, std::move(h),
        [opt](detail::sqlite_engine& e, error_code&, claim_result& r) { r = e.claim(opt); });
}

void sqlite_store::do_start(std::vector<lease_ref> leases,
                            handler<void(boost::system::error_code, std::vector<start_result>)> h) {
    enqueue<std::vector<start_result>>(
        engine_.get(), ex_, std::move(h),
        [leases = std::move(leases)](detail::sqlite_engine& e, error_code&,
                                     std::vector<start_result>& r) { r = e.start(leases); });
}

void sqlite_store::do_renew(std::vector<lease_ref> leases, duration lease,
                            handler<void(boost::system::error_code, std::vector<ack_result>)> h) {
    enqueue<std::vector<ack_result>>(
        engine_.get(), ex_, std::move(h),
        [leases = std::move(leases), lease](detail::sqlite_engine& e, error_code&,
                                            std::vector<ack_result>& r) {
            r = e.renew(leases, lease);
        });
}

void sqlite_store::do_acknowledge(
    std::vector<ack> acks, handler<void(boost::system::error_code, std::vector<ack_result>)> h) {
    enqueue<std::vector<ack_result>>(
        engine_.get(), ex_, std::move(h),
        [acks = std::move(acks)](detail::sqlite_engine& e, error_code&,
                                 std::vector<ack_result>& r) { r = e.acknowledge(acks); });
}

void sqlite_store::do_release(std::vector<lease_ref> leases,
                              handler<void(boost::system::error_code)> h) {
    enqueue<>(
        engine_.get(), ex_, std::move(h),
        [leases = std::move(leases)](detail::sqlite_engine& e, error_code&) { e.release(leases); });
}

void sqlite_store::wait_wakeup(handler<void(boost::system::error_code, time_point)> h) {
    waiter_->wait(std::move(h));
}

void sqlite_store::now(handler<void(boost::system::error_code, time_point)> h) {
    post_now(ex_, std::move(h), error_code(), detail::ms(detail::now_ms()));
}

void sqlite_store::probe(handler<void(boost::system::error_code, time_point)> h) {
    enqueue<time_point>(
        engine_.get(), ex_, std::move(h),
        [](detail::sqlite_engine& e, error_code&, time_point& t) { t = e.probe(); });
}

void sqlite_store::earliest_due(
    handler<void(boost::system::error_code, time_point, std::optional<time_point>)> h) {
    enqueue<time_point, std::optional<time_point>>(
        engine_.get(), ex_, std::move(h),
        [](detail::sqlite_engine& e, error_code&, time_point& now,
           std::optional<time_point>& earliest) { earliest = e.earliest_due(now); });
}

} // namespace timewheel::dq
