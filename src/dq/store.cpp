//
// src/dq/store.cpp
//
// dq::store's operations: the input checks every store relies on
// (include/timewheel/dq/detail/input_checks.hpp), made once here before a store's do_* override
// sees the operation. Bad input completes the handler with its dq::error through the store's
// executor, as a store's own failure would, and nothing reaches the store.
//

#include <timewheel/dq/detail/input_checks.hpp>

#include <timewheel/dq/error.hpp>

#include <algorithm>
#include <charconv>
#include <functional>
#include <memory>
#include <random>

namespace timewheel::dq {

namespace detail {

using boost::system::error_code;

error_code check_id(std::string_view id, const limits& lim) {
    if (id.empty()) {
        return error::empty_id;
    }
    if (id.size() > lim.max_id_bytes) {
        return error::id_too_long;
    }
    if (id.find('\0') != std::string_view::npos) {
        return error::invalid_id;
    }
    return {};
}

error_code check_due(const due_time& due) {
    const auto limit = max_due.time_since_epoch().count();
    if (const auto* tp = std::get_if<time_point>(&due)) {
        const auto value = tp->time_since_epoch().count();
        return value < 0 || value > limit ? error_code(error::due_out_of_range) : error_code();
    }
    const auto value = std::get<duration>(due).count();
    return value > limit || value < -limit ? error_code(error::due_out_of_range) : error_code();
}

encoded_due encode_due(const due_time& due) noexcept {
    if (const auto* tp = std::get_if<time_point>(&due)) {
        return {'a', tp->time_since_epoch().count()};
    }
    return {'r', std::get<duration>(due).count()};
}

error_code check_task(task& t, const limits& lim) {
    if (t.id.empty()) {
        t.id = generate_id();
    }
    error_code ec = check_id(t.id, lim);
    if (!ec && t.payload.size() > lim.max_payload_bytes) {
        ec = error::payload_too_large;
    }
    if (!ec) {
        ec = check_due(t.due);
    }
    if (!ec) {
        ec = check_policy(t.retry);
    }
    if (!ec && t.max_delay &&
        (!t.replace || t.max_delay->count() < 0 || t.max_delay->count() > max_backoff_ms)) {
        ec = error::invalid_argument;
    }
    if (!ec && !t.queue.empty()) {
        ec = check_queue_name(t.queue);
        // The default queue is kept as no name: its tasks' records do not grow.
        if (!ec && t.queue == default_queue) {
            t.queue.clear();
        }
    }
    return ec;
}

error_code check_queue_name(std::string_view name) {
    const auto part = [](std::string_view p) {
        return !p.empty() && p.size() <= max_queue_part &&
               std::all_of(p.begin(), p.end(), [](char c) {
                   return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
               });
    };
    const auto slash = name.find('/');
    const bool ok = slash == std::string_view::npos
                        ? part(name)
                        : part(name.substr(0, slash)) && part(name.substr(slash + 1));
    return ok ? error_code() : error_code(error::invalid_queue);
}

std::string encode_queue_spec(const queue_spec& spec) {
    if (!spec.retry) {
        return {};
    }
    std::string e = "r";
    e += std::to_string(spec.retry->max_attempts);
    e += ',';
    e += std::to_string(spec.retry->base.count());
    e += ',';
    e += std::to_string(spec.retry->cap.count());
    return e;
}

bool decode_queue_spec(std::string_view e, queue_spec& out) {
    out.retry.reset();
    if (e.empty()) {
        return true;
    }
    if (e[0] != 'r') {
        return false;
    }
    std::int64_t v[3] = {};
    const char* p = e.data() + 1;
    const char* end = e.data() + e.size();
    for (int i = 0; i < 3; ++i) {
        const auto [next, ec] = std::from_chars(p, end, v[i]);
        if (ec != std::errc() || v[i] < 0 || (i < 2 && (next == end || *next != ','))) {
            return false;
        }
        p = i < 2 ? next + 1 : next;
    }
    if (p != end || v[0] > std::int64_t(UINT32_MAX)) {
        return false;
    }
    out.retry = retry_policy{static_cast<std::uint32_t>(v[0]), duration(v[1]), duration(v[2])};
    return !check_policy(*out.retry);
}

error_code check_policy(const retry_policy& p) {
    if (p.max_attempts == 0) {
        return error::zero_attempts;
    }
    if (p.base.count() < 0 || p.cap.count() < 0 || p.base > p.cap ||
        p.cap.count() > max_backoff_ms) {
        return error::invalid_backoff;
    }
    return {};
}

namespace {

error_code check_token(std::string_view token) {
    return token.empty() || token.size() > max_token_bytes ? error_code(error::invalid_argument)
                                                           : error_code();
}

} // namespace

error_code check_leases(const std::vector<lease_ref>& leases, const limits& lim) {
    if (leases.size() > max_batch) {
        return error::invalid_argument;
    }
    for (const auto& l : leases) {
        if (auto ec = check_id(l.id, lim)) {
            return ec;
        }
        if (auto ec = check_token(l.token)) {
            return ec;
        }
    }
    return {};
}

std::string encode_task_cursor(task_state state, bool descending, const task_position& pos) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string c;
    c.reserve(24 + 2 * pos.id.size());
    c += char('0' + static_cast<int>(state));
    c += descending ? 'd' : 'a';
    c += std::to_string(pos.key.time_since_epoch().count());
    c += '.';
    for (unsigned char b : pos.id) {
        c += hex[b >> 4];
        c += hex[b & 15];
    }
    return c;
}

std::optional<task_position> decode_task_cursor(std::string_view c, task_state state,
                                                bool descending) {
    if (c.size() < 4 || c[0] != char('0' + static_cast<int>(state)) ||
        c[1] != (descending ? 'd' : 'a')) {
        return std::nullopt;
    }
    const auto dot = c.find('.', 2);
    if (dot == std::string_view::npos || dot == 2 || dot > 2 + 15) {
        return std::nullopt;
    }
    std::int64_t key = 0;
    for (std::size_t i = 2; i < dot; ++i) {
        if (c[i] < '0' || c[i] > '9') {
            return std::nullopt;
        }
        key = key * 10 + (c[i] - '0');
    }
    const auto hex = c.substr(dot + 1);
    if (key > max_due.time_since_epoch().count() || hex.empty() || hex.size() % 2 != 0) {
        return std::nullopt;
    }
    auto nibble = [](char x) -> int {
        if (x >= '0' && x <= '9') {
            return x - '0';
        }
        if (x >= 'a' && x <= 'f') {
            return x - 'a' + 10;
        }
        return -1;
    };
    task_position pos{time_point(duration(key)), std::string(hex.size() / 2, '\0')};
    for (std::size_t i = 0; i < pos.id.size(); ++i) {
        const int hi = nibble(hex[2 * i]);
        const int lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return std::nullopt;
        }
        pos.id[i] = static_cast<char>(hi * 16 + lo);
    }
    return pos;
}

list_bounds bounds_of(const task_query& q, const std::optional<task_position>& from) {
    const auto key = [](const std::optional<time_point>& t, std::int64_t none) {
        return t ? t->time_since_epoch().count() : none;
    };
    const auto max_key = max_due.time_since_epoch().count() + 1;
    list_bounds b;
    if (!q.descending) {
        b.start_key = key(q.after, -1);
        b.end_key = key(q.before, max_key);
    } else {
        b.start_key = key(q.before, max_key);
        b.end_key = key(q.after, 0);
    }
    // The cursor, when it is further along than the edge of the key range.
    if (from && comes_before(task_position{time_point(duration(b.start_key)), b.start_id}, *from,
                             q.descending)) {
        b.start_key = from->key.time_since_epoch().count();
        b.start_id = from->id;
    }
    return b;
}

std::string generate_id() {
    thread_local std::mt19937_64 rng = [] {
        std::random_device rd;
        return std::mt19937_64((std::uint64_t(rd()) << 32) ^ rd());
    }();
    static constexpr char digits[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    std::string id(12, '0');
    std::uint64_t a = rng();
    std::uint64_t b = rng();
    for (std::size_t i = 0; i < id.size(); ++i) {
        std::uint64_t& v = i < 6 ? a : b;
        id[i] = digits[v % 62];
        v /= 62;
    }
    return id;
}

} // namespace detail

using boost::system::error_code;

namespace {

// Completes `h` on the store's executor with `ec` and default values for the rest.
template <typename... R>
void refuse(const store& s, store::handler<void(error_code, R...)> h, error_code ec) {
    boost::asio::post(s.get_executor(), boost::asio::append(std::move(h), ec, R()...));
}

} // namespace

void store::submit(task t, handler<void(error_code, submit_result, std::string)> h) {
    if (auto ec = detail::check_task(t, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_submit(std::move(t), std::move(h));
}

void store::submit_many(std::vector<task> tasks,
                        handler<void(error_code, std::vector<submit_outcome>)> h) {
    if (tasks.empty() || tasks.size() > detail::max_batch) {
        return refuse(*this, std::move(h), error::invalid_argument);
    }
    // The tasks that pass go to the store together; the others are answered here, in place.
    std::vector<submit_outcome> out(tasks.size());
    std::vector<task> passed;
    std::vector<std::size_t> where; // passed[k] is tasks[where[k]]
    passed.reserve(tasks.size());
    where.reserve(tasks.size());
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        out[i].ec = detail::check_task(tasks[i], get_limits());
        out[i].id = tasks[i].id;
        if (!out[i].ec) {
            passed.push_back(std::move(tasks[i]));
            where.push_back(i);
        }
    }
    if (passed.empty()) {
        return boost::asio::post(get_executor(),
                                 boost::asio::append(std::move(h), error_code(), std::move(out)));
    }
    do_submit_many(std::move(passed),
                   [h = std::move(h), out = std::move(out), where = std::move(where)](
                       error_code ec, std::vector<submit_outcome> got) mutable {
                       for (std::size_t k = 0; k < where.size(); ++k) {
                           auto& o = out[where[k]];
                           if (ec || k >= got.size()) {
                               // The whole call failed: each of its tasks says so.
                               o.ec = ec ? ec : error_code(error::store_error);
                           } else {
                               o = std::move(got[k]);
                           }
                       }
                       std::move(h)(error_code(), std::move(out));
                   });
}

// Each task submitted at once; the answers gathered, in order (see store.hpp).
void store::do_submit_many(std::vector<task> tasks,
                           handler<void(error_code, std::vector<submit_outcome>)> h) {
    struct gather {
        std::vector<submit_outcome> out;
        std::size_t left = 0;
        // Constructed in place: Boost 1.81's any_completion_handler recurses forever on
        // move assignment.
        handler<void(error_code, std::vector<submit_outcome>)> h;
    };
    auto g = std::make_shared<gather>(
        gather{std::vector<submit_outcome>(tasks.size()), tasks.size(), std::move(h)});
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        g->out[i].id = tasks[i].id;
        do_submit(std::move(tasks[i]), [g, i](error_code ec, submit_result r, std::string) {
            g->out[i].ec = ec;
            g->out[i].result = r;
            if (--g->left == 0) {
                std::move(g->h)(error_code(), std::move(g->out));
            }
        });
    }
}

void store::cancel(std::string id, handler<void(error_code, cancel_result)> h) {
    if (auto ec = detail::check_id(id, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_cancel(std::move(id), std::move(h));
}

void store::reschedule(std::string id, due_time due, handler<void(error_code)> h) {
    error_code ec = detail::check_id(id, get_limits());
    if (!ec) {
        ec = detail::check_due(due);
    }
    if (ec) {
        return refuse(*this, std::move(h), ec);
    }
    do_reschedule(std::move(id), due, std::move(h));
}

void store::status(std::string id, handler<void(error_code, task_status)> h) {
    if (auto ec = detail::check_id(id, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_status(std::move(id), std::move(h));
}

void store::list_dead(std::string cursor, std::size_t count,
                      handler<void(error_code, dead_page)> h) {
    if (count == 0 || count > detail::max_dead_page) {
        return refuse(*this, std::move(h), error::invalid_argument);
    }
    do_list_dead(std::move(cursor), count, std::move(h));
}

void store::requeue_dead(std::string id, due_time due, handler<void(error_code)> h) {
    error_code ec = detail::check_id(id, get_limits());
    if (!ec) {
        ec = detail::check_due(due);
    }
    if (ec) {
        return refuse(*this, std::move(h), ec);
    }
    do_requeue_dead(std::move(id), due, std::move(h));
}

void store::delete_dead(std::string id, handler<void(error_code)> h) {
    if (auto ec = detail::check_id(id, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_delete_dead(std::move(id), std::move(h));
}

void store::list_tasks(task_query q, handler<void(error_code, task_page)> h) {
    const auto& lim = get_limits();
    const auto in_range = [](const std::optional<time_point>& t) {
        return !t || (*t >= time_point{} && *t <= max_due);
    };
    std::optional<task_position> from;
    error_code ec;
    if (q.limit == 0 || q.limit > detail::max_task_page || !in_range(q.after) ||
        !in_range(q.before) || (q.after && q.before && *q.after >= *q.before) ||
        static_cast<int>(q.state) > static_cast<int>(task_state::cancelled)) {
        ec = error::invalid_argument;
    } else if (q.id_prefix.size() > lim.max_id_bytes) {
        ec = error::id_too_long;
    } else if (q.id_prefix.find('\0') != std::string::npos) {
        ec = error::invalid_id;
    } else if (!q.queue.empty() && detail::check_queue_name(q.queue)) {
        ec = error::invalid_queue;
    } else if (!q.queue.empty() && q.state == task_state::finished) {
        ec = error::invalid_argument;
    } else if (!q.cursor.empty()) {
        from = detail::decode_task_cursor(q.cursor, q.state, q.descending);
        if (!from || detail::check_id(from->id, lim)) {
            ec = error::invalid_argument;
        }
    }
    if (ec) {
        return refuse(*this, std::move(h), ec);
    }
    q.cursor.clear();
    const auto state = q.state;
    const bool descending = q.descending;
    do_list_tasks(std::move(q), std::move(from),
                  [h = std::move(h), state, descending](error_code ec, task_page page,
                                                        std::optional<task_position> next) mutable {
                      if (!ec && next) {
                          page.cursor = detail::encode_task_cursor(state, descending, *next);
                      }
                      std::move(h)(ec, std::move(page));
                  });
}

void store::count_tasks(handler<void(error_code, task_counts)> h) {
    do_count_tasks(std::move(h));
}

void store::do_list_tasks(task_query, std::optional<task_position>,
                          handler<void(error_code, task_page, std::optional<task_position>)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}

void store::do_count_tasks(handler<void(error_code, task_counts)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}

namespace {

// Fills in `next` of a status the store read: the rule is computed here, not in a store.
void fill_next(schedule_status& st) {
    try {
        const auto rule = schedule_rule(st.spec, st.created);
        st.next = next_occurrence(rule, st.spec, st.cursor);
    } catch (const std::exception&) {
        // A stored spec passed check_schedule once; a zone since removed from the tz
        // database leaves the schedule without a next occurrence rather than failing a read.
        st.next.reset();
    }
}

// The ids of a materialisation's occurrences are derived, never chosen: a store keys on them.
error_code check_materialisations(const std::vector<materialisation>& ms, const limits& lim) {
    if (ms.empty() || ms.size() > detail::max_batch) {
        return error::invalid_argument;
    }
    std::size_t total = 0;
    for (const auto& m : ms) {
        if (auto ec = detail::check_schedule_id(m.schedule_id, lim)) {
            return ec;
        }
        total += m.occurrences.size();
        if (total > detail::max_batch || m.payload.size() > lim.max_payload_bytes) {
            return error::invalid_argument;
        }
        if (auto ec = detail::check_policy(m.retry)) {
            return ec;
        }
        for (const auto& o : m.occurrences) {
            if (o.at > m.cursor || o.at < time_point{} || o.at > max_due ||
                o.task_id != occurrence_id(m.schedule_id, o.at)) {
                return error::invalid_argument;
            }
        }
        if (m.cursor < time_point{} || m.cursor > max_due ||
            (m.next && (*m.next <= m.cursor || *m.next > max_due))) {
            return error::invalid_argument;
        }
    }
    return {};
}

} // namespace

void store::create_schedule(schedule_spec spec,
                            handler<void(error_code, create_schedule_result)> h) {
    if (auto ec = detail::check_schedule(spec, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_create_schedule(std::move(spec), std::move(h));
}

void store::replace_schedule(schedule_spec spec, handler<void(error_code)> h) {
    if (auto ec = detail::check_schedule(spec, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_replace_schedule(std::move(spec), std::move(h));
}

void store::get_schedule(std::string id, handler<void(error_code, schedule_status)> h) {
    if (auto ec = detail::check_schedule_id(id, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_get_schedule(std::move(id), [h = std::move(h)](error_code ec, schedule_status st) mutable {
        if (!ec) {
            fill_next(st);
        }
        std::move(h)(ec, std::move(st));
    });
}

void store::list_schedules(std::string cursor, std::size_t count,
                           handler<void(error_code, schedule_page)> h) {
    if (count == 0 || count > detail::max_schedule_page) {
        return refuse(*this, std::move(h), error::invalid_argument);
    }
    do_list_schedules(std::move(cursor), count,
                      [h = std::move(h)](error_code ec, schedule_page page) mutable {
                          for (auto& st : page.entries) {
                              fill_next(st);
                          }
                          std::move(h)(ec, std::move(page));
                      });
}

void store::delete_schedule(std::string id, handler<void(error_code)> h) {
    if (auto ec = detail::check_schedule_id(id, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_delete_schedule(std::move(id), std::move(h));
}

void store::pause_schedule(std::string id, handler<void(error_code)> h) {
    if (auto ec = detail::check_schedule_id(id, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_pause_schedule(std::move(id), true, std::move(h));
}

void store::resume_schedule(std::string id, handler<void(error_code)> h) {
    if (auto ec = detail::check_schedule_id(id, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_pause_schedule(std::move(id), false, std::move(h));
}

void store::trigger_schedule(std::string id, handler<void(error_code, std::string)> h) {
    if (auto ec = detail::check_schedule_id(id, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_trigger_schedule(std::move(id), std::move(h));
}

void store::due_schedules(duration window, std::size_t batch,
                          handler<void(error_code, due_schedules_result)> h) {
    if (window.count() < 0 || window > duration(detail::max_backoff_ms) || batch == 0 ||
        batch > detail::max_claim_batch) {
        return refuse(*this, std::move(h), error::invalid_argument);
    }
    do_due_schedules(window, batch, std::move(h));
}

void store::materialise(std::vector<materialisation> m,
                        handler<void(error_code, std::vector<materialise_result>)> h) {
    if (auto ec = check_materialisations(m, get_limits())) {
        return refuse(*this, std::move(h), ec);
    }
    do_materialise(std::move(m), std::move(h));
}

// --- Named queues ------------------------------------------------------------------------

namespace {

// The implicit default queue, as get and list show it.
queue_status default_status() {
    queue_status st;
    st.spec.id = default_queue;
    return st;
}

// A spec's error: its name's, default_queue, its policy's.
error_code check_queue_spec(const queue_spec& spec) {
    if (auto ec = detail::check_queue_name(spec.id)) {
        return ec;
    }
    if (spec.id == default_queue) {
        return error::default_queue;
    }
    return spec.retry ? detail::check_policy(*spec.retry) : error_code();
}

// Whether the queue holds a task of a state that can still run (delayed, prefetched,
// running, dead): list_tasks with the queue filter, state by state, page by page, until one
// is found or every state's walk ends. Then deletes (store::delete_queue).
class delete_walk : public std::enable_shared_from_this<delete_walk> {
public:
    delete_walk(store& s, std::string id, store::handler<void(error_code)> h,
                std::function<void(store&, std::string, store::handler<void(error_code)>)> del)
        : s_(s)
        , id_(std::move(id))
        , h_(std::move(h))
        , del_(std::move(del)) {}

    void next(std::string cursor) {
        static constexpr task_state states[] = {task_state::delayed, task_state::prefetched,
                                                task_state::running, task_state::dead};
        if (state_ == std::size(states)) {
            return del_(s_, id_, std::move(h_));
        }
        task_query q;
        q.state = states[state_];
        q.queue = id_;
        q.cursor = std::move(cursor);
        q.limit = detail::max_task_page;
        s_.list_tasks(std::move(q), [self = shared_from_this()](error_code ec, task_page page) {
            if (ec) {
                return std::move(self->h_)(ec);
            }
            if (!page.entries.empty()) {
                return std::move(self->h_)(error_code(error::queue_not_empty));
            }
            if (page.cursor.empty()) {
                ++self->state_;
            }
            self->next(std::move(page.cursor));
        });
    }

private:
    store& s_;
    std::string id_;
    store::handler<void(error_code)> h_;
    std::function<void(store&, std::string, store::handler<void(error_code)>)> del_;
    std::size_t state_ = 0;
};

} // namespace

void store::create_queue(queue_spec spec, handler<void(error_code, create_queue_result)> h) {
    if (auto ec = check_queue_spec(spec)) {
        return refuse(*this, std::move(h), ec);
    }
    do_create_queue(std::move(spec), std::move(h));
}

void store::update_queue(queue_spec spec, handler<void(error_code)> h) {
    if (auto ec = check_queue_spec(spec)) {
        return refuse(*this, std::move(h), ec);
    }
    do_update_queue(std::move(spec), std::move(h));
}

void store::get_queue(std::string id, handler<void(error_code, queue_status)> h) {
    if (auto ec = detail::check_queue_name(id)) {
        return refuse(*this, std::move(h), ec);
    }
    if (id == default_queue) {
        return boost::asio::post(get_executor(),
                                 boost::asio::append(std::move(h), error_code(), default_status()));
    }
    do_get_queue(std::move(id), std::move(h));
}

void store::list_queues(std::string id_prefix, std::string cursor, std::size_t count,
                        handler<void(error_code, queue_page)> h) {
    constexpr std::size_t longest = 2 * detail::max_queue_part + 1;
    if (count == 0 || count > detail::max_queue_page || id_prefix.size() > longest ||
        cursor.size() > longest) {
        return refuse(*this, std::move(h), error::invalid_argument);
    }
    // "default" joins the page of named queues where byte order puts it.
    const bool wants_default = std::string_view(default_queue).starts_with(id_prefix) &&
                               cursor < std::string_view(default_queue);
    do_list_queues(
        std::move(id_prefix), std::move(cursor), count,
        [h = std::move(h), wants_default, count](error_code ec, queue_page page) mutable {
            if (!ec && wants_default) {
                const auto at = std::find_if(page.entries.begin(), page.entries.end(),
                                             [](const queue_status& q) {
                                                 return q.spec.id > std::string_view(default_queue);
                                             });
                // Past this page's last name (and more pages follow): a later page has it.
                if (at != page.entries.end() || page.cursor.empty()) {
                    page.entries.insert(at, default_status());
                    if (page.entries.size() > count) {
                        page.entries.pop_back();
                        page.cursor = page.entries.back().spec.id;
                    }
                }
            }
            std::move(h)(ec, std::move(page));
        });
}

void store::delete_queue(std::string id, handler<void(error_code)> h) {
    if (auto ec = detail::check_queue_name(id)) {
        return refuse(*this, std::move(h), ec);
    }
    if (id == default_queue) {
        return refuse(*this, std::move(h), error::default_queue);
    }
    if (checks_queue_empty()) {
        return do_delete_queue(std::move(id), std::move(h));
    }
    // Not found first (an answer that does not depend on the walk), then the walk.
    do_get_queue(id, [this, id, h = std::move(h)](error_code ec, queue_status) mutable {
        if (ec) {
            return std::move(h)(ec);
        }
        std::make_shared<delete_walk>(*this, std::move(id), std::move(h),
                                      [](store& s, std::string id, handler<void(error_code)> h) {
                                          s.do_delete_queue(std::move(id), std::move(h));
                                      })
            ->next({});
    });
}

// A store without named queues.
void store::do_create_queue(queue_spec, handler<void(error_code, create_queue_result)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_update_queue(queue_spec, handler<void(error_code)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_get_queue(std::string, handler<void(error_code, queue_status)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_list_queues(std::string, std::string, std::size_t,
                           handler<void(error_code, queue_page)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_delete_queue(std::string, handler<void(error_code)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}

// A store without schedules.
void store::do_create_schedule(schedule_spec, handler<void(error_code, create_schedule_result)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_replace_schedule(schedule_spec, handler<void(error_code)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_get_schedule(std::string, handler<void(error_code, schedule_status)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_list_schedules(std::string, std::size_t,
                              handler<void(error_code, schedule_page)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_delete_schedule(std::string, handler<void(error_code)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_pause_schedule(std::string, bool, handler<void(error_code)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_trigger_schedule(std::string, handler<void(error_code, std::string)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_due_schedules(duration, std::size_t,
                             handler<void(error_code, due_schedules_result)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}
void store::do_materialise(std::vector<materialisation>,
                           handler<void(error_code, std::vector<materialise_result>)> h) {
    refuse(*this, std::move(h), boost::asio::error::operation_not_supported);
}

void store::claim(const claim_options& opt, handler<void(error_code, claim_result)> h) {
    if (opt.batch == 0 || opt.batch > detail::max_claim_batch || opt.lease.count() <= 0 ||
        opt.horizon.count() < 0 || opt.worker.size() > detail::max_worker_bytes) {
        return refuse(*this, std::move(h), error::invalid_argument);
    }
    do_claim(opt, std::move(h));
}

void store::start(std::vector<lease_ref> leases,
                  handler<void(error_code, std::vector<start_result>)> h) {
    const auto ec = detail::check_leases(leases, get_limits());
    if (ec || leases.empty()) {
        return refuse(*this, std::move(h), ec);
    }
    do_start(std::move(leases), std::move(h));
}

void store::renew(std::vector<lease_ref> leases, duration lease,
                  handler<void(error_code, std::vector<ack_result>)> h) {
    error_code ec = detail::check_leases(leases, get_limits());
    if (!ec && lease.count() <= 0) {
        ec = error::invalid_argument;
    }
    if (ec || leases.empty()) {
        return refuse(*this, std::move(h), ec);
    }
    do_renew(std::move(leases), lease, std::move(h));
}

void store::acknowledge(std::vector<ack> acks,
                        handler<void(error_code, std::vector<ack_result>)> h) {
    error_code ec;
    if (acks.size() > detail::max_batch) {
        ec = error::invalid_argument;
    }
    for (auto& a : acks) {
        if (!ec) {
            ec = detail::check_id(a.lease.id, get_limits());
        }
        if (!ec) {
            ec = detail::check_token(a.lease.token);
        }
        if (!ec && a.outcome.retry_after && a.outcome.retry_after->count() < 0) {
            ec = error::invalid_argument;
        }
        if (ec) {
            break;
        }
        if (a.outcome.retry_after) {
            *a.outcome.retry_after =
                std::min(*a.outcome.retry_after, duration(detail::max_backoff_ms));
        }
        if (a.outcome.error.size() > detail::max_error_bytes) {
            a.outcome.error.resize(detail::max_error_bytes);
        }
    }
    if (ec || acks.empty()) {
        return refuse(*this, std::move(h), ec);
    }
    do_acknowledge(std::move(acks), std::move(h));
}

void store::release(std::vector<lease_ref> leases, handler<void(error_code)> h) {
    const auto ec = detail::check_leases(leases, get_limits());
    if (ec || leases.empty()) {
        return refuse(*this, std::move(h), ec);
    }
    do_release(std::move(leases), std::move(h));
}

} // namespace timewheel::dq
