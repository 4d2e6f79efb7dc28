//
// src/dq/sqlite/queue_ops.cpp
//
// Named queues' settings (schema.cpp, table queues) on the engine's thread, inside the
// group's transaction: the semantics of the Redis store's lua/queues.lua. The delete checks
// the tasks_queue index in the same transaction, so that on this store a queue is never
// deleted while it holds a task that can still run.
//

#include "engine.hpp"

#include <timewheel/dq/detail/input_checks.hpp>

namespace timewheel::dq::detail {

using boost::system::error_code;
using namespace sqlite;

namespace {

// A row of "SELECT name, spec, generation, created, updated"; false when its spec does not
// decode (not written by this library).
bool read_queue(const query& q, queue_status& st) {
    st.spec.id = q.text(0);
    st.generation = static_cast<std::uint64_t>(q.integer(2));
    st.created = ms(q.integer(3));
    st.updated = ms(q.integer(4));
    return decode_queue_spec(q.text(1), st.spec);
}

} // namespace

create_queue_result sqlite_engine::create_queue(const queue_spec& spec, error_code& ec) {
    const auto e = encode_queue_spec(spec);
    {
        query q(stmt("SELECT spec FROM queues WHERE name = ?1"));
        q.bind(1, spec.id);
        if (q.step()) {
            if (q.text(0) != e) {
                ec = error::queue_conflict;
            }
            return create_queue_result::exists;
        }
    }
    query q(stmt("INSERT INTO queues(name, spec, generation, created, updated) "
                 "VALUES (?1, ?2, 1, ?3, ?3)"));
    q.bind(1, spec.id).bind(2, e).bind(3, now_ms()).run();
    return create_queue_result::created;
}

void sqlite_engine::update_queue(const queue_spec& spec, error_code& ec) {
    query q(stmt("UPDATE queues SET spec = ?2, generation = generation + 1, updated = ?3 "
                 "WHERE name = ?1"));
    q.bind(1, spec.id).bind(2, encode_queue_spec(spec)).bind(3, now_ms()).run();
    if (sqlite3_changes(db_.get()) == 0) {
        ec = error::not_found;
    }
}

queue_status sqlite_engine::get_queue(const std::string& id, error_code& ec) {
    queue_status st;
    query q(stmt("SELECT name, spec, generation, created, updated FROM queues WHERE name = ?1"));
    q.bind(1, id);
    if (!q.step()) {
        ec = error::not_found;
    } else if (!read_queue(q, st)) {
        ec = error::store_error;
    }
    return st;
}

queue_page sqlite_engine::list_queues(const std::string& prefix, const std::string& after,
                                      std::size_t count) {
    queue_page page;
    // Names are [a-z0-9_/-]: substr compares the prefix exactly.
    query q(stmt("SELECT name, spec, generation, created, updated FROM queues "
                 "WHERE name > ?1 AND substr(name, 1, length(?2)) = ?2 ORDER BY name LIMIT ?3"));
    q.bind(1, after).bind(2, prefix).bind(3, static_cast<std::int64_t>(count) + 1);
    while (q.step()) {
        if (page.entries.size() == count) {
            page.cursor = page.entries.back().spec.id;
            break;
        }
        queue_status st;
        if (read_queue(q, st)) {
            page.entries.push_back(std::move(st));
        }
    }
    return page;
}

void sqlite_engine::delete_queue(const std::string& id, error_code& ec) {
    {
        // Delayed, prefetched, running or dead: a task that may still run.
        query q(stmt("SELECT 1 FROM tasks INDEXED BY tasks_queue WHERE queue = ?1 AND "
                     "state IN (0, 1, 2, 4) LIMIT 1"));
        q.bind(1, id);
        if (q.step()) {
            ec = error::queue_not_empty;
            return;
        }
    }
    query q(stmt("DELETE FROM queues WHERE name = ?1"));
    q.bind(1, id).run();
    if (sqlite3_changes(db_.get()) == 0) {
        ec = error::not_found;
    }
}

} // namespace timewheel::dq::detail
