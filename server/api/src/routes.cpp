//
// server/api/src/routes.cpp
//
// The router: what every request goes through before it reaches an endpoint (a target in
// origin form, a Host this service answers to, the token, an origin allowed to change state,
// a JSON body), then its path and method to the endpoint, and the answers every endpoint
// shares (JSON, the store's errors). The endpoints themselves live by resource in
// routes_tasks.cpp, routes_dead.cpp, routes_schedules.cpp and routes_probes.cpp (and the
// dashboard's files in routes_ui.cpp), so that reading one resource's behaviour does not
// mean reading the others'. Every route label here ("METHOD /path") is an operation of
// docs/openapi.yaml: test/openapi/contract.py fails otherwise.
//
#include "routes.hpp"

#include <timewheel/dq/error.hpp>

#include <boost/asio/ip/address.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/json/serialize.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <vector>

namespace timewheeld::api::detail {

using boost::beast::iequals;

// --- The answers every endpoint shares ----------------------------------------------------

response json_response(http::status status, std::string body) {
    response res(status, 11);
    res.set(http::field::content_type, "application/json");
    res.body() = std::move(body);
    return res;
}

response json_response(http::status status, const json::object& o) {
    return json_response(status, json::serialize(o));
}

// The store does not answer (in time): the client may try again shortly, as a load
// balancer does with another node meanwhile (/readyz says the same).
response store_unavailable(std::string_view message) {
    auto res = error_response(http::status::service_unavailable, "store_unavailable", message);
    res.set(http::field::retry_after, "1");
    return res;
}

// A failed store operation as an answer: the queue's own refusals keep their meaning (and
// name their field), anything else means the store is unavailable.
response store_error(const boost::system::error_code& ec, std::string_view due_field) {
    if (ec.category() == dq::error_category()) {
        switch (static_cast<dq::error>(ec.value())) {
        case dq::error::not_found:
            return error_response(http::status::not_found, "not_found", "no such task");
        case dq::error::wrong_state:
            return error_response(http::status::conflict, "wrong_state",
                                  "the task is not in a state that allows this");
        case dq::error::empty_id:
        case dq::error::id_too_long:
        case dq::error::invalid_id:
            return error_response(http::status::bad_request, "invalid_field", ec.message(), "id");
        case dq::error::payload_too_large:
            return error_response(http::status::bad_request, "invalid_field", ec.message(),
                                  "callback");
        case dq::error::due_out_of_range:
            return error_response(http::status::bad_request, "invalid_field", ec.message(),
                                  due_field);
        case dq::error::zero_attempts:
            return error_response(http::status::bad_request, "invalid_field", ec.message(),
                                  "retry.attempts");
        case dq::error::invalid_backoff:
            return error_response(http::status::bad_request, "invalid_field", ec.message(),
                                  "retry");
        case dq::error::store_full:
            return error_response(http::status::insufficient_storage, "store_full", ec.message());
        default:
            break;
        }
    }
    return store_unavailable(ec.message());
}

response bad_field(const service::invalid_field& e) {
    return json_response(
        http::status::bad_request,
        service::error_body("invalid_field", e.message(), e.field(), e.position()));
}

// An id as one path segment: everything but RFC 3986's unreserved characters
// percent-encoded, so that "a/b?c" comes back as the one segment "a%2Fb%3Fc".
std::string encode_segment(std::string_view s) {
    static constexpr char digits[] = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) || c == '-' || c == '.' || c == '_' || c == '~') {
            out += c;
        } else {
            out += '%';
            out += digits[u >> 4];
            out += digits[u & 15];
        }
    }
    return out;
}

// A list's paging (API.md, "Lists"): cursor (opaque, percent-decoded) and limit (1 to 1000,
// default 100).
std::variant<page_params, response> parse_page_params(std::string_view query) {
    page_params p;
    if (auto c = query_param(query, "cursor")) {
        auto d = decode(*c, true);
        if (!d) {
            return error_response(http::status::bad_request, "invalid_field",
                                  "malformed percent-encoding", "cursor");
        }
        p.cursor = std::move(*d);
    }
    if (auto l = query_param(query, "limit")) {
        std::size_t n = 0;
        auto [end, ec] = std::from_chars(l->data(), l->data() + l->size(), n);
        if (l->empty() || ec != std::errc() || end != l->data() + l->size() || n < 1 || n > 1000) {
            return error_response(http::status::bad_request, "invalid_field",
                                  "must be an integer in [1, 1000]", "limit");
        }
        p.limit = n;
    }
    return p;
}

// --- The target -----------------------------------------------------------------------------

namespace {

int hex(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

} // namespace

// Percent-decoding of a path segment or a query value ("+" is a space in a query only).
std::optional<std::string> decode(std::string_view s, bool query) {
    std::string out;
    out.reserve(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%') {
            if (i + 2 >= s.size()) {
                return std::nullopt;
            }
            const int hi = hex(s[i + 1]);
            const int lo = hex(s[i + 2]);
            if (hi < 0 || lo < 0) {
                return std::nullopt;
            }
            out += static_cast<char>(hi * 16 + lo);
            i += 2;
        } else if (query && s[i] == '+') {
            out += ' ';
        } else {
            out += s[i];
        }
    }
    return out;
}

std::optional<std::string_view> query_param(std::string_view query, std::string_view name) {
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto pair = query.substr(0, amp);
        const auto eq = pair.find('=');
        if (pair.substr(0, eq) == name) {
            return eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1);
        }
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    }
    return std::nullopt;
}

std::variant<std::vector<std::pair<std::string, std::string>>, response>
query_params(std::string_view query) {
    std::vector<std::pair<std::string, std::string>> out;
    while (!query.empty()) {
        const auto amp = query.find('&');
        const auto pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
        if (pair.empty()) {
            continue; // "a=1&&b=2"
        }
        const auto eq = pair.find('=');
        auto name = decode(pair.substr(0, eq), true);
        if (!name) {
            return error_response(http::status::bad_request, "invalid_field",
                                  "malformed percent-encoding in a parameter's name", "query");
        }
        auto value =
            decode(eq == std::string_view::npos ? std::string_view() : pair.substr(eq + 1), true);
        if (!value) {
            return error_response(http::status::bad_request, "invalid_field",
                                  "malformed percent-encoding", *name);
        }
        out.emplace_back(std::move(*name), std::move(*value));
    }
    return out;
}

namespace {

std::vector<std::string_view> split_path(std::string_view path) {
    std::vector<std::string_view> parts;
    while (!path.empty()) {
        path.remove_prefix(1); // the '/'
        const auto end = path.find('/');
        parts.push_back(path.substr(0, end));
        path = end == std::string_view::npos ? std::string_view() : path.substr(end);
    }
    return parts;
}

response method_not_allowed(std::string_view allow) {
    auto res = error_response(http::status::method_not_allowed, "method_not_allowed",
                              "allowed: " + std::string(allow));
    res.set(http::field::allow, allow);
    return res;
}

// --- The checks before any route ---------------------------------------------------------

// The dashboard's files: /ui and what is under /ui/ (exactly: "/uix" is not).
bool is_ui(std::string_view path) {
    return path == "/ui" || path.starts_with("/ui/");
}

// Everything but the probes and the dashboard's files (which hold no data, and which a
// browser's navigation cannot send a token for: routes_ui.cpp): a path that routes nowhere
// needs the token too, so that no spelling of a target can reach a route unchecked.
bool needs_token(std::string_view path) {
    return path != "/healthz" && path != "/readyz" && !is_ui(path);
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
        s.remove_prefix(1);
    }
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
        s.remove_suffix(1);
    }
    return s;
}

// The host of a Host header ("example.com:8080" -> "example.com", "[::1]:80" -> "::1").
std::string_view host_of(std::string_view authority) {
    if (authority.starts_with('[')) {
        const auto close = authority.find(']');
        return close == std::string_view::npos ? std::string_view()
                                               : authority.substr(1, close - 1);
    }
    return authority.substr(0, authority.find(':'));
}

// Whether a request may name this host: an address (which no DNS rebinding can give), this
// machine's own name for itself, or a name the operator listed. A page that rebinds its own
// name to 127.0.0.1 still sends that name.
bool host_allowed(std::string_view authority, const service::settings& cfg) {
    const auto host = host_of(authority);
    if (host.empty()) {
        return false;
    }
    boost::system::error_code ec;
    net::ip::make_address(std::string(host), ec);
    if (!ec || iequals(host, "localhost")) {
        return true;
    }
    return std::any_of(cfg.allowed_hosts.begin(), cfg.allowed_hosts.end(),
                       [&](const std::string& h) { return h == "*" || iequals(h, host); });
}

bool changes_state(http::verb method) {
    return method != http::verb::get && method != http::verb::head && method != http::verb::options;
}

// Whether a request that changes state comes from a page the service trusts: browsers send
// Origin with every such request (and Sec-Fetch-Site with most); a client that is not a
// browser sends neither. The service's own origin is its Host under either scheme (a TLS
// proxy may stand in front).
bool origin_allowed(const request& req, const service::settings& cfg) {
    const auto origin = req.find(http::field::origin);
    if (origin == req.end()) {
        const std::string_view site = req["Sec-Fetch-Site"];
        return site.empty() || site == "same-origin" || site == "none";
    }
    const std::string_view o = origin->value();
    const std::string_view host = req[http::field::host];
    for (std::string_view scheme : {"http://", "https://"}) {
        if (!host.empty() && o.size() == scheme.size() + host.size() &&
            iequals(o.substr(0, scheme.size()), scheme) && iequals(o.substr(scheme.size()), host)) {
            return true;
        }
    }
    return std::any_of(cfg.allowed_origins.begin(), cfg.allowed_origins.end(),
                       [&](const std::string& a) { return iequals(a, o); });
}

// Whether a body is declared JSON ("application/json", any parameters). A browser's form or
// text/plain request, which needs no CORS preflight, never is.
bool is_json(std::string_view content_type) {
    return iequals(trim(content_type.substr(0, content_type.find(';'))), "application/json");
}

// The checks every request passes before its route, in this order: a target in origin form,
// a Host this service answers to, the token, an origin allowed to change state, a JSON body.
std::optional<routed> refuse(const api_context& ctx, const request& req, std::string_view path) {
    if (!req.target().starts_with('/')) {
        // "*", the absolute form and anything else: a proxy's business, not this service's.
        return routed{error_response(http::status::bad_request, "bad_target",
                                     "the request target must be a path starting with '/'"),
                      "rejected"};
    }
    const auto host = req.find(http::field::host);
    if (host == req.end()) {
        if (req.version() >= 11) {
            return routed{error_response(http::status::bad_request, "missing_host",
                                         "HTTP/1.1 requests need a Host header"),
                          "rejected"};
        }
    } else if (!host_allowed(host->value(), ctx.cfg)) {
        return routed{error_response(http::status::misdirected_request, "unknown_host",
                                     "this service does not answer to that Host (see "
                                     "--allowed-hosts)"),
                      "rejected"};
    }
    if (needs_token(path) && ctx.tokens->enabled()) {
        const std::string_view auth = req[http::field::authorization];
        constexpr std::string_view scheme = "Bearer ";
        const auto granted =
            auth.starts_with(scheme) ? ctx.tokens->find(auth.substr(scheme.size())) : std::nullopt;
        if (!granted) {
            auto res = error_response(http::status::unauthorized, "unauthorized",
                                      "a valid bearer token is required");
            res.set(http::field::www_authenticate, "Bearer");
            return routed{std::move(res), "unauthorized"};
        }
        // Reading needs read; anything else write, but changing the queues' settings admin
        // (docs/design/queues-and-flow-control.md, "The API"). The token sees the route, so
        // 403, not 404.
        const bool queues = path == "/v1/queues" || path.starts_with("/v1/queues/");
        const auto needed = !changes_state(req.method()) ? service::scope::read
                            : queues                     ? service::scope::admin
                                                         : service::scope::write;
        if (*granted < needed) {
            auto res = error_response(
                http::status::forbidden, "insufficient_scope",
                "this token's scope is " + std::string(service::to_string(*granted)) +
                    "; this request needs " + std::string(service::to_string(needed)));
            res.set(http::field::www_authenticate, "Bearer error=\"insufficient_scope\"");
            return routed{std::move(res), "unauthorized"};
        }
    }
    if (changes_state(req.method()) && !origin_allowed(req, ctx.cfg)) {
        return routed{error_response(http::status::forbidden, "forbidden_origin",
                                     "requests that change state are not accepted from this "
                                     "origin (see --allowed-origins)"),
                      "rejected"};
    }
    if (!req.body().empty() && !is_json(req[http::field::content_type])) {
        return routed{error_response(http::status::unsupported_media_type, "unsupported_media_type",
                                     "the body must be JSON (Content-Type: application/json)",
                                     "Content-Type"),
                      "rejected"};
    }
    return std::nullopt;
}

} // namespace

response error_response(http::status status, std::string_view code, std::string_view message,
                        std::string_view field) {
    return json_response(status, service::error_body(code, message, field));
}

bool constant_time_equal(std::string_view given, std::string_view expected) noexcept {
    unsigned char diff = given.size() == expected.size() ? 0 : 1;
    if (expected.empty()) {
        return given.empty();
    }
    for (std::size_t i = 0; i < given.size(); ++i) {
        diff |= static_cast<unsigned char>(given[i] ^ expected[i % expected.size()]);
    }
    return diff == 0;
}

net::awaitable<routed> handle(api_context& ctx, const request& req) {
    const std::string_view target = req.target();
    const auto qmark = target.find('?');
    const std::string_view path = target.substr(0, qmark);
    const std::string_view query =
        qmark == std::string_view::npos ? std::string_view() : target.substr(qmark + 1);
    const auto method = req.method();

    if (auto refused = refuse(ctx, req, path)) {
        co_return std::move(*refused);
    }

    if (path == "/healthz") {
        if (method != http::verb::get && method != http::verb::head) {
            co_return routed{method_not_allowed("GET"), "/healthz"};
        }
        co_return routed{json_response(http::status::ok, json::object{{"status", "ok"}}),
                         "GET /healthz"};
    }
    if (path == "/readyz") {
        if (method != http::verb::get && method != http::verb::head) {
            co_return routed{method_not_allowed("GET"), "/readyz"};
        }
        {
            auto res = co_await ready(ctx);
            co_return routed{std::move(res), "GET /readyz"};
        }
    }
    if (path == "/metrics") {
        if (method != http::verb::get) {
            co_return routed{method_not_allowed("GET"), "/metrics"};
        }
        {
            auto res = co_await metrics(ctx);
            co_return routed{std::move(res), "GET /metrics"};
        }
    }

    if (is_ui(path)) {
        co_return routed{ui_file(req, path), "GET /ui/"};
    }

    const auto parts = split_path(path);
    if (parts.size() < 2 || parts[0] != "v1") {
        co_return routed{error_response(http::status::not_found, "no_route", "no such endpoint"),
                         "unknown"};
    }
    std::string id;
    if (parts.size() >= 3) {
        auto d = decode(parts[2], false);
        if (!d) {
            co_return routed{error_response(http::status::bad_request, "invalid_field",
                                            "malformed percent-encoding", "id"),
                             "invalid id"};
        }
        try {
            service::check_id(*d, ctx.cfg.validation);
        } catch (const service::invalid_field& e) {
            co_return routed{bad_field(e), "invalid id"};
        }
        id = std::move(*d);
    }

    if (parts[1] == "tasks") {
        if (parts.size() == 2) {
            switch (method) {
            case http::verb::post: {
                auto res = co_await submit(ctx, req);
                co_return routed{std::move(res), "POST /v1/tasks"};
            }
            case http::verb::get: {
                auto res = co_await list_tasks(ctx, query);
                co_return routed{std::move(res), "GET /v1/tasks"};
            }
            default:
                co_return routed{method_not_allowed("GET, POST"), "/v1/tasks"};
            }
        }
        if (parts.size() == 3) {
            switch (method) {
            case http::verb::get: {
                auto res = co_await task_answer(ctx, std::move(id), http::status::ok);
                co_return routed{std::move(res), "GET /v1/tasks/{id}"};
            }
            case http::verb::delete_: {
                auto res = co_await cancel(ctx, std::move(id));
                co_return routed{std::move(res), "DELETE /v1/tasks/{id}"};
            }
            case http::verb::patch: {
                auto res = co_await reschedule(ctx, std::move(id), req);
                co_return routed{std::move(res), "PATCH /v1/tasks/{id}"};
            }
            default:
                co_return routed{method_not_allowed("GET, PATCH, DELETE"), "/v1/tasks/{id}"};
            }
        }
        if (parts.size() == 4 && parts[3] == "result") {
            if (method != http::verb::post) {
                co_return routed{method_not_allowed("POST"), "/v1/tasks/{id}/result"};
            }
            {
                auto res = co_await report_result(ctx, std::move(id), req);
                co_return routed{std::move(res), "POST /v1/tasks/{id}/result"};
            }
        }
    } else if (parts[1] == "dead") {
        if (parts.size() == 2) {
            if (method != http::verb::get) {
                co_return routed{method_not_allowed("GET"), "/v1/dead"};
            }
            {
                auto res = co_await list_dead(ctx, query);
                co_return routed{std::move(res), "GET /v1/dead"};
            }
        }
        if (parts.size() == 3) {
            if (method != http::verb::delete_) {
                co_return routed{method_not_allowed("DELETE"), "/v1/dead/{id}"};
            }
            {
                auto res = co_await delete_dead(ctx, std::move(id));
                co_return routed{std::move(res), "DELETE /v1/dead/{id}"};
            }
        }
        if (parts.size() == 4 && parts[3] == "retry") {
            if (method != http::verb::post) {
                co_return routed{method_not_allowed("POST"), "/v1/dead/{id}/retry"};
            }
            {
                auto res = co_await retry_dead(ctx, std::move(id), req);
                co_return routed{std::move(res), "POST /v1/dead/{id}/retry"};
            }
        }
    } else if (parts[1] == "stats" && parts.size() == 2) {
        if (method != http::verb::get) {
            co_return routed{method_not_allowed("GET"), "/v1/stats"};
        }
        auto res = co_await stats(ctx);
        co_return routed{std::move(res), "GET /v1/stats"};
    } else if (parts[1] == "openapi.json" && parts.size() == 2) {
        // The contract, behind the token like the rest of /v1 (docs/server.md, "OpenAPI").
        if (method != http::verb::get) {
            co_return routed{method_not_allowed("GET"), "/v1/openapi.json"};
        }
        co_return routed{json_response(http::status::ok, openapi_document()),
                         "GET /v1/openapi.json"};
    } else if (parts[1] == "tasks:batch" && parts.size() == 2) {
        if (method != http::verb::post) {
            co_return routed{method_not_allowed("POST"), "/v1/tasks:batch"};
        }
        auto res = co_await submit_batch(ctx, req);
        co_return routed{std::move(res), "POST /v1/tasks:batch"};
    } else if (parts[1] == "queues") {
        if (parts.size() == 2) {
            switch (method) {
            case http::verb::post: {
                auto res = co_await create_queue(ctx, req);
                co_return routed{std::move(res), "POST /v1/queues"};
            }
            case http::verb::get: {
                auto res = co_await list_queues(ctx, query);
                co_return routed{std::move(res), "GET /v1/queues"};
            }
            default:
                co_return routed{method_not_allowed("GET, POST"), "/v1/queues"};
            }
        }
        if (parts.size() == 3) {
            switch (method) {
            case http::verb::get: {
                auto res = co_await queue_answer(ctx, std::move(id), http::status::ok);
                co_return routed{std::move(res), "GET /v1/queues/{id}"};
            }
            case http::verb::patch: {
                auto res = co_await change_queue(ctx, std::move(id), req);
                co_return routed{std::move(res), "PATCH /v1/queues/{id}"};
            }
            case http::verb::delete_: {
                auto res = co_await delete_queue(ctx, std::move(id));
                co_return routed{std::move(res), "DELETE /v1/queues/{id}"};
            }
            default:
                co_return routed{method_not_allowed("GET, PATCH, DELETE"), "/v1/queues/{id}"};
            }
        }
    } else if (parts[1] == "schedules:preview" && parts.size() == 2) {
        if (method != http::verb::post) {
            co_return routed{method_not_allowed("POST"), "/v1/schedules:preview"};
        }
        co_return routed{preview_schedule(ctx, req), "POST /v1/schedules:preview"};
    } else if (parts[1] == "schedules") {
        if (parts.size() == 2) {
            switch (method) {
            case http::verb::post: {
                auto res = co_await create_schedule(ctx, req);
                co_return routed{std::move(res), "POST /v1/schedules"};
            }
            case http::verb::get: {
                auto res = co_await list_schedules(ctx, query);
                co_return routed{std::move(res), "GET /v1/schedules"};
            }
            default:
                co_return routed{method_not_allowed("GET, POST"), "/v1/schedules"};
            }
        }
        if (parts.size() == 3) {
            switch (method) {
            case http::verb::get: {
                auto res = co_await schedule_answer(ctx, std::move(id), http::status::ok);
                co_return routed{std::move(res), "GET /v1/schedules/{id}"};
            }
            case http::verb::patch: {
                auto res = co_await change_schedule(ctx, std::move(id), req);
                co_return routed{std::move(res), "PATCH /v1/schedules/{id}"};
            }
            case http::verb::delete_: {
                auto res = co_await delete_schedule(ctx, std::move(id));
                co_return routed{std::move(res), "DELETE /v1/schedules/{id}"};
            }
            default:
                co_return routed{method_not_allowed("GET, PATCH, DELETE"), "/v1/schedules/{id}"};
            }
        }
        if (parts.size() == 4 && parts[3] == "next") {
            if (method != http::verb::get) {
                co_return routed{method_not_allowed("GET"), "/v1/schedules/{id}/next"};
            }
            auto res = co_await next_of_schedule(ctx, std::move(id), query);
            co_return routed{std::move(res), "GET /v1/schedules/{id}/next"};
        }
        if (parts.size() == 4 &&
            (parts[3] == "pause" || parts[3] == "resume" || parts[3] == "trigger")) {
            static constexpr std::string_view routes[] = {"POST /v1/schedules/{id}/pause",
                                                          "POST /v1/schedules/{id}/resume",
                                                          "POST /v1/schedules/{id}/trigger"};
            const auto which = parts[3] == "pause" ? 0 : parts[3] == "resume" ? 1 : 2;
            if (method != http::verb::post) {
                co_return routed{method_not_allowed("POST"), routes[which].substr(5)};
            }
            // One co_await a statement: GCC 12 destroys the temporaries of a co_await in
            // a conditional operator twice.
            response res;
            if (which == 2) {
                res = co_await trigger_schedule(ctx, std::move(id));
            } else {
                res = co_await pause_schedule(ctx, std::move(id), which == 0);
            }
            co_return routed{std::move(res), routes[which]};
        }
    }
    co_return routed{error_response(http::status::not_found, "no_route", "no such endpoint"),
                     "unknown"};
}

} // namespace timewheeld::api::detail
