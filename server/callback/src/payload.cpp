#include <timewheeld/callback/payload.hpp>

#include <timewheeld/callback/url.hpp>

#include <boost/json/monotonic_resource.hpp>
#include <boost/json/object.hpp>
#include <boost/json/parse.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

namespace timewheeld::callback {

namespace json = boost::json;

namespace {
std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    return out;
}

bool token_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// The headers the client writes itself, or that would change how the message is framed.
bool reserved_header(std::string_view name) {
    static constexpr std::array<std::string_view, 13> reserved = {"host",
                                                                  "content-length",
                                                                  "transfer-encoding",
                                                                  "connection",
                                                                  "keep-alive",
                                                                  "upgrade",
                                                                  "te",
                                                                  "trailer",
                                                                  "expect",
                                                                  "idempotency-key",
                                                                  "proxy-connection",
                                                                  "proxy-authorization",
                                                                  "user-agent"};
    auto n = lower(name);
    return std::find(reserved.begin(), reserved.end(), n) != reserved.end() ||
           n.starts_with("timewheel-");
}

const json::string& want_string(const json::value& v, const std::string& field) {
    if (!v.is_string())
        throw payload_error(field, "must be a string");
    return v.get_string();
}

// One object of headers ("headers" or "secret_headers") into `out`. `other` holds what the
// other object gave (a name may not be in both: which value would be sent?); `count` and
// `bytes` are the headers, and their names and values, of both so far.
void parse_headers(const json::value& h, const std::string& what,
                   std::vector<std::pair<std::string, std::string>>& out,
                   const std::vector<std::pair<std::string, std::string>>& other,
                   std::size_t& count, std::size_t& bytes, const payload_limits& limits) {
    if (!h.is_object())
        throw payload_error(what, "must be an object of strings");
    for (const auto& kv : h.get_object()) {
        std::string name(kv.key());
        std::string field = what + "." + name;
        if (name.empty() || !std::all_of(name.begin(), name.end(), token_char))
            throw payload_error(field, "is not a valid header name");
        if (reserved_header(name))
            throw payload_error(field, "is set by timewheeld and cannot be given");
        if (std::any_of(other.begin(), other.end(),
                        [&](const auto& kv2) { return lower(kv2.first) == lower(name); }))
            throw payload_error(field, "is in both headers and secret_headers");
        const auto& value = want_string(kv.value(), field);
        if (std::any_of(value.begin(), value.end(), [](char c) {
                auto u8 = static_cast<unsigned char>(c);
                return (u8 < 0x20 && c != '\t') || u8 == 0x7f;
            }))
            throw payload_error(field, "has a control character (CR, LF, NUL, ...)");
        if (++count > limits.max_headers)
            throw payload_error(what, "more than " + std::to_string(limits.max_headers) +
                                          " headers (headers and secret_headers together)");
        bytes += name.size() + value.size();
        if (bytes > limits.max_header_bytes)
            throw payload_error(what, "more than " + std::to_string(limits.max_header_bytes) +
                                          " bytes of names and values (headers and "
                                          "secret_headers together)");
        out.emplace_back(std::move(name), std::string(value));
    }
}

void check_url(const std::string& u, const std::string& field, const payload_limits& limits) {
    url parsed;
    boost::system::error_code ec;
    std::string why;
    if (!parse_url(u, limits.max_url_length, parsed, ec, why))
        throw payload_error(field, why);
}

json::object headers_json(const std::vector<std::pair<std::string, std::string>>& list) {
    json::object h;
    for (const auto& [name, value] : list)
        h[name] = value;
    return h;
}
} // namespace

notice_target parse_notice_target(const json::value& v, const payload_limits& limits,
                                  std::string_view field) {
    const std::string f(field);
    if (!v.is_object())
        throw payload_error(f, "must be an object with a url (and headers)");
    const auto& o = v.get_object();
    for (const auto& kv : o) {
        if (kv.key() != "url" && kv.key() != "headers")
            throw payload_error(f + "." + (kv.key().empty() ? "\"\"" : std::string(kv.key())),
                                "unknown field (a notice target has url and headers)");
    }
    notice_target t;
    const auto* u = o.if_contains("url");
    if (!u)
        throw payload_error(f + ".url", "is required");
    t.url = want_string(*u, f + ".url");
    check_url(t.url, f + ".url", limits);
    if (const auto* h = o.if_contains("headers")) {
        std::size_t count = 0;
        std::size_t bytes = 0;
        parse_headers(*h, f + ".headers", t.headers, {}, count, bytes, limits);
    }
    return t;
}

json::object to_json(const notice_target& target) {
    json::object o;
    o["url"] = target.url;
    if (!target.headers.empty())
        o["headers"] = headers_json(target.headers);
    return o;
}

callback_spec parse_callback(const json::value& v, const payload_limits& limits) {
    if (!v.is_object())
        throw payload_error("callback", "must be an object");
    const auto& o = v.get_object();
    for (const auto& kv : o) {
        static constexpr std::array<std::string_view, 8> known = {
            "url",  "method",     "headers",    "secret_headers",
            "body", "timeout_ms", "on_success", "on_failure"};
        if (std::find(known.begin(), known.end(), std::string_view(kv.key())) == known.end())
            // An empty key is named by its JSON spelling: an error always names a field.
            throw payload_error(kv.key().empty() ? "\"\"" : std::string(kv.key()), "unknown field");
    }
    callback_spec spec;

    const auto* u = o.if_contains("url");
    if (!u)
        throw payload_error("url", "is required");
    spec.url = want_string(*u, "url");
    check_url(spec.url, "url", limits);

    if (const auto* m = o.if_contains("method")) {
        spec.method = want_string(*m, "method");
        static constexpr std::array<std::string_view, 5> methods = {"GET", "POST", "PUT", "PATCH",
                                                                    "DELETE"};
        if (std::find(methods.begin(), methods.end(), spec.method) == methods.end())
            throw payload_error("method", "\"" + spec.method +
                                              "\" is not one of GET, POST, PUT, PATCH, DELETE");
    }

    std::size_t count = 0;
    std::size_t bytes = 0;
    if (const auto* h = o.if_contains("headers"))
        parse_headers(*h, "headers", spec.headers, spec.secret_headers, count, bytes, limits);
    if (const auto* h = o.if_contains("secret_headers"))
        parse_headers(*h, "secret_headers", spec.secret_headers, spec.headers, count, bytes,
                      limits);

    if (const auto* b = o.if_contains("body")) {
        spec.body = want_string(*b, "body");
        if (spec.body.size() > limits.max_body)
            throw payload_error("body",
                                "longer than " + std::to_string(limits.max_body) + " bytes");
    }

    if (const auto* t = o.if_contains("timeout_ms")) {
        std::int64_t ms = 0;
        if (t->is_int64())
            ms = t->get_int64();
        else if (t->is_uint64() && t->get_uint64() <= static_cast<std::uint64_t>(INT64_MAX))
            ms = static_cast<std::int64_t>(t->get_uint64());
        else
            throw payload_error("timeout_ms", "must be an integer number of milliseconds");
        if (ms < 1 || ms > limits.max_timeout.count())
            throw payload_error("timeout_ms", "must be between 1 and " +
                                                  std::to_string(limits.max_timeout.count()));
        spec.timeout = std::chrono::milliseconds(ms);
    }

    if (const auto* t = o.if_contains("on_success"))
        spec.on_success = parse_notice_target(*t, limits, "on_success");
    if (const auto* t = o.if_contains("on_failure"))
        spec.on_failure = parse_notice_target(*t, limits, "on_failure");
    return spec;
}

callback_spec parse_callback(std::string_view text, const payload_limits& limits) {
    // Parsed once per attempt of every task: the JSON tree lives in a buffer on the stack
    // (and spills to the heap only for a large payload), and the spec copies what it keeps.
    unsigned char buffer[4096];
    json::monotonic_resource resource(buffer, sizeof buffer);
    boost::system::error_code ec;
    auto v = json::parse(text, ec, &resource);
    if (ec)
        throw payload_error("callback", "is not valid JSON (" + ec.message() + ")");
    return parse_callback(v, limits);
}

json::object to_json(const callback_spec& spec) {
    json::object o;
    o["url"] = spec.url;
    o["method"] = spec.method;
    auto headers = [&](const char* key, const auto& list) {
        if (!list.empty())
            o[key] = headers_json(list);
    };
    headers("headers", spec.headers);
    headers("secret_headers", spec.secret_headers);
    if (!spec.body.empty())
        o["body"] = spec.body;
    if (spec.timeout.count() > 0)
        o["timeout_ms"] = spec.timeout.count();
    if (spec.on_success)
        o["on_success"] = to_json(*spec.on_success);
    if (spec.on_failure)
        o["on_failure"] = to_json(*spec.on_failure);
    return o;
}

void redact(json::object& callback) {
    if (auto* h = callback.if_contains("secret_headers"); h && h->is_object())
        for (auto& kv : h->get_object())
            kv.value() = "***";
}

} // namespace timewheeld::callback
