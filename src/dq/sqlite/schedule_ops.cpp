//
// src/dq/sqlite/schedule_ops.cpp
//
// Schedules on the engine's thread, inside the group's transaction (schema.cpp, table
// schedules): the producer's operations, and the materialiser's two. A materialisation is
// one savepoint of that transaction: it compares the schedule's revision, creates the
// occurrences' tasks (submit's own code, so that they are ordinary tasks) and moves the
// cursor, or changes nothing; the revision compare, not the tasks' ids, is what makes an
// occurrence one task, so a task that finished and was forgotten is never created again.
// The semantics are those of the Redis store's scripts (src/dq/redis/lua/schedule_*.lua).
//

#include "engine.hpp"

#include <timewheel/dq/detail/input_checks.hpp>

namespace timewheel::dq::detail {

using boost::system::error_code;
using namespace sqlite;

namespace {

// The columns read_status() reads: a macro, so that each query is one literal (the
// connection keys its prepared statements on a literal's address).
#define TIMEWHEEL_SCHEDULE_COLS                                                                    \
    "SELECT id, rule, rest, paused, created, updated, cursor, next, last_task, occurrences, "      \
    "triggers, skipped_misfire, skipped_overlap, revision FROM schedules "

// A row of TIMEWHEEL_SCHEDULE_COLS; false when its spec does not decode (not written by this
// library).
bool read_status(const query& q, schedule_status& st) {
    st.spec.id = q.text(0);
    if (!decode_spec(q.text(1), q.text(2), st.spec)) {
        return false;
    }
    st.spec.paused = q.integer(3) != 0;
    st.created = ms(q.integer(4));
    st.updated = ms(q.integer(5));
    st.cursor = ms(q.integer(6));
    st.next = q.is_null(7) ? std::nullopt : std::optional<time_point>(ms(q.integer(7)));
    st.last_task = q.text(8);
    st.occurrences = static_cast<std::uint64_t>(q.integer(9));
    st.triggers = static_cast<std::uint64_t>(q.integer(10));
    st.skipped_misfire = static_cast<std::uint64_t>(q.integer(11));
    st.skipped_overlap = static_cast<std::uint64_t>(q.integer(12));
    st.revision = static_cast<std::uint64_t>(q.integer(13));
    return true;
}

// Where a schedule restarts (create, resume, a changed rule): now, but never before what
// was materialised already.
std::int64_t restart(std::int64_t cursor, std::int64_t now) {
    return std::max(cursor, now);
}

} // namespace

create_schedule_result sqlite_engine::create_schedule(const schedule_spec& spec, error_code& ec) {
    const auto e = encode_spec(spec);
    {
        query q(stmt("SELECT rule, rest FROM schedules WHERE id = ?1"));
        q.bind(1, spec.id);
        if (q.step()) {
            if (q.text(0) != e.rule || q.text(1) != e.rest) {
                ec = error::schedule_conflict;
            }
            return create_schedule_result::exists;
        }
    }
    const auto now = now_ms();
    query q(stmt("INSERT INTO schedules(id, rule, rest, paused, created, updated, cursor, next, "
                 "last_task, occurrences, triggers, skipped_misfire, skipped_overlap, revision) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?5, ?5, ?5, x'', 0, 0, 0, 0, 1)"));
    q.bind(1, spec.id).bind(2, e.rule).bind(3, e.rest).bind(4, spec.paused ? 1 : 0).bind(5, now);
    q.run();
    return create_schedule_result::created;
}

void sqlite_engine::replace_schedule(const schedule_spec& spec, error_code& ec) {
    const auto e = encode_spec(spec);
    std::string rule;
    std::int64_t paused = 0;
    std::int64_t cursor = 0;
    std::optional<std::int64_t> next;
    {
        query q(stmt("SELECT rule, paused, cursor, next FROM schedules WHERE id = ?1"));
        q.bind(1, spec.id);
        if (!q.step()) {
            ec = error::not_found;
            return;
        }
        rule = q.text(0);
        paused = q.integer(1);
        cursor = q.integer(2);
        if (!q.is_null(3)) {
            next = q.integer(3);
        }
    }
    const auto now = now_ms();
    if (rule != e.rule || (paused != 0 && !spec.paused)) {
        cursor = restart(cursor, now);
        next = cursor;
    }
    query q(stmt("UPDATE schedules SET rule = ?2, rest = ?3, paused = ?4, updated = ?5, "
                 "cursor = ?6, next = ?7, revision = revision + 1 WHERE id = ?1"));
    q.bind(1, spec.id).bind(2, e.rule).bind(3, e.rest).bind(4, spec.paused ? 1 : 0);
    q.bind(5, now).bind(6, cursor);
    if (next) {
        q.bind(7, *next);
    } else {
        q.bind_null(7);
    }
    q.run();
}

schedule_status sqlite_engine::get_schedule(const std::string& id, error_code& ec) {
    schedule_status st;
    query q(stmt(TIMEWHEEL_SCHEDULE_COLS "WHERE id = ?1"));
    q.bind(1, id);
    if (!q.step()) {
        ec = error::not_found;
    } else if (!read_status(q, st)) {
        ec = error::store_error;
    }
    return st;
}

// Cursor: the last id returned (ids are unique, and the page is in id order).
schedule_page sqlite_engine::list_schedules(const std::string& after, std::size_t count) {
    schedule_page page;
    query q(stmt(TIMEWHEEL_SCHEDULE_COLS "WHERE id > ?1 ORDER BY id LIMIT ?2"));
    q.bind(1, after).bind(2, static_cast<std::int64_t>(count) + 1);
    while (q.step()) {
        if (page.entries.size() == count) {
            page.cursor = page.entries.back().spec.id;
            break;
        }
        schedule_status st;
        if (read_status(q, st)) {
            page.entries.push_back(std::move(st));
        }
    }
    return page;
}

void sqlite_engine::delete_schedule(const std::string& id, error_code& ec) {
    query q(stmt("DELETE FROM schedules WHERE id = ?1"));
    q.bind(1, id).run();
    if (sqlite3_changes(db_.get()) == 0) {
        ec = error::not_found;
    }
}

void sqlite_engine::pause_schedule(const std::string& id, bool paused, error_code& ec) {
    std::int64_t was = 0;
    std::int64_t cursor = 0;
    {
        query q(stmt("SELECT paused, cursor FROM schedules WHERE id = ?1"));
        q.bind(1, id);
        if (!q.step()) {
            ec = error::not_found;
            return;
        }
        was = q.integer(0);
        cursor = q.integer(1);
    }
    if ((was != 0) == paused) {
        return;
    }
    const auto now = now_ms();
    if (paused) {
        query q(stmt("UPDATE schedules SET paused = 1, updated = ?2, revision = revision + 1 "
                     "WHERE id = ?1"));
        q.bind(1, id).bind(2, now).run();
        return;
    }
    cursor = restart(cursor, now);
    query q(stmt("UPDATE schedules SET paused = 0, updated = ?2, cursor = ?3, next = ?3, "
                 "revision = revision + 1 WHERE id = ?1"));
    q.bind(1, id).bind(2, now).bind(3, cursor).run();
}

std::string sqlite_engine::trigger_schedule(const std::string& id, error_code& ec) {
    schedule_status st = get_schedule(id, ec);
    if (ec) {
        return {};
    }
    // A trigger number whose task is still remembered (a schedule deleted and created again
    // under its id) is passed over: a trigger always makes a new task.
    auto n = st.triggers;
    task t;
    submit_result r = submit_result::exists;
    for (int tries = 0; tries < 1000 && r == submit_result::exists && !ec; ++tries) {
        ++n;
        t.id = trigger_id(id, n);
        t.payload = st.spec.payload;
        t.retry = st.spec.retry;
        r = submit(t, 'r', 0, ec);
    }
    if (!ec && r != submit_result::created) {
        ec = error::store_error;
    }
    if (ec) {
        return {};
    }
    query q(stmt("UPDATE schedules SET triggers = ?2, last_task = ?3 WHERE id = ?1"));
    q.bind(1, id).bind(2, static_cast<std::int64_t>(n)).bind(3, t.id).run();
    return t.id;
}

due_schedules_result sqlite_engine::due_schedules(duration window, std::size_t batch) {
    due_schedules_result out;
    const auto now = now_ms();
    out.now = ms(now);
    query q(stmt(TIMEWHEEL_SCHEDULE_COLS "WHERE paused = 0 AND next <= ?1 ORDER BY next LIMIT ?2"));
    q.bind(1, now + window.count()).bind(2, static_cast<std::int64_t>(batch));
    while (q.step()) {
        schedule_status st;
        if (read_status(q, st)) {
            out.schedules.push_back(std::move(st));
        }
    }
    return out;
}

std::vector<materialise_result> sqlite_engine::materialise(const std::vector<materialisation>& ms) {
    std::vector<materialise_result> out(ms.size());
    for (std::size_t i = 0; i < ms.size(); ++i) {
        const auto& m = ms[i];
        auto& r = out[i];
        std::string last;
        {
            query q(stmt("SELECT revision, paused, last_task FROM schedules WHERE id = ?1"));
            q.bind(1, m.schedule_id);
            if (!q.step() || static_cast<std::uint64_t>(q.integer(0)) != m.revision ||
                q.integer(1) != 0) {
                continue; // deleted, paused or changed since it was read: not committed
            }
            last = q.text(2);
        }
        r.committed = true;
        for (const auto& o : m.occurrences) {
            if (m.forbid_overlap && !last.empty()) {
                const auto prev = find(last);
                if (prev && (prev->state == delayed || prev->claimed())) {
                    ++r.overlapped;
                    continue;
                }
            }
            task t;
            t.id = o.task_id;
            t.payload = m.payload;
            t.retry = m.retry;
            error_code ec;
            if (submit(t, 'a', o.at.time_since_epoch().count(), ec) == submit_result::created &&
                !ec) {
                ++r.created;
            }
            last = o.task_id;
        }
        query q(stmt("UPDATE schedules SET cursor = ?2, next = ?3, last_task = ?4, "
                     "occurrences = occurrences + ?5, skipped_misfire = skipped_misfire + ?6, "
                     "skipped_overlap = skipped_overlap + ?7, revision = revision + 1 "
                     "WHERE id = ?1"));
        q.bind(1, m.schedule_id).bind(2, m.cursor.time_since_epoch().count());
        if (m.next) {
            q.bind(3, m.next->time_since_epoch().count());
        } else {
            q.bind_null(3);
        }
        q.bind(4, last).bind(5, static_cast<std::int64_t>(r.created));
        q.bind(6, static_cast<std::int64_t>(m.skipped_misfire));
        q.bind(7, static_cast<std::int64_t>(r.overlapped));
        q.run();
    }
    return out;
}

#undef TIMEWHEEL_SCHEDULE_COLS

} // namespace timewheel::dq::detail
