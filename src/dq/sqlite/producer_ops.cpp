//
// src/dq/sqlite/producer_ops.cpp
//
// The producer's operations on the engine's thread, inside the group's transaction: submit,
// cancel, reschedule, status, the dead letters (list, requeue, delete), and the two reads for
// monitoring (earliest_due, probe). Their input was checked by dq::store; a relative due time
// becomes absolute here, on the store's clock, and may still fall out of range. The semantics
// are those of the Redis store's scripts, state by state.
//

#include "engine.hpp"

#include <algorithm>

namespace timewheel::dq::detail {

using boost::system::error_code;
using namespace sqlite;

namespace {

std::optional<std::int64_t> due_from(char kind, std::int64_t value, std::int64_t now) {
    const auto due = kind == 'r' ? now + value : value;
    if (due < 0 || due > max_due.time_since_epoch().count()) {
        return std::nullopt;
    }
    return due;
}

} // namespace

submit_result sqlite_engine::submit(const task& t, char kind, std::int64_t value, error_code& ec) {
    const auto now = now_ms();
    const auto due = due_from(kind, value, now);
    if (!due) {
        ec = error::due_out_of_range;
        return submit_result::created;
    }
    // Debounce: never past the first submit + max_delay, capped here, in the transaction.
    const auto capped = [&](std::int64_t created) {
        return t.max_delay ? std::min(*due, created + t.max_delay->count()) : *due;
    };
    if (auto r = find(t.id)) {
        if (t.replace && (r->state == delayed || r->state == prefetched)) {
            // A prefetched task is taken back from its worker, as reschedule does.
            query q(stmt("UPDATE tasks SET payload = ?2 WHERE rowid = ?1"));
            q.bind(1, r->rowid).bind(2, t.payload).run();
            delay(*r, capped(r->created), r->attempt, r->last_error, now);
            return submit_result::replaced;
        }
        return submit_result::exists;
    }
    query q(stmt("INSERT INTO tasks(id, state, due, attempt, created, updated, max_attempts, "
                 "base, cap, last_error, payload, queue) VALUES (?1, 0, ?2, 0, ?3, ?3, ?4, ?5, "
                 "?6, x'', ?7, ?8)"));
    const auto first_due = capped(now);
    q.bind(1, t.id).bind(2, first_due).bind(3, now);
    q.bind(4, static_cast<std::int64_t>(t.retry.max_attempts))
        .bind(5, t.retry.base.count())
        .bind(6, t.retry.cap.count())
        .bind(7, t.payload);
    // The default queue is NULL (no name): see schema.cpp.
    if (t.queue.empty()) {
        q.bind_null(8);
    } else {
        q.bind(8, t.queue);
    }
    q.run();
    moved(-1, delayed);
    woke_.push_back(first_due);
    return submit_result::created;
}

cancel_result sqlite_engine::cancel(const std::string& id) {
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

void sqlite_engine::reschedule(const std::string& id, char kind, std::int64_t value,
                               error_code& ec) {
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

task_status sqlite_engine::status(const std::string& id, error_code& ec) {
    task_status out;
    query q(stmt("SELECT state, due, attempt, created, updated, max_attempts, base, cap, "
                 "last_error, payload, lease_attempt, queue FROM tasks WHERE id = ?1"));
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
    out.queue = q.is_null(11) ? std::string(default_queue) : q.text(11);
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
dead_page sqlite_engine::list_dead(std::optional<std::pair<std::int64_t, std::string>> after,
                                   std::size_t count) {
    dead_page page;
    const auto limit = static_cast<std::int64_t>(count) + 1;
    auto read = [&](query& q) {
        while (q.step()) {
            if (page.entries.size() == count) {
                const auto& last = page.entries.back();
                page.cursor = std::to_string(last.died.time_since_epoch().count()) + ":" + last.id;
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

void sqlite_engine::requeue_dead(const std::string& id, char kind, std::int64_t value,
                                 error_code& ec) {
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
}

void sqlite_engine::delete_dead(const std::string& id, error_code& ec) {
    auto r = find(id);
    if (!r || r->state != dead) {
        ec = error::not_found;
        return;
    }
    forget(r->rowid, id, dead);
}

// The delayed index's first entry: one index read.
std::optional<time_point> sqlite_engine::earliest_due(time_point& now) {
    now = ms(now_ms());
    if (auto e = earliest()) {
        return ms(*e);
    }
    return std::nullopt;
}

// The readiness probe: the file answers a query (in the group's write transaction).
time_point sqlite_engine::probe() {
    query q(stmt("SELECT value FROM meta WHERE key = 'schema_version'"));
    if (!q.step()) {
        throw sqlite_failure{SQLITE_CORRUPT};
    }
    return ms(now_ms());
}

} // namespace timewheel::dq::detail
