//
// src/dq/redis/replies.cpp
//
// Decoding of the Redis store's replies (see replies.hpp). A reply array is walked once where
// it may be long: redis::reply's operator[] is linear, so a loop over it by index would be
// quadratic; the items are gathered first, in one walk (reply::elements()).
//

#include "replies.hpp"

#include <timewheel/dq/detail/input_checks.hpp>
#include <timewheel/dq/error.hpp>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string>
#include <utility>

namespace timewheel::dq::detail::replies {

using boost::system::error_code;

std::string number(std::int64_t v) {
    char text[24];
    auto r = std::to_chars(text, text + sizeof text, v);
    return std::string(text, r.ptr);
}

void append_packed(std::string& out, std::int64_t v, std::size_t bytes) {
    const auto u = static_cast<std::uint64_t>(v);
    for (std::size_t i = bytes; i-- > 0;) {
        out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
    }
}

std::int64_t to_int(std::string_view s) {
    std::int64_t v = 0;
    std::from_chars(s.data(), s.data() + s.size(), v);
    return v;
}

std::int64_t int_in(redis::reply r, std::int64_t lo, std::int64_t hi, const char* what) {
    if (!r.is_integer()) {
        throw std::runtime_error(std::string("dq::redis_store: a reply's ") + what +
                                 " is not an integer");
    }
    const auto v = r.as_integer();
    if (v < lo || v > hi) {
        throw std::runtime_error(std::string("dq::redis_store: a reply's ") + what + " of " +
                                 std::to_string(v) + " is outside " + std::to_string(lo) + ".." +
                                 std::to_string(hi));
    }
    return v;
}

bool is_time(std::int64_t v) noexcept {
    return v >= 0 && v <= max_due.time_since_epoch().count();
}

time_point time_in(redis::reply r, const char* what) {
    return ms(int_in(r, 0, max_due.time_since_epoch().count(), what));
}

std::int64_t time_or_none(redis::reply r, const char* what) {
    return int_in(r, -1, max_due.time_since_epoch().count(), what);
}

std::uint32_t attempts(redis::reply r, const char* what) {
    return static_cast<std::uint32_t>(int_in(r, 0, UINT32_MAX, what));
}

std::uint32_t max_attempts(redis::reply r, const char* what) {
    return static_cast<std::uint32_t>(int_in(r, 1, UINT32_MAX, what));
}

duration backoff(redis::reply r, const char* what) {
    return duration(int_in(r, 0, detail::max_backoff_ms, what));
}

std::uint64_t count(redis::reply r, const char* what) {
    return static_cast<std::uint64_t>(int_in(r, 0, max_count, what));
}

error_code script_error(redis::reply r) {
    const auto text = r.error_message();
    if (text.starts_with("OOM") || text.find("OOM command not allowed") != std::string_view::npos) {
        return error::store_full;
    }
    // Before Redis 7.0 ("ERR unknown command `FCALL`, with args beginning with: ..."; the
    // FUNCTION LOAD ahead of it got the same answer).
    if (text.find("unknown command") != std::string_view::npos &&
        (text.find("FCALL") != std::string_view::npos ||
         text.find("fcall") != std::string_view::npos)) {
        return error::store_too_old;
    }
    static constexpr std::pair<std::string_view, error> known[] = {
        {"DQ not_found", error::not_found},
        {"DQ wrong_state", error::wrong_state},
        {"DQ due_out_of_range", error::due_out_of_range},
        {"DQ schedule_conflict", error::schedule_conflict},
        {"DQ queue_conflict", error::queue_conflict},
    };
    for (const auto& [k, e] : known) {
        if (text.find(k) != std::string_view::npos) {
            return e;
        }
    }
    return error::store_error;
}

std::optional<submit_result> submit_reply(std::string_view s) {
    if (s == "created") {
        return submit_result::created;
    }
    if (s == "exists") {
        return submit_result::exists;
    }
    if (s == "replaced") {
        return submit_result::replaced;
    }
    return std::nullopt;
}

std::optional<cancel_result> cancel_reply(redis::reply r) {
    if (!r.is_string()) {
        return std::nullopt;
    }
    const auto s = r.as_string();
    if (s == "cancelled") {
        return cancel_result::cancelled;
    }
    if (s == "too_late") {
        return cancel_result::too_late;
    }
    if (s == "not_found") {
        return cancel_result::not_found;
    }
    return std::nullopt;
}

bool is_ok(redis::reply r) {
    return r.is_string() && r.as_string() == "ok";
}

std::string queue_name(std::string_view stored) {
    if (stored.empty()) {
        return default_queue;
    }
    return stored == "?" ? std::string() : std::string(stored);
}

task_status status_reply(redis::reply rep, const std::string& id) {
    // Eleven fields, then six a log entry; anything else is not status.lua's reply. The typed
    // reads below throw on an element of the wrong type.
    const std::size_t n = rep.size(); // throws unless an array
    if (n < 11 || (n - 11) % 6 != 0) {
        throw std::runtime_error("dq::redis_store: a status reply of " + std::to_string(n) +
                                 " elements");
    }
    const auto items = rep.elements();
    task_status out;
    out.id = id;
    const std::string_view state = items[0].as_string();
    bool known = false;
    static constexpr std::pair<std::string_view, task_state> states[] = {
        {"delayed", task_state::delayed}, {"prefetched", task_state::prefetched},
        {"running", task_state::running}, {"finished", task_state::finished},
        {"dead", task_state::dead},       {"cancelled", task_state::cancelled}};
    for (const auto& [n, s] : states) {
        if (n == state) {
            out.state = s;
            known = true;
        }
    }
    if (!known) {
        throw std::runtime_error("dq::redis_store: a status reply with an unknown state");
    }
    out.attempt = attempts(items[1], "attempt");
    out.due = time_in(items[2], "due time");
    out.created = time_in(items[3], "creation time");
    out.updated = time_in(items[4], "update time");
    out.retry.max_attempts = max_attempts(items[5], "max_attempts");
    out.retry.base = backoff(items[6], "backoff base");
    out.retry.cap = backoff(items[7], "backoff cap");
    out.last_error = std::string(items[8].as_string());
    out.payload = std::string(items[9].as_string());
    out.queue = queue_name(items[10].as_string());
    for (std::size_t i = 11; i + 6 <= n; i += 6) {
        attempt_record r;
        r.attempt = attempts(items[i], "log attempt");
        r.worker = std::string(items[i + 1].as_string());
        r.started = time_in(items[i + 2], "log start time");
        r.ended = time_in(items[i + 3], "log end time");
        r.outcome = std::string(items[i + 4].as_string());
        r.error = std::string(items[i + 5].as_string());
        if (out.state == task_state::finished) {
            // A finished task's record is gone: its attempts are in its log.
            out.attempt = std::max(out.attempt, r.attempt);
        }
        out.log.push_back(std::move(r));
    }
    return out;
}

void dead_reply(redis::reply rep, std::size_t shard, std::size_t count, dead_page& page,
                std::string& last) {
    const std::size_t n = rep.size(); // throws unless an array
    if (n % 4 != 0) {
        throw std::runtime_error("dq::redis_store: a list_dead reply of " + std::to_string(n) +
                                 " elements");
    }
    // One walk (operator[] is linear); each entry is checked whole before it is appended.
    const auto items = rep.elements();
    for (std::size_t j = 0; j + 4 <= n && page.entries.size() < count; j += 4) {
        dead_page::entry e;
        e.id = std::string(items[j].as_string());
        e.died = time_in(items[j + 1], "death time");
        e.attempt = attempts(items[j + 2], "attempt");
        e.last_error = std::string(items[j + 3].as_string());
        last = std::to_string(shard) + ":" + std::to_string(e.died.time_since_epoch().count()) +
               ":" + e.id;
        page.entries.push_back(std::move(e));
    }
}

std::optional<std::int64_t> time_reply(redis::reply rep) {
    if (rep.is_error() || !rep.is_array() || rep.size() != 2) {
        return std::nullopt;
    }
    // Seconds and microseconds, as decimal strings: anything else (another type, a sign,
    // trailing bytes, a value that would overflow in ms) is not TIME's reply.
    std::int64_t v[2] = {0, 0};
    const auto items = rep.elements();
    for (std::size_t i = 0; i < 2; ++i) {
        if (!items[i].is_string()) {
            return std::nullopt;
        }
        const auto s = items[i].as_string();
        const auto r = std::from_chars(s.data(), s.data() + s.size(), v[i]);
        if (s.empty() || r.ec != std::errc() || r.ptr != s.data() + s.size() || v[i] < 0) {
            return std::nullopt;
        }
    }
    if (v[0] > std::int64_t(1) << 40 || v[1] >= 1000000) {
        return std::nullopt;
    }
    return v[0] * 1000 + v[1] / 1000;
}

claim_head claim_reply(redis::reply rep, std::size_t limit, std::vector<claimed_task>& tasks) {
    // Checked before any element is read: elements() has no bounds, and a task is 9 of them.
    // More tasks than asked for is not claim.lua's answer either.
    const std::size_t n = rep.size(); // throws unless an array
    if (n < 2 || (n - 2) % 9 != 0 || (n - 2) / 9 > limit) {
        throw std::runtime_error("dq::redis_store: a claim reply of " + std::to_string(n) +
                                 " elements");
    }
    const auto items = rep.elements();
    claim_head head;
    head.now = time_in(items[0], "clock").time_since_epoch().count();
    head.next_due = time_or_none(items[1], "next due time");
    for (std::size_t j = 2; j + 9 <= n; j += 9) {
        claimed_task t;
        t.id = std::string(items[j].as_string());
        t.token = std::string(items[j + 1].as_string());
        t.due = time_in(items[j + 2], "due time");
        t.attempt = attempts(items[j + 3], "attempt");
        t.payload = std::string(items[j + 4].as_string());
        t.retry.max_attempts = max_attempts(items[j + 5], "max_attempts");
        t.retry.base = backoff(items[j + 6], "backoff base");
        t.retry.cap = backoff(items[j + 7], "backoff cap");
        t.running = items[j + 8].as_integer() == 1;
        tasks.push_back(std::move(t));
    }
    return head;
}

} // namespace timewheel::dq::detail::replies
