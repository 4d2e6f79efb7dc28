//
// server/service/src/task_json.cpp
//
// Field-by-field validation of the API's JSON, each error naming its field; the callback
// object is left to the callback side's one parser (callback::parse_callback).
//
#include <timewheeld/service/task_json.hpp>

#include "json_fields.hpp"

#include <timewheeld/service/notice.hpp>

#include <timewheel/dq/detail/input_checks.hpp>

#include <timewheeld/callback/utf8.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <initializer_list>

namespace timewheeld::service {

namespace json = boost::json;

// The field readers the service's JSON files share (src/json_fields.hpp).
namespace detail {

std::string join(std::string_view prefix, std::string_view name) {
    return prefix.empty() ? std::string(name) : std::string(prefix) + "." + std::string(name);
}

json::value parse_body(std::string_view body) {
    boost::system::error_code ec;
    json::value v = json::parse(body, ec);
    if (ec) {
        throw invalid_field("body", "malformed JSON: " + ec.message());
    }
    return v;
}

const json::object& as_object(const json::value& v, std::string_view field) {
    if (!v.is_object()) {
        throw invalid_field(std::string(field), "must be a JSON object");
    }
    return v.get_object();
}

// Refuses members that are not in `known`: a misspelt optional field would otherwise be
// silently ignored.
void only_known(const json::object& o, std::string_view prefix,
                std::initializer_list<std::string_view> known) {
    for (const auto& kv : o) {
        if (std::find(known.begin(), known.end(), kv.key()) == known.end()) {
            // An empty key is named by its JSON spelling: an error always names a field.
            throw invalid_field(join(prefix, kv.key().empty() ? "\"\"" : kv.key()),
                                "unknown field");
        }
    }
}

std::int64_t as_integer(const json::value& v, const std::string& field, std::int64_t min,
                        std::int64_t max) {
    std::int64_t n = 0;
    if (v.is_int64()) {
        n = v.get_int64();
    } else if (v.is_uint64()) {
        if (v.get_uint64() > static_cast<std::uint64_t>(max)) {
            throw invalid_field(field, "must be at most " + std::to_string(max));
        }
        n = static_cast<std::int64_t>(v.get_uint64());
    } else {
        throw invalid_field(field, "must be an integer");
    }
    if (n < min) {
        throw invalid_field(field, "must be at least " + std::to_string(min));
    }
    if (n > max) {
        throw invalid_field(field, "must be at most " + std::to_string(max));
    }
    return n;
}

const json::string& as_string(const json::value& v, const std::string& field) {
    if (!v.is_string()) {
        throw invalid_field(field, "must be a string");
    }
    return v.get_string();
}

// What a store kept, shown: valid UTF-8 whatever it holds (an error quoting a receiver's
// bytes, cut at a byte count by an older version).
json::value shown(std::string_view s) {
    return json::value(callback::valid_utf8(s));
}

} // namespace detail

using namespace detail;

namespace {

bool has_control(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
}

// The due time of a body: exactly one of due_at and delay_ms, or neither when `fallback`.
dq::due_time parse_due(const json::object& o, std::optional<dq::due_time> fallback) {
    const auto* at = o.if_contains("due_at");
    const auto* delay = o.if_contains("delay_ms");
    if (at && delay) {
        throw invalid_field("due_at", "give due_at or delay_ms, not both");
    }
    if (at) {
        const auto& s = as_string(*at, "due_at");
        try {
            return parse_rfc3339(s);
        } catch (const std::invalid_argument& e) {
            throw invalid_field("due_at", e.what());
        }
    }
    if (delay) {
        return dq::duration(
            as_integer(*delay, "delay_ms", 0, (dq::max_due - dq::time_point{}).count() / 2));
    }
    if (fallback) {
        return *fallback;
    }
    throw invalid_field("due_at", "one of due_at (RFC 3339) or delay_ms is required");
}

int digits(std::string_view s, std::size_t at, std::size_t n) {
    if (at + n > s.size()) {
        throw std::invalid_argument("not an RFC 3339 time (too short)");
    }
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
        if (!std::isdigit(static_cast<unsigned char>(s[i]))) {
            throw std::invalid_argument("not an RFC 3339 time (digit expected at " +
                                        std::to_string(i) + ")");
        }
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

void expect(std::string_view s, std::size_t at, std::string_view chars) {
    if (at >= s.size() || chars.find(s[at]) == std::string_view::npos) {
        throw std::invalid_argument("not an RFC 3339 time ('" + std::string(chars) +
                                    "' expected at " + std::to_string(at) + ")");
    }
}

json::value optional_string(const std::string& s) {
    return s.empty() ? json::value(nullptr) : shown(s);
}

} // namespace

dq::time_point parse_rfc3339(std::string_view s) {
    using namespace std::chrono;
    const int y = digits(s, 0, 4);
    expect(s, 4, "-");
    const int mo = digits(s, 5, 2);
    expect(s, 7, "-");
    const int d = digits(s, 8, 2);
    expect(s, 10, "Tt ");
    const int h = digits(s, 11, 2);
    expect(s, 13, ":");
    const int mi = digits(s, 14, 2);
    expect(s, 16, ":");
    const int se = digits(s, 17, 2);
    std::size_t at = 19;
    long long ms = 0;
    if (at < s.size() && s[at] == '.') {
        ++at;
        const std::size_t start = at;
        while (at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]))) {
            if (at - start < 3) {
                ms = ms * 10 + (s[at] - '0');
            }
            ++at;
        }
        if (at == start) {
            throw std::invalid_argument("not an RFC 3339 time (fraction without digits)");
        }
        for (std::size_t n = at - start; n < 3; ++n) {
            ms *= 10;
        }
    }
    int offset_min = 0;
    expect(s, at, "Zz+-");
    if (s[at] == 'Z' || s[at] == 'z') {
        ++at;
    } else {
        const int sign = s[at] == '-' ? -1 : 1;
        const int oh = digits(s, at + 1, 2);
        expect(s, at + 3, ":");
        const int om = digits(s, at + 4, 2);
        if (oh > 23 || om > 59) {
            throw std::invalid_argument("not an RFC 3339 time (offset out of range)");
        }
        offset_min = sign * (oh * 60 + om);
        at += 6;
    }
    if (at != s.size()) {
        throw std::invalid_argument("not an RFC 3339 time (trailing characters)");
    }
    const year_month_day ymd{year(y), month(static_cast<unsigned>(mo)),
                             day(static_cast<unsigned>(d))};
    if (!ymd.ok() || h > 23 || mi > 59 || se > 60) {
        throw std::invalid_argument("not a valid date and time");
    }
    const auto t = sys_days(ymd) + hours(h) + minutes(mi) + seconds(std::min(se, 59)) +
                   milliseconds(ms) - minutes(offset_min);
    const dq::time_point tp = time_point_cast<milliseconds>(t);
    if (tp < dq::time_point{} || tp > dq::max_due) {
        throw std::invalid_argument("out of range (1970-01-01 to 9999-12-31)");
    }
    return tp;
}

std::string format_rfc3339(dq::time_point t) {
    using namespace std::chrono;
    // Times come from the store too (a Redis reply is as hostile as a request): what lies
    // outside the range the API accepts is shown at its edge, never an overflow in floor().
    t = std::clamp(t, dq::time_point{}, dq::max_due);
    const auto days = floor<std::chrono::days>(t);
    const year_month_day ymd(days);
    const hh_mm_ss<milliseconds> tod(t - days);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%03dZ", int(ymd.year()),
                  unsigned(ymd.month()), unsigned(ymd.day()), int(tod.hours().count()),
                  int(tod.minutes().count()), int(tod.seconds().count()),
                  int(tod.subseconds().count()));
    return buf;
}

void check_id(std::string_view id, const validation_limits& limits, std::string_view field) {
    if (id.empty()) {
        throw invalid_field(std::string(field), "must not be empty");
    }
    if (id.size() > limits.max_id_bytes) {
        throw invalid_field(std::string(field),
                            "longer than " + std::to_string(limits.max_id_bytes) + " bytes");
    }
    if (has_control(id)) {
        throw invalid_field(std::string(field), "must not contain control characters");
    }
}

std::string parse_callback_payload(const json::value& v, const validation_limits& limits) {
    try {
        const auto spec = callback::parse_callback(v, limits.callback);
        return json::serialize(callback::to_json(spec));
    } catch (const callback::payload_error& e) {
        throw invalid_field(e.field() == "callback" ? e.field() : "callback." + e.field(),
                            e.message());
    }
}

void parse_task_template(const json::object& o, const validation_limits& limits,
                         std::string& payload, dq::retry_policy& retry) {
    const auto* cb = o.if_contains("callback");
    if (!cb) {
        throw invalid_field("callback", "is required");
    }
    payload = parse_callback_payload(*cb, limits);
    if (payload.size() > limits.max_payload_bytes) {
        throw invalid_field("callback",
                            "larger than " + std::to_string(limits.max_payload_bytes) + " bytes");
    }
    if (const auto* r = o.if_contains("retry")) {
        parse_retry(*r, limits, retry);
    }
}

void parse_retry(const json::value& r, const validation_limits& limits, dq::retry_policy& retry) {
    const auto& ro = as_object(r, "retry");
    only_known(ro, "retry", {"attempts", "base_ms", "cap_ms"});
    if (const auto* a = ro.if_contains("attempts")) {
        retry.max_attempts =
            static_cast<std::uint32_t>(as_integer(*a, "retry.attempts", 1, limits.max_attempts));
    }
    if (const auto* b = ro.if_contains("base_ms")) {
        retry.base = dq::duration(as_integer(*b, "retry.base_ms", 0, limits.max_backoff_ms));
    }
    if (const auto* c = ro.if_contains("cap_ms")) {
        retry.cap = dq::duration(as_integer(*c, "retry.cap_ms", 0, limits.max_backoff_ms));
    }
    if (retry.base > retry.cap) {
        throw invalid_field(ro.contains("cap_ms") ? "retry.cap_ms" : "retry.base_ms",
                            "base_ms must not exceed cap_ms (" +
                                std::to_string(retry.base.count()) + " > " +
                                std::to_string(retry.cap.count()) + ")");
    }
}

dq::task parse_submit_value(const json::value& v, const validation_limits& limits,
                            std::string_view whole, bool* gives_retry) {
    const auto& o = as_object(v, whole);
    only_known(
        o, "",
        {"id", "due_at", "delay_ms", "callback", "retry", "on_conflict", "max_delay_ms", "queue"});
    dq::task t;
    if (const auto* q = o.if_contains("queue")) {
        t.queue = as_string(*q, "queue");
        check_queue_name(t.queue, "queue");
    }
    if (gives_retry) {
        *gives_retry = o.contains("retry");
    }
    if (const auto* id = o.if_contains("id")) {
        t.id = as_string(*id, "id");
        check_id(t.id, limits);
        if (is_notice_id(t.id)) {
            throw invalid_field("id", "must not end with \"" + std::string(notice_suffix) +
                                          "\": timewheeld names a task's completion notice so");
        }
    }
    t.due = parse_due(o, std::nullopt);
    parse_task_template(o, limits, t.payload, t.retry);
    // (the callback passed its checks: an object)
    const auto& cb = o.at("callback").get_object();
    if ((cb.contains("on_success") || cb.contains("on_failure")) &&
        t.id.size() + notice_suffix.size() > limits.max_id_bytes) {
        throw invalid_field("id", "longer than " +
                                      std::to_string(limits.max_id_bytes - notice_suffix.size()) +
                                      " bytes: a task with on_success or on_failure keeps room "
                                      "for its notice's id (the id and \"" +
                                      std::string(notice_suffix) + "\")");
    }
    std::string_view mode = "keep";
    if (const auto* c = o.if_contains("on_conflict")) {
        mode = as_string(*c, "on_conflict");
        if (mode != "keep" && mode != "replace" && mode != "debounce") {
            throw invalid_field("on_conflict", "must be keep, replace or debounce");
        }
    }
    t.replace = mode != "keep";
    const auto* max = o.if_contains("max_delay_ms");
    if (mode == "debounce") {
        if (!max) {
            throw invalid_field("max_delay_ms", "is required with on_conflict debounce");
        }
        t.max_delay = dq::duration(
            as_integer(*max, "max_delay_ms", 0, (dq::max_due - dq::time_point{}).count() / 2));
    } else if (max) {
        throw invalid_field("max_delay_ms", "only with on_conflict debounce");
    }
    return t;
}

dq::task parse_submit(std::string_view body, const validation_limits& limits, bool* gives_retry) {
    return parse_submit_value(parse_body(body), limits, "body", gives_retry);
}

void check_queue_name(std::string_view name, const std::string& field) {
    if (dq::detail::check_queue_name(name)) {
        throw invalid_field(field, "must be 1 to 64 bytes of [a-z0-9_-], optionally after one "
                                   "namespace of the same alphabet and a slash (acme/billing)");
    }
}

namespace {

// The settings of the design that are not built yet: refused by name, never accepted and
// ignored (a limit that does nothing is worse than none).
constexpr std::string_view not_yet[] = {"rate_per_s", "concurrency", "flow", "signing_secrets",
                                        "paused"};

void refuse_not_yet(const json::object& o) {
    for (auto f : not_yet) {
        if (o.contains(f)) {
            throw invalid_field(std::string(f), "is not supported yet: this version keeps a "
                                                "queue's retry policy only");
        }
    }
}

// A queue's settings from the fields of `o` (all but the id).
void parse_queue_settings(const json::object& o, const validation_limits& limits,
                          dq::queue_spec& spec) {
    if (const auto* r = o.if_contains("retry")) {
        if (r->is_null()) {
            spec.retry.reset();
        } else {
            dq::retry_policy p;
            parse_retry(*r, limits, p);
            spec.retry = p;
        }
    }
}

} // namespace

dq::queue_spec parse_queue(std::string_view body, const validation_limits& limits) {
    const json::value v = parse_body(body);
    const auto& o = as_object(v, "body");
    refuse_not_yet(o);
    only_known(o, "", {"id", "retry"});
    dq::queue_spec spec;
    const auto* id = o.if_contains("id");
    if (!id) {
        throw invalid_field("id", "is required: the queue's name");
    }
    spec.id = as_string(*id, "id");
    check_queue_name(spec.id, "id");
    if (spec.id == dq::default_queue) {
        throw invalid_field("id", "the default queue exists already and takes the service's "
                                  "settings");
    }
    parse_queue_settings(o, limits, spec);
    return spec;
}

dq::queue_spec parse_queue_patch(std::string_view body, dq::queue_spec spec,
                                 const validation_limits& limits) {
    const json::value v = parse_body(body);
    const auto& o = as_object(v, "body");
    refuse_not_yet(o);
    only_known(o, "", {"retry"});
    parse_queue_settings(o, limits, spec);
    return spec;
}

json::object queue_to_json(const dq::queue_status& q) {
    json::object o;
    o["id"] = q.spec.id;
    o["generation"] = q.generation;
    if (q.spec.retry) {
        o["retry"] = {{"attempts", q.spec.retry->max_attempts},
                      {"base_ms", q.spec.retry->base.count()},
                      {"cap_ms", q.spec.retry->cap.count()}};
    } else {
        o["retry"] = nullptr;
    }
    if (q.generation == 0) {
        // The implicit default queue: no record, no times.
        o["created_at"] = nullptr;
        o["updated_at"] = nullptr;
    } else {
        o["created_at"] = format_rfc3339(q.created);
        o["updated_at"] = format_rfc3339(q.updated);
    }
    return o;
}

json::object queue_page_to_json(const dq::queue_page& p) {
    json::array entries;
    for (const auto& q : p.entries) {
        entries.push_back(queue_to_json(q));
    }
    return json::object{{"entries", std::move(entries)},
                        {"next_cursor", p.cursor.empty() ? json::value() : json::value(p.cursor)}};
}

std::vector<batch_item> parse_batch(std::string_view body, const validation_limits& limits) {
    const json::value v = parse_body(body);
    const auto& o = as_object(v, "body");
    only_known(o, "", {"tasks"});
    const auto* ts = o.if_contains("tasks");
    if (!ts) {
        throw invalid_field("tasks", "is required: an array of 1 to " +
                                         std::to_string(max_batch_tasks) + " tasks");
    }
    if (!ts->is_array()) {
        throw invalid_field("tasks", "must be an array");
    }
    const auto& a = ts->get_array();
    if (a.empty()) {
        throw invalid_field("tasks", "must hold at least one task");
    }
    if (a.size() > max_batch_tasks) {
        throw batch_too_large("tasks", "holds " + std::to_string(a.size()) + " tasks; at most " +
                                           std::to_string(max_batch_tasks));
    }
    std::vector<batch_item> out(a.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        try {
            out[i].task = parse_submit_value(a[i], limits, "task", &out[i].gives_retry);
        } catch (const invalid_field& e) {
            out[i].error = e;
        }
    }
    return out;
}

dq::due_time parse_reschedule(std::string_view body) {
    const json::value v = parse_body(body);
    const auto& o = as_object(v, "body");
    only_known(o, "", {"due_at", "delay_ms"});
    return parse_due(o, std::nullopt);
}

dq::due_time parse_requeue(std::string_view body) {
    if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
        return dq::duration(0);
    }
    const json::value v = parse_body(body);
    const auto& o = as_object(v, "body");
    only_known(o, "", {"due_at", "delay_ms"});
    return parse_due(o, dq::duration(0));
}

result_report parse_result(std::string_view body) {
    const json::value v = parse_body(body);
    const auto& o = as_object(v, "body");
    only_known(o, "", {"attempt", "outcome", "error", "retry_after_ms"});
    result_report r;
    const auto* a = o.if_contains("attempt");
    if (!a) {
        throw invalid_field("attempt", "is required (the attempt header of the callback)");
    }
    r.attempt = static_cast<std::uint32_t>(as_integer(*a, "attempt", 1, 1000000));
    const auto* oc = o.if_contains("outcome");
    if (!oc) {
        throw invalid_field("outcome", "is required: success, retry or failure");
    }
    const std::string_view what = as_string(*oc, "outcome");
    std::string error;
    if (const auto* e = o.if_contains("error")) {
        error = as_string(*e, "error");
    }
    const auto* after = o.if_contains("retry_after_ms");
    if (what == "success") {
        if (after) {
            throw invalid_field("retry_after_ms", "only with outcome retry");
        }
        r.outcome = dq::outcome::success();
    } else if (what == "retry") {
        std::optional<dq::duration> d;
        if (after) {
            d = dq::duration(as_integer(*after, "retry_after_ms", 0, 7LL * 24 * 3600 * 1000));
        }
        r.outcome = dq::outcome::retry(error.empty() ? "reported retry" : error, d);
    } else if (what == "failure") {
        if (after) {
            throw invalid_field("retry_after_ms", "only with outcome retry");
        }
        r.outcome = dq::outcome::failure(error.empty() ? "reported failure" : error);
    } else {
        throw invalid_field("outcome", "must be success, retry or failure");
    }
    return r;
}

json::object status_to_json(const dq::task_status& s) {
    json::object o;
    o["id"] = shown(s.id);
    o["state"] = dq::to_string(s.state);
    o["attempts"] = s.attempt;
    o["due_at"] = format_rfc3339(s.due);
    o["created_at"] = format_rfc3339(s.created);
    o["updated_at"] = format_rfc3339(s.updated);
    o["retry"] = {{"attempts", s.retry.max_attempts},
                  {"base_ms", s.retry.base.count()},
                  {"cap_ms", s.retry.cap.count()}};
    o["last_error"] = optional_string(s.last_error);
    // Empty: no longer known (the Redis store forgets a finished task's record).
    o["queue"] = s.queue.empty() ? json::value() : json::value(s.queue);
    boost::system::error_code ec;
    json::value cb = s.payload.empty() ? json::value() : json::parse(s.payload, ec);
    if (is_notice_id(s.id)) {
        // A completion notice's task: no callback of its own (null: no longer kept).
        if (!ec && cb.is_object()) {
            show_notice(cb.get_object());
            o["notice"] = std::move(cb);
        } else {
            o["notice"] = nullptr;
        }
    } else if (!ec && cb.is_object()) {
        callback::redact(cb.get_object());
        o["callback"] = std::move(cb);
    } else if (s.payload.empty()) {
        // The store no longer keeps it (the Redis store forgets a finished task's record,
        // and empties a cancelled one's): unknown, not an empty opaque payload.
        o["callback"] = nullptr;
    } else {
        // Not submitted through the API (a dq producer's opaque payload).
        o["payload"] = shown(s.payload);
    }
    json::array log;
    for (const auto& a : s.log) {
        log.push_back(json::object{{"attempt", a.attempt},
                                   {"worker", shown(a.worker)},
                                   {"started_at", format_rfc3339(a.started)},
                                   {"ended_at", format_rfc3339(a.ended)},
                                   {"outcome", a.outcome},
                                   {"error", optional_string(a.error)}});
    }
    o["log"] = std::move(log);
    return o;
}

json::object dead_page_to_json(const dq::dead_page& p) {
    json::array entries;
    for (const auto& e : p.entries) {
        entries.push_back(json::object{{"id", shown(e.id)},
                                       {"died_at", format_rfc3339(e.died)},
                                       {"attempts", e.attempt},
                                       {"last_error", optional_string(e.last_error)}});
    }
    json::object o;
    o["entries"] = std::move(entries);
    o["next_cursor"] = p.cursor.empty() ? json::value(nullptr) : json::value(p.cursor);
    return o;
}

std::string error_body(std::string_view code, std::string_view message, std::string_view field,
                       std::optional<std::size_t> position) {
    json::object e;
    e["code"] = code;
    if (!field.empty()) {
        e["field"] = field;
    }
    e["message"] = message;
    if (position) {
        e["position"] = *position;
    }
    return json::serialize(json::object{{"error", std::move(e)}});
}

} // namespace timewheeld::service
