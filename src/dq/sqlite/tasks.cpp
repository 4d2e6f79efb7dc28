//
// src/dq/sqlite/tasks.cpp
//
// What the operations do to a task's row, written once for all of them: read it, find the
// earliest delayed due time, delay it again (the lease goes), end it (finished, dead or
// cancelled, counted for trimming), forget it with its log, log an attempt. Trimming runs at
// the end of every group, in its transaction: it forgets what is past its retention or over
// its count, with bounded work per group.
//

#include "engine.hpp"

#include <algorithm>
#include <limits>

namespace timewheel::dq::detail {

using namespace sqlite;

namespace {

// Bounded work per group: the victims of one trim.
constexpr int trim_per_group = 256;

// The columns of a row, in the order find() reads them.
constexpr const char* find_sql =
    "SELECT rowid, state, due, attempt, created, updated, max_attempts, base, cap, last_error, "
    "token, lease_until, lease_attempt, started, worker FROM tasks WHERE id = ?1";

} // namespace

std::optional<row> sqlite_engine::find(std::string_view id) {
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

std::optional<std::int64_t> sqlite_engine::earliest() {
    query q(stmt("SELECT due FROM tasks WHERE state = 0 ORDER BY due LIMIT 1"));
    if (q.step()) {
        return q.integer(0);
    }
    return std::nullopt;
}

// Delayed again (a retry, a reschedule, a requeue, a release): the lease goes.
void sqlite_engine::delay(const row& r, std::int64_t due, std::int64_t attempt,
                          std::string_view err, std::int64_t updated) {
    query u(stmt("UPDATE tasks SET state = 0, due = ?2, attempt = ?3, last_error = ?4, "
                 "updated = ?5, token = NULL, lease_until = NULL, lease_attempt = NULL, "
                 "started = NULL, worker = NULL WHERE rowid = ?1"));
    u.bind(1, r.rowid).bind(2, due).bind(3, attempt).bind(4, err).bind(5, updated).run();
    moved(r.state, delayed);
    woke_.push_back(due);
}

// Finished, dead or cancelled. The payload stays (status() shows what the task was in
// every state, timewheeld's callback included) until the row is trimmed: on disk it
// costs what the task cost while it was delayed, for done_retention at most.
void sqlite_engine::end(const row& r, std::int64_t state, std::int64_t attempt,
                        std::string_view err, std::int64_t now) {
    query u(stmt("UPDATE tasks SET state = ?2, attempt = ?3, last_error = ?4, updated = ?5, "
                 "token = NULL, lease_until = NULL, lease_attempt = NULL, started = NULL, "
                 "worker = NULL WHERE rowid = ?1"));
    u.bind(1, r.rowid).bind(2, state).bind(3, attempt).bind(4, err).bind(5, now).run();
    moved(r.state, state);
}

void sqlite_engine::forget(std::int64_t rowid, std::string_view id, std::int64_t state) {
    query d(stmt("DELETE FROM tasks WHERE rowid = ?1"));
    d.bind(1, rowid).run();
    moved(state, -1);
    query l(stmt("DELETE FROM log WHERE id = ?1"));
    l.bind(1, id).run();
}

void sqlite_engine::log(std::string_view id, std::int64_t att, std::string_view worker,
                        std::int64_t started, std::int64_t ended, const char* outcome,
                        std::string_view err) {
    query q(stmt("INSERT INTO log(id, attempt, worker, started, ended, outcome, error) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"));
    q.bind(1, id).bind(2, att).bind(3, worker).bind(4, started).bind(5, ended);
    q.bind(6, std::string_view(outcome)).bind(7, err).run();
    logged_ = true;
}

// Forgets done and dead tasks beyond their age or count, and the oldest log entries
// beyond log_max (bounded work per group; the next group goes on).
void sqlite_engine::trim(std::int64_t now) {
    trim_set("SELECT rowid, id, state FROM tasks WHERE state IN (3, 5) AND updated <= ?1 "
             "ORDER BY updated LIMIT ?2",
             "SELECT rowid, id, state FROM tasks WHERE state IN (3, 5) ORDER BY updated LIMIT ?2",
             now - opt_.done_retention.count(), counts_[finished] + counts_[cancelled],
             opt_.done_max);
    trim_set("SELECT rowid, id, state FROM tasks WHERE state = 4 AND updated <= ?1 "
             "ORDER BY updated LIMIT ?2",
             "SELECT rowid, id, state FROM tasks WHERE state = 4 ORDER BY updated LIMIT ?2",
             now - opt_.dead_retention.count(), counts_[dead], opt_.dead_max);
    if (logged_) {
        logged_ = false;
        const auto last = sqlite3_last_insert_rowid(db_.get());
        const auto keep = static_cast<std::int64_t>(std::max<std::size_t>(opt_.log_max, 1));
        if (last > keep) {
            query d(stmt("DELETE FROM log WHERE seq <= ?1"));
            d.bind(1, last - keep).run();
        }
    }
}

void sqlite_engine::trim_set(const char* by_age, const char* by_count, std::int64_t before,
                             std::int64_t n, std::size_t max) {
    struct victim {
        std::int64_t rowid;
        std::string id;
        std::int64_t state;
    };
    std::vector<victim> victims;
    {
        query q(stmt(by_age));
        q.bind(1, before).bind(2, trim_per_group);
        while (q.step()) {
            victims.push_back({q.integer(0), q.text(1), q.integer(2)});
        }
    }
    const auto over = n - static_cast<std::int64_t>(victims.size()) -
                      static_cast<std::int64_t>(
                          std::min<std::size_t>(max, std::numeric_limits<std::int64_t>::max()));
    if (over > 0 && victims.size() < trim_per_group) {
        // The oldest first; those the age pass took are among them.
        const std::size_t aged = victims.size();
        query q(stmt(by_count));
        q.bind(2, static_cast<std::int64_t>(aged) + std::min<std::int64_t>(over, trim_per_group));
        while (q.step()) {
            const auto rowid = q.integer(0);
            if (std::none_of(victims.begin(), victims.begin() + static_cast<std::ptrdiff_t>(aged),
                             [&](const auto& v) { return v.rowid == rowid; })) {
                victims.push_back({rowid, q.text(1), q.integer(2)});
            }
        }
    }
    for (const auto& v : victims) {
        forget(v.rowid, v.id, v.state);
    }
}

} // namespace timewheel::dq::detail
