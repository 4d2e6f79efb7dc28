//
// src/dq/sqlite/engine.cpp
//
// The engine's thread: it takes the operations queued by the stores in groups of up to
// max_group, runs each group in one write transaction (each operation in a savepoint of its
// own, so that one that fails takes back only what it wrote), commits once (one fsync, when
// the group holds a write its caller is promised: sqlite_store_options::fsync_worker), and
// then completes the group's operations and publishes the wake-up it made. The watchdog, a
// second thread when operations have a timeout, answers those whose time ran out; it sees the
// queue and the group being written under the same lock.
//

#include "engine.hpp"

#include <pthread.h>

#include <algorithm>
#include <exception>

namespace timewheel::dq::detail {

using boost::system::error_code;
using namespace sqlite;

sqlite_engine::sqlite_engine(const sqlite_store_options& opt)
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

sqlite_engine::~sqlite_engine() {
    stop(); // then db_ finalizes its statements and closes the file
}

bool sqlite_engine::push(std::unique_ptr<sqlite_op>& op) {
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

void sqlite_engine::stop() {
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

void sqlite_engine::name(std::thread& t, const char* n) {
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
void sqlite_engine::loop() {
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
void sqlite_engine::watch() {
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

void sqlite_engine::run_group(std::vector<std::unique_ptr<sqlite_op>>& group) {
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
error_code sqlite_engine::transact(std::span<sqlite_op* const> ops, bool trim_too) {
    woke_.clear();
    const auto counts_before = counts_;
    // Two plain values, not an optional: out of line, g++ 12 takes an optional's value here
    // for maybe-uninitialized.
    bool wake = false;
    std::int64_t wake_at = 0;
    error_code group_ec;
    try {
        // fsync for a group holding a promised write (a submit, a cancel...), not for one of
        // the worker's transitions alone (sqlite_store_options::fsync_worker). A PRAGMA
        // between transactions: SQLite reads the level at each commit.
        const bool sync =
            opt_.fsync &&
            (opt_.fsync_worker ||
             std::any_of(ops.begin(), ops.end(), [](const sqlite_op* op) { return op->durable; }));
        if (sync != synced_) {
            exec(sync ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL");
            synced_ = sync;
        }
        exec("BEGIN IMMEDIATE");
        for (auto* op : ops) {
            exec("SAVEPOINT op");
            const auto op_counts = counts_;
            int lost = SQLITE_OK;
            try {
                op->run(*this);
            } catch (const sqlite_failure& f) {
                op->fail(sqlite_error(f.rc));
                lost = f.rc;
            } catch (const std::exception&) {
                op->fail(error::store_error);
            }
            if (lost != SQLITE_OK && sqlite3_get_autocommit(db_.get())) {
                // SQLite rolled the whole transaction back (a full disk may): the group
                // fails as the operation did, not with the savepoint's "no such savepoint".
                throw sqlite_failure{lost};
            }
            if (op->failed()) {
                // What a failed operation wrote goes, and what it counted with it.
                exec("ROLLBACK TO op");
                counts_ = op_counts;
            }
            exec("RELEASE op");
        }
        if (trim_too) {
            trim(now_ms());
        }
        if (!woke_.empty()) {
            const auto e = earliest();
            if (e && std::find(woke_.begin(), woke_.end(), *e) != woke_.end()) {
                wake = true;
                wake_at = *e;
            }
        }
        exec("COMMIT");
    } catch (const sqlite_failure& f) {
        group_ec = sqlite_error(f.rc);
        sqlite3_exec(db_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
        counts_ = counts_before;
        wake = false;
    }
    if (group_ec) {
        return group_ec;
    }
    transactions_.fetch_add(1, std::memory_order_relaxed);
    operations_.fetch_add(ops.size(), std::memory_order_relaxed);
    if (wake) {
        const auto t = ms(wake_at);
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

} // namespace timewheel::dq::detail
