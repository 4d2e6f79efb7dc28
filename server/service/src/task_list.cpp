//
// server/service/src/task_list.cpp
//
// The parameters are checked before anything is read: a misspelt one, one given twice, a
// time filter on the wrong kind of state (a due-time range over finished tasks, whose sort
// key is their end), a range that holds nothing. Each refusal names the parameter, as
// the API's 400s name fields.
//
#include <timewheeld/service/task_list.hpp>

#include <timewheeld/callback/utf8.hpp>
#include <timewheeld/service/node_stats.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <optional>

namespace timewheeld::service {

namespace {

namespace json = boost::json;

constexpr std::array<std::string_view, 11> known = {
    "state",     "order", "due_after", "due_before", "ended_after", "ended_before",
    "id_prefix", "host",  "limit",     "cursor",     "queue"};

constexpr std::string_view states_list =
    "one of delayed, prefetched, running, finished, dead, cancelled";

// Delayed, prefetched and running tasks sort by due time; the others by their end.
bool ended(dq::task_state s) noexcept {
    return s == dq::task_state::finished || s == dq::task_state::dead ||
           s == dq::task_state::cancelled;
}

std::optional<dq::task_state> state_named(std::string_view name) noexcept {
    for (const auto s :
         {dq::task_state::delayed, dq::task_state::prefetched, dq::task_state::running,
          dq::task_state::finished, dq::task_state::dead, dq::task_state::cancelled}) {
        if (name == dq::to_string(s)) {
            return s;
        }
    }
    return std::nullopt;
}

dq::time_point time_param(const std::string& name, const std::string& value) {
    dq::time_point t;
    try {
        t = parse_rfc3339(value);
    } catch (const std::invalid_argument& e) {
        throw invalid_field(name, std::string("must be an RFC 3339 time: ") + e.what());
    }
    if (t < dq::time_point{} || t > dq::max_due) {
        throw invalid_field(name, "must be between 1970-01-01T00:00:00Z and " +
                                      format_rfc3339(dq::max_due));
    }
    return t;
}

// A host filter: a name or address, an IPv6 literal in brackets, an optional port.
std::string host_param(std::string_view v) {
    constexpr std::size_t max_host = 300;
    if (v.empty() || v.size() > max_host) {
        throw invalid_field("host", "must be a host name or address, with an optional :port, "
                                    "at most 300 bytes");
    }
    std::string out;
    for (const char c : v) {
        const auto u = static_cast<unsigned char>(c);
        if (!(std::isalnum(u) || c == '.' || c == '-' || c == '_' || c == ':' || c == '[' ||
              c == ']')) {
            throw invalid_field("host", "must be a host name or address, with an optional "
                                        ":port (no scheme, no path)");
        }
        out += static_cast<char>(std::tolower(u));
    }
    return out;
}

json::value optional_text(const std::string& s) {
    return s.empty() ? json::value(nullptr) : json::value(callback::valid_utf8(s));
}

} // namespace

task_list_request parse_task_list(const std::vector<std::pair<std::string, std::string>>& params,
                                  const validation_limits& limits) {
    for (std::size_t i = 0; i < params.size(); ++i) {
        const auto& name = params[i].first;
        if (std::find(known.begin(), known.end(), name) == known.end()) {
            throw invalid_field(name, "unknown parameter (known: state, order, due_after, "
                                      "due_before, ended_after, ended_before, id_prefix, host, "
                                      "limit, cursor, queue)");
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (params[j].first == name) {
                throw invalid_field(name, "given twice");
            }
        }
    }
    auto find = [&](std::string_view name) -> const std::string* {
        for (const auto& [n, v] : params) {
            if (n == name) {
                return &v;
            }
        }
        return nullptr;
    };

    task_list_request r;
    auto& q = r.query;
    const auto* state = find("state");
    if (!state) {
        throw invalid_field("state", "required: " + std::string(states_list));
    }
    const auto s = state_named(*state);
    if (!s) {
        throw invalid_field("state", "must be " + std::string(states_list));
    }
    q.state = *s;
    q.descending = ended(*s);
    if (const auto* order = find("order")) {
        if (*order == "asc") {
            q.descending = false;
        } else if (*order == "desc") {
            q.descending = true;
        } else {
            throw invalid_field("order", "must be asc or desc");
        }
    }
    // The time range is on the state's sort key: the due time, or the end.
    const std::string_view kind = ended(*s) ? "ended" : "due";
    for (const std::string_view other :
         {"due_after", "due_before", "ended_after", "ended_before"}) {
        if (!other.starts_with(kind) && find(other)) {
            throw invalid_field(std::string(other),
                                ended(*s) ? "only with state delayed, prefetched or running "
                                            "(use ended_after and ended_before)"
                                          : "only with state finished, dead or cancelled (use "
                                            "due_after and due_before)");
        }
    }
    const std::string after_name = std::string(kind) + "_after";
    const std::string before_name = std::string(kind) + "_before";
    if (const auto* v = find(after_name)) {
        q.after = time_param(after_name, *v);
    }
    if (const auto* v = find(before_name)) {
        q.before = time_param(before_name, *v);
    }
    if (q.after && q.before && *q.after >= *q.before) {
        throw invalid_field(before_name, "must be later than " + after_name);
    }
    if (const auto* v = find("id_prefix")) {
        if (v->size() > limits.max_id_bytes) {
            throw invalid_field("id_prefix",
                                "longer than " + std::to_string(limits.max_id_bytes) + " bytes");
        }
        if (std::any_of(v->begin(), v->end(),
                        [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
            throw invalid_field("id_prefix", "must not contain control characters");
        }
        q.id_prefix = *v;
    }
    if (const auto* v = find("queue")) {
        check_queue_name(*v, "queue");
        if (q.state == dq::task_state::finished) {
            throw invalid_field("queue", "not with state finished: the Redis store no longer "
                                         "knows a finished task's queue");
        }
        q.queue = *v;
    }
    if (const auto* v = find("host")) {
        r.host = host_param(*v);
    }
    if (const auto* v = find("limit")) {
        std::size_t n = 0;
        const auto [end, ec] = std::from_chars(v->data(), v->data() + v->size(), n);
        if (v->empty() || ec != std::errc() || end != v->data() + v->size() || n < 1 || n > 1000) {
            throw invalid_field("limit", "must be an integer in [1, 1000]");
        }
        q.limit = n;
    }
    if (const auto* v = find("cursor")) {
        q.cursor = *v;
    }
    return r;
}

bool host_matches(std::string_view filter, std::string_view destination) noexcept {
    if (filter.empty()) {
        return true;
    }
    if (filter == destination) {
        return true;
    }
    // A filter without a port matches the host at any port ("[::1]" or "example.com").
    const auto colon = destination.rfind(':');
    return colon != std::string_view::npos && destination.substr(0, colon) == filter;
}

json::object task_entry_to_json(const dq::task_page::entry& e, const validation_limits& limits,
                                std::string& destination) {
    json::object o;
    o["id"] = callback::valid_utf8(e.id);
    o["state"] = dq::to_string(e.state);
    // Redis does not keep a finished task's due time: unknown, not 1970.
    o["due_at"] =
        e.due == dq::time_point{} ? json::value(nullptr) : json::value(format_rfc3339(e.due));
    if (ended(e.state)) {
        o["ended_at"] = format_rfc3339(e.key);
    }
    o["attempt"] = e.attempt;
    o["last_error"] = optional_text(e.last_error);
    o["queue"] = e.queue.empty() ? json::value(nullptr) : json::value(e.queue);
    destination.clear();
    json::value cb = nullptr;
    if (!e.payload.empty()) {
        try {
            const auto spec =
                callback::parse_callback(std::string_view(e.payload), limits.callback);
            cb = json::object{{"method", spec.method}, {"url", callback::valid_utf8(spec.url)}};
            if (!destination_of(spec.url, destination)) {
                destination.clear();
            }
        } catch (const callback::payload_error&) {
            // Not submitted through the API (a dq producer's opaque payload): no callback.
        }
    }
    o["callback"] = std::move(cb);
    return o;
}

} // namespace timewheeld::service
