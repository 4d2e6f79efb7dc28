//
// fuzz/request.cpp
//
// The request path of timewheeld: bytes in, answer out. The bytes are parsed as an HTTP
// request by Beast's request_parser under the limits server.cpp's session() sets, then
// answered by the real router (detail::handle, routes.hpp) on an api_context over a real
// store: dq::sqlite_store on a file in /dev/shm (or $TMPDIR), without fsync. The first byte
// chooses the settings: bit 0 sets a token ("s3cret"). Invariants:
//   - handle() throws nothing, and completes;
//   - the answer's status is a valid HTTP status;
//   - every answer that is not 2xx is JSON {"error": {"code": "...", "message": "..."}};
//   - every JSON answer is valid JSON, every body valid UTF-8, no header value holds CR, LF
//     or NUL (no response splitting through an echoed id);
//   - with a token set, a request without it is answered 2xx only by /healthz, /readyz and
//     the dashboard's static files (/ui/, which answer 301 and 304 without a body too, and
//     always with their Content-Security-Policy).
// The store is shared by the runs (a submit then a GET of the same id is reachable) and
// replaced every 10,000 runs, so that it stays small.
//
#include "check.hpp"

#include "routes.hpp"

#include <timewheeld/service/log.hpp>
#include <timewheeld/service/metrics.hpp>
#include <timewheeld/service/node_stats.hpp>
#include <timewheeld/service/settings.hpp>

#include <timewheel/dq/queue.hpp>
#include <timewheel/dq/sqlite_store.hpp>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/json/parse.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unistd.h>

namespace {

namespace api = timewheeld::api;
namespace service = timewheeld::service;
namespace dq = timewheel::dq;
namespace http = boost::beast::http;
namespace net = boost::asio;
namespace json = boost::json;

constexpr std::string_view token = "s3cret";

// What the runs share: the io_context, the store (replaced now and then), the metrics.
struct fixture {
    net::io_context io{1};
    service::metrics_registry registry;
    service::service_metrics metrics{registry};
    std::FILE* devnull = std::fopen("/dev/null", "w");
    service::logger log{service::log_level::error, devnull};
    service::settings open_cfg;
    service::settings token_cfg;
    std::string path;
    std::unique_ptr<dq::sqlite_store> store;
    std::unique_ptr<dq::queue> queue;
    // /metrics' and /v1/stats' shared count reads, as the server keeps them.
    api::detail::store_gauges_refresh gauges;
    service::node_stats stats{1}; // no dispatcher here: GET /v1/stats shows zeros
    unsigned long runs = 0;
    // The tokens in force of each settings (no file: --token alone, or none).
    std::optional<api::token_watch> open_tokens;
    std::optional<api::token_watch> token_tokens;

    fixture() {
        token_cfg.token = token;
        open_tokens.emplace(open_cfg, log);
        token_tokens.emplace(token_cfg, log);
        const char* dir = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : nullptr;
        const auto base = dir ? std::filesystem::path(dir) : std::filesystem::temp_directory_path();
        path = (base / ("timewheel-fuzz-request-" + std::to_string(::getpid()) + ".db")).string();
        open_store();
    }
    ~fixture() {
        close_store();
        if (devnull) {
            std::fclose(devnull);
        }
    }
    void open_store() {
        remove_files();
        store = std::make_unique<dq::sqlite_store>(
            io.get_executor(), dq::sqlite_store_options{.path = path, .fsync = false});
        queue = std::make_unique<dq::queue>(*store);
    }
    void close_store() {
        if (store) {
            store->close();
            io.restart();
            io.run(); // what the close completes
            queue.reset();
            store.reset();
        }
        remove_files();
    }
    void remove_files() {
        std::error_code ec;
        for (const char* suffix : {"", "-wal", "-shm", "-journal"}) {
            std::filesystem::remove(path + suffix, ec);
        }
    }
};

fixture& the_fixture() {
    static fixture f;
    return f;
}

bool is_2xx(unsigned s) {
    return s >= 200 && s < 300;
}

// The route name of the dashboard's files (routes.cpp), the one thing besides the probes that
// answers without the token: static files that hold no data.
constexpr std::string_view ui_route = "GET /ui/";

void check_answer(const api::detail::routed& r, bool authorized, bool token_set) {
    const unsigned status = r.res.result_int();
    FUZZ_CHECK(http::int_to_status(status) != http::status::unknown && status >= 200,
               "a valid final HTTP status");
    for (const auto& f : r.res) {
        const std::string_view v = f.value();
        FUZZ_CHECK(v.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos,
                   "no CR, LF or NUL in a header value");
    }
    const std::string& body = r.res.body();
    FUZZ_CHECK(timewheel::fuzz::valid_utf8(body), "the body is valid UTF-8");
    const std::string_view type = r.res[http::field::content_type];
    const bool is_json = type.starts_with("application/json");
    if (is_json) {
        boost::system::error_code ec;
        const json::value v = json::parse(body, ec);
        FUZZ_CHECK(!ec, "a JSON answer is valid JSON");
        if (!is_2xx(status)) {
            const auto* e = v.is_object() ? v.as_object().if_contains("error") : nullptr;
            FUZZ_CHECK(e && e->is_object(), "an error answer is {\"error\": {...}}");
            const auto* code = e->as_object().if_contains("code");
            const auto* message = e->as_object().if_contains("message");
            FUZZ_CHECK(code && code->is_string() && !code->as_string().empty(),
                       "an error has a code");
            FUZZ_CHECK(message && message->is_string(), "an error has a message");
        }
    } else if (r.route == ui_route) {
        // The dashboard's files: a file, a redirect to /ui/ or "not modified", never data.
        FUZZ_CHECK(is_2xx(status) || ((status == 301 || status == 304) && body.empty()),
                   "/ui/ answers a file, 301 or 304 (errors are JSON)");
    } else {
        FUZZ_CHECK(is_2xx(status), "an error answer is JSON");
    }
    if (r.route == ui_route) {
        FUZZ_CHECK(!r.res["Content-Security-Policy"].empty(),
                   "every /ui/ answer carries the Content-Security-Policy");
    }
    if (token_set && !authorized && is_2xx(status)) {
        FUZZ_CHECK(r.route == "GET /healthz" || r.route == "GET /readyz" || r.route == ui_route,
                   "without the token only /healthz, /readyz and the dashboard's files answer 2xx");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) {
        return 0;
    }
    auto& f = the_fixture();
    if (++f.runs % 10000 == 0) {
        f.close_store();
        f.open_store();
    }
    const bool token_set = data[0] & 1;
    service::settings& cfg = token_set ? f.token_cfg : f.open_cfg;

    // As session() reads a request (server.cpp): the request line is in Beast's header
    // limit, with room for the URL.
    http::request_parser<http::string_body> parser;
    parser.header_limit(
        static_cast<std::uint32_t>(cfg.max_header_bytes + 2 * cfg.max_url_bytes + 64));
    parser.body_limit(cfg.max_body_bytes);
    parser.eager(true);
    boost::system::error_code ec;
    net::const_buffer rest(data + 1, size - 1);
    while (rest.size() > 0 && !parser.is_done()) {
        const std::size_t used = parser.put(rest, ec);
        if (ec == http::error::need_more) {
            ec = {};
            break;
        }
        if (ec) {
            return 0; // answered 4xx by session() itself
        }
        rest += used;
    }
    if (!parser.is_done()) {
        if (!parser.got_some()) {
            return 0; // closed before a request began: session() just closes too
        }
        parser.put_eof(ec);
        if (ec || !parser.is_done()) {
            return 0;
        }
    }
    const auto& req = parser.get();
    if (req.target().size() > cfg.max_url_bytes) {
        return 0; // 414 by session()
    }

    api::detail::api_context ctx{
        *f.queue, f.metrics, cfg,      nullptr,
        f.log,    f.gauges,  &f.stats, token_set ? &*f.token_tokens : &*f.open_tokens};
    std::optional<api::detail::routed> answer;
    std::exception_ptr failure;
    bool done = false;
    net::co_spawn(f.io, api::detail::handle(ctx, req),
                  [&](std::exception_ptr e, api::detail::routed r) {
                      failure = e;
                      if (!e) {
                          answer = std::move(r);
                      }
                      done = true;
                  });
    f.io.restart();
    while (!done && f.io.run_one() > 0) {
    }
    FUZZ_CHECK(done, "handle() completes");
    if (failure) {
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "handle() threw: %s\n", e.what());
        }
        FUZZ_CHECK(false, "handle() throws nothing");
    }
    const std::string_view auth = req[http::field::authorization];
    const bool authorized = auth == "Bearer " + std::string(token);
    check_answer(*answer, authorized, token_set);
    return 0;
}
