//
// server/api/src/task_json.cpp
//
#include <timewheeld/api/task_json.hpp>

#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <initializer_list>

namespace timewheeld::api {

namespace json = boost::json;

namespace {

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
            throw invalid_field(join(prefix, kv.key()), "unknown field");
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

bool has_control(std::string_view s) {
    return std::any_of(s.begin(), s.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u < 0x20 || u == 0x7f;
    });
}

bool is_tchar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return std::tolower(static_cast<unsigned char>(x)) ==
                      std::tolower(static_cast<unsigned char>(y));
           });
}

void check_url(std::string_view url, const validation_limits& limits) {
    const std::string field = "callback.url";
    if (url.size() > limits.max_callback_url_bytes) {
        throw invalid_field(field, "longer than " + std::to_string(limits.max_callback_url_bytes) +
                                       " bytes");
    }
    std::string_view rest;
    if (url.size() >= 7 && iequals(url.substr(0, 7), "http://")) {
        rest = url.substr(7);
    } else if (url.size() >= 8 && iequals(url.substr(0, 8), "https://")) {
        rest = url.substr(8);
    } else {
        throw invalid_field(field, "must be an absolute http:// or https:// URL");
    }
    if (std::any_of(url.begin(), url.end(), [](char c) {
            const auto u = static_cast<unsigned char>(c);
            return u <= 0x20 || u >= 0x7f;
        })) {
        throw invalid_field(field, "must not contain spaces, control or non-ASCII bytes");
    }
    const std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
    std::string_view host = authority.substr(authority.rfind('@') + 1);
    std::string_view port;
    if (host.starts_with('[')) {
        const auto close = host.find(']');
        if (close == std::string_view::npos || close == 1 ||
            (close + 1 < host.size() && host[close + 1] != ':')) {
            throw invalid_field(field, "malformed IPv6 host");
        }
        if (close + 1 < host.size()) {
            port = host.substr(close + 2);
            if (port.empty()) {
                throw invalid_field(field, "malformed port");
            }
        }
        host = host.substr(0, close + 1);
    } else if (const auto colon = host.find(':'); colon != std::string_view::npos) {
        port = host.substr(colon + 1);
        host = host.substr(0, colon);
        if (port.empty()) {
            throw invalid_field(field, "malformed port");
        }
    }
    if (host.empty()) {
        throw invalid_field(field, "has no host");
    }
    if (!port.empty()) {
        int p = 0;
        auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
        if (ec != std::errc() || end != port.data() + port.size() || p < 1 || p > 65535) {
            throw invalid_field(field, "malformed port");
        }
    }
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
    return s.empty() ? json::value(nullptr) : json::value(s);
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

callback_spec parse_callback(const json::value& v, const validation_limits& limits) {
    const auto& o = as_object(v, "callback");
    only_known(o, "callback", {"url", "method", "headers", "body", "timeout_ms"});
    callback_spec c;
    const auto* url = o.if_contains("url");
    if (!url) {
        throw invalid_field("callback.url", "is required");
    }
    c.url = as_string(*url, "callback.url");
    check_url(c.url, limits);
    if (const auto* m = o.if_contains("method")) {
        c.method = as_string(*m, "callback.method");
        static constexpr std::array<std::string_view, 5> methods = {"GET", "POST", "PUT", "PATCH",
                                                                    "DELETE"};
        if (std::find(methods.begin(), methods.end(), c.method) == methods.end()) {
            throw invalid_field("callback.method", "must be GET, POST, PUT, PATCH or DELETE");
        }
    }
    if (const auto* h = o.if_contains("headers")) {
        const auto& hs = as_object(*h, "callback.headers");
        if (hs.size() > limits.max_callback_headers) {
            throw invalid_field("callback.headers",
                                "more than " + std::to_string(limits.max_callback_headers) +
                                    " headers");
        }
        for (const auto& kv : hs) {
            const std::string field = "callback.headers." + std::string(kv.key());
            if (kv.key().empty() || !std::all_of(kv.key().begin(), kv.key().end(), is_tchar)) {
                throw invalid_field(field, "not a valid header name");
            }
            for (std::string_view reserved :
                 {"host", "content-length", "transfer-encoding", "connection", "upgrade", "te",
                  "trailer", "keep-alive", "idempotency-key"}) {
                if (iequals(kv.key(), reserved)) {
                    throw invalid_field(field, "is set by timewheeld");
                }
            }
            const auto& value = as_string(kv.value(), field);
            if (has_control(value)) {
                throw invalid_field(field, "must not contain control characters");
            }
        }
        c.headers = hs;
    }
    if (const auto* b = o.if_contains("body")) {
        c.body = std::string(as_string(*b, "callback.body"));
    }
    if (const auto* t = o.if_contains("timeout_ms")) {
        c.timeout_ms = as_integer(*t, "callback.timeout_ms", 1, limits.max_timeout_ms);
    }
    return c;
}

std::string serialize_callback(const callback_spec& c) {
    json::object o;
    o["url"] = c.url;
    o["method"] = c.method;
    if (c.headers) {
        o["headers"] = *c.headers;
    }
    if (c.body) {
        o["body"] = *c.body;
    }
    if (c.timeout_ms) {
        o["timeout_ms"] = *c.timeout_ms;
    }
    return json::serialize(o);
}

dq::task parse_submit(std::string_view body, const validation_limits& limits) {
    const json::value v = parse_body(body);
    const auto& o = as_object(v, "body");
    only_known(o, "", {"id", "due_at", "delay_ms", "callback", "retry"});
    dq::task t;
    if (const auto* id = o.if_contains("id")) {
        t.id = as_string(*id, "id");
        check_id(t.id, limits);
    }
    t.due = parse_due(o, std::nullopt);
    const auto* cb = o.if_contains("callback");
    if (!cb) {
        throw invalid_field("callback", "is required");
    }
    t.payload = serialize_callback(parse_callback(*cb, limits));
    if (t.payload.size() > limits.max_payload_bytes) {
        throw invalid_field("callback",
                            "larger than " + std::to_string(limits.max_payload_bytes) + " bytes");
    }
    if (const auto* r = o.if_contains("retry")) {
        const auto& ro = as_object(*r, "retry");
        only_known(ro, "retry", {"attempts", "base_ms", "cap_ms"});
        if (const auto* a = ro.if_contains("attempts")) {
            t.retry.max_attempts = static_cast<std::uint32_t>(
                as_integer(*a, "retry.attempts", 1, limits.max_attempts));
        }
        if (const auto* b = ro.if_contains("base_ms")) {
            t.retry.base = dq::duration(as_integer(*b, "retry.base_ms", 0, limits.max_backoff_ms));
        }
        if (const auto* c = ro.if_contains("cap_ms")) {
            t.retry.cap = dq::duration(as_integer(*c, "retry.cap_ms", 0, limits.max_backoff_ms));
        }
        if (t.retry.base > t.retry.cap) {
            throw invalid_field(ro.contains("cap_ms") ? "retry.cap_ms" : "retry.base_ms",
                                "base_ms must not exceed cap_ms (" +
                                    std::to_string(t.retry.base.count()) + " > " +
                                    std::to_string(t.retry.cap.count()) + ")");
        }
    }
    return t;
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
    o["id"] = s.id;
    o["state"] = dq::to_string(s.state);
    o["attempts"] = s.attempt;
    o["due_at"] = format_rfc3339(s.due);
    o["created_at"] = format_rfc3339(s.created);
    o["updated_at"] = format_rfc3339(s.updated);
    o["retry"] = {{"attempts", s.retry.max_attempts},
                  {"base_ms", s.retry.base.count()},
                  {"cap_ms", s.retry.cap.count()}};
    o["last_error"] = optional_string(s.last_error);
    boost::system::error_code ec;
    json::value cb = s.payload.empty() ? json::value() : json::parse(s.payload, ec);
    if (!ec && cb.is_object()) {
        o["callback"] = std::move(cb);
    } else if (s.payload.empty()) {
        // The store no longer keeps it (the Redis store forgets a finished task's record,
        // and empties a cancelled one's): unknown, not an empty opaque payload.
        o["callback"] = nullptr;
    } else {
        // Not submitted through the API (a dq producer's opaque payload).
        o["payload"] = s.payload;
    }
    json::array log;
    for (const auto& a : s.log) {
        log.push_back(json::object{{"attempt", a.attempt},
                                   {"worker", a.worker},
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
        entries.push_back(json::object{{"id", e.id},
                                       {"died_at", format_rfc3339(e.died)},
                                       {"attempts", e.attempt},
                                       {"last_error", optional_string(e.last_error)}});
    }
    json::object o;
    o["entries"] = std::move(entries);
    o["next_cursor"] = p.cursor.empty() ? json::value(nullptr) : json::value(p.cursor);
    return o;
}

std::string error_body(std::string_view code, std::string_view message, std::string_view field) {
    json::object e;
    e["code"] = code;
    if (!field.empty()) {
        e["field"] = field;
    }
    e["message"] = message;
    return json::serialize(json::object{{"error", std::move(e)}});
}

} // namespace timewheeld::api
