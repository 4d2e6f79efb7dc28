//
// src/dq/sqlite/query_ops.cpp
//
// Listing and counting tasks (dq::store::list_tasks, count_tasks). A page is one index range
// read in the state's order: delayed on tasks_due (due, id), finished, cancelled and dead on
// their (updated, id) indexes, from the cursor's position with a row-value bound, so that a
// page deep in costs what the first one does. Prefetched and running tasks have no index in
// due order (one would cost every claim and start a write more): their page reads the leased
// index whole, O(claimed tasks), which workers bound by what they hold.
//
// An id_prefix is a filter on the id, which the (key, id) indexes hold: no table read per
// rejected row. When few ids carry the prefix (under prefix_plan_limit, counted on the id
// index), the page reads those rows by id and sorts them instead: a rare prefix would
// otherwise scan the whole state. The two plans bound each other's worst case: a common
// prefix is found quickly in key order, a rare one is few rows by id.
//
// Counts are counts_ (kept by every write, engine.hpp): a COUNT over a million index entries
// takes about 170 ms. due_now is an index range count, O(tasks due now).
//

#include "engine.hpp"

#include <timewheel/dq/detail/input_checks.hpp>

#include <array>
#include <string>

namespace timewheel::dq::detail {

using namespace sqlite;

namespace {

// Below this many ids with the prefix (all states), a page reads them by id and sorts.
constexpr std::int64_t prefix_plan_limit = 2048;

// One statement per state, order and plan, built once; the connection caches statements by
// the SQL's address. Parameters: ?1 ?2 the start position (key, id), exclusive; ?3 the other
// end of the key range (asc: key < ?3; desc: key >= ?3); ?4 ?5 the id range [?4, ?5); ?6 the
// limit.
const char* list_sql(task_state state, bool descending, bool by_id) {
    static const auto table = [] {
        std::array<std::string, 24> t;
        for (int s = 0; s < 6; ++s) {
            for (int d = 0; d < 2; ++d) {
                for (int b = 0; b < 2; ++b) {
                    const bool ended = s >= 3;
                    const std::string key = ended ? "updated" : "due";
                    const std::string n = std::to_string(s);
                    std::string index;
                    std::string where;
                    if (b == 1) {
                        index = "sqlite_autoindex_tasks_1";
                        where = "state = " + n;
                    } else if (s == 1 || s == 2) {
                        index = "tasks_leased";
                        where = "state IN (1, 2) AND state = " + n;
                    } else {
                        constexpr const char* names[] = {
                            "tasks_due", "", "", "tasks_finished", "tasks_dead", "tasks_cancelled"};
                        index = names[s];
                        where = "state = " + n;
                    }
                    const std::string cmp = d ? " < " : " > ";
                    const std::string dir = d ? " DESC" : "";
                    t[static_cast<std::size_t>(s * 4 + d * 2 + b)] =
                        "SELECT id, state, " + key +
                        ", due, CASE WHEN state = 2 THEN lease_attempt ELSE attempt END, "
                        "last_error, payload, queue FROM tasks INDEXED BY " +
                        index + " WHERE " + where + " AND (" + key + ", id)" + cmp +
                        "(?1, ?2) AND " + key + (d ? " >= ?3" : " < ?3") +
                        " AND id >= ?4 AND id < ?5 AND (length(?7) = 0 OR coalesce(queue, "
                        "CAST('default' AS BLOB)) = ?7) ORDER BY " +
                        key + dir + ", id" + dir + " LIMIT ?6";
                }
            }
        }
        return t;
    }();
    return table[static_cast<std::size_t>(static_cast<int>(state) * 4 + (descending ? 2 : 0) +
                                          (by_id ? 1 : 0))]
        .c_str();
}

// The first id after every id that starts with `prefix`: the prefix with its last byte below
// 0xff raised by one; or, for a prefix of 0xff bytes only, one longer than any id.
std::string prefix_end(std::string prefix, std::size_t max_id_bytes) {
    while (!prefix.empty() && static_cast<unsigned char>(prefix.back()) == 0xff) {
        prefix.pop_back();
    }
    if (prefix.empty()) {
        return std::string(max_id_bytes + 1, '\xff');
    }
    prefix.back() = static_cast<char>(static_cast<unsigned char>(prefix.back()) + 1);
    return prefix;
}

} // namespace

task_page sqlite_engine::list_tasks(const task_query& q, const std::optional<task_position>& from,
                                    std::optional<task_position>& next) {
    const auto [start_key, start_id, end_key] = bounds_of(q, from);
    const std::string id_end = q.id_prefix.empty()
                                   ? std::string(opt_.limits.max_id_bytes + 1, '\xff')
                                   : prefix_end(q.id_prefix, opt_.limits.max_id_bytes);
    bool by_id = false;
    if (!q.id_prefix.empty()) {
        query c(stmt("SELECT count(*) FROM (SELECT 1 FROM tasks INDEXED BY "
                     "sqlite_autoindex_tasks_1 WHERE id >= ?1 AND id < ?2 LIMIT ?3)"));
        c.bind(1, q.id_prefix).bind(2, id_end).bind(3, prefix_plan_limit);
        by_id = c.step() && c.integer(0) < prefix_plan_limit;
    }
    query s(stmt(list_sql(q.state, q.descending, by_id)));
    s.bind(1, start_key).bind(2, start_id).bind(3, end_key);
    s.bind(4, q.id_prefix).bind(5, id_end).bind(6, static_cast<std::int64_t>(q.limit) + 1);
    s.bind(7, q.queue);
    task_page page;
    while (s.step()) {
        if (page.entries.size() == q.limit) {
            const auto& last = page.entries.back();
            next = task_position{last.key, last.id};
            break;
        }
        task_page::entry e;
        e.id = s.text(0);
        e.state = static_cast<task_state>(s.integer(1));
        e.key = ms(s.integer(2));
        e.due = ms(s.integer(3));
        e.attempt = static_cast<std::uint32_t>(s.integer(4));
        e.last_error = s.text(5);
        e.payload = s.text(6);
        e.queue = s.is_null(7) ? std::string(default_queue) : s.text(7);
        page.entries.push_back(std::move(e));
    }
    return page;
}

task_counts sqlite_engine::count_tasks() {
    task_counts c;
    const auto now = now_ms();
    const auto n = [&](std::int64_t state) { return static_cast<std::uint64_t>(counts_[state]); };
    c.delayed = n(delayed);
    c.prefetched = n(prefetched);
    c.running = n(running);
    c.finished = n(finished);
    c.dead = n(dead);
    c.cancelled = n(cancelled);
    c.now = ms(now);
    {
        query q(stmt("SELECT count(*) FROM tasks WHERE state = 0 AND due <= ?1"));
        q.bind(1, now);
        c.due_now = q.step() ? static_cast<std::uint64_t>(q.integer(0)) : 0;
    }
    if (auto e = earliest()) {
        c.oldest_due = ms(*e);
    }
    return c;
}

} // namespace timewheel::dq::detail
