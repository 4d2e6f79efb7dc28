//
// test/server/support/api_service.hpp
//
// What the API's tests share: a timewheeld process on 127.0.0.1 (port 0, the bound port
// read from its --port-file) in front of a real redis-server, and a small blocking HTTP
// client on Beast that speaks to it, one connection per request unless told otherwise.
//
#ifndef TIMEWHEEL_TEST_SERVER_SUPPORT_API_SERVICE_HPP
#define TIMEWHEEL_TEST_SERVER_SUPPORT_API_SERVICE_HPP

#include <test/redis/support/redis_fixture.hpp>
#include <test/support/process.hpp>

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>
#include <boost/json/parse.hpp>
#include <boost/json/serialize.hpp>
#include <boost/json/value.hpp>
#include <boost/test/unit_test.hpp>

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace timewheel::test {

namespace api_http = boost::beast::http;

/// An answer, with its body parsed as JSON when it is JSON.
struct api_reply {
    unsigned status = 0;
    api_http::fields headers;
    std::string body;

    boost::json::value json() const {
        boost::system::error_code ec;
        auto v = boost::json::parse(body, ec);
        BOOST_TEST_REQUIRE(!ec, "not JSON: " << body);
        return v;
    }
    /// The "field" of an error answer ("" when none).
    std::string error_field() const {
        const auto v = json();
        const auto* e = v.as_object().if_contains("error");
        BOOST_TEST_REQUIRE(e, "not an error answer: " << body);
        const auto* f = e->as_object().if_contains("field");
        return f ? std::string(f->as_string()) : std::string();
    }
    std::string error_code() const {
        const auto v = json();
        return std::string(v.at("error").at("code").as_string());
    }
};

inline std::ostream& operator<<(std::ostream& os, const api_reply& r) {
    return os << r.status << ' ' << r.body;
}

/// One request to be sent.
struct api_request {
    api_http::verb method = api_http::verb::get;
    std::string target = "/";
    std::string body{};
    std::vector<std::pair<std::string, std::string>> headers{};
};

/// A blocking HTTP/1.1 connection to 127.0.0.1:port (reads time out after 30 s: a watchdog).
class api_connection {
public:
    explicit api_connection(std::uint16_t port)
        : socket_(io_) {
        socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
        timeval tv{30, 0};
        ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }

    boost::asio::ip::tcp::socket& socket() noexcept { return socket_; }

    /// Writes a request (Host, Content-Type, Content-Length set unless given).
    void send(const api_request& r) {
        api_http::request<api_http::string_body> req(r.method, r.target, 11);
        req.set(api_http::field::host, "127.0.0.1");
        if (!r.body.empty()) {
            req.set(api_http::field::content_type, "application/json");
        }
        for (const auto& [k, v] : r.headers) {
            req.set(k, v);
        }
        req.body() = r.body;
        req.prepare_payload();
        api_http::write(socket_, req);
    }

    /// Reads one answer.
    api_reply receive() {
        api_http::response_parser<api_http::string_body> parser;
        parser.body_limit(64 * 1024 * 1024);
        api_http::read(socket_, buffer_, parser);
        auto res = parser.release();
        api_reply reply;
        reply.status = res.result_int();
        reply.headers = res.base();
        reply.body = std::move(res.body());
        return reply;
    }

    api_reply exchange(const api_request& r) {
        send(r);
        return receive();
    }

private:
    boost::asio::io_context io_;
    boost::asio::ip::tcp::socket socket_;
    boost::beast::flat_buffer buffer_;
};

/// Starts TIMEWHEELD_BINARY into `process` with --port 0 and `args`, its output appended
/// to `dir`/timewheeld.log (so that the log of a restarted process follows the first), and
/// returns the port it listens on once it does (read from `dir`/port). `wrapper`: a command
/// that ends by exec'ing the rest of its arguments (the same process: its pid is
/// timewheeld's), such as unshare for a mount namespace of its own. `faketime`: run under
/// libfaketime with this FAKETIME, `preload` loaded before it (child_process::options).
/** @throws std::runtime_error when it exits or does not listen within 30 s. */
inline std::uint16_t
launch_timewheeld(std::optional<child_process>& process, const std::filesystem::path& dir,
                  const std::vector<std::string>& args, const std::vector<std::string>& env,
                  bool in_dir = false, const std::vector<std::string>& wrapper = {},
                  const std::string& faketime = {}, const std::vector<std::string>& preload = {}) {
    const auto port_file = dir / "port";
    std::error_code ec;
    std::filesystem::remove(port_file, ec); // a restart must not read the last one's port
    std::vector<std::string> argv = {TIMEWHEELD_BINARY, "--port", "0", "--port-file",
                                     port_file.string()};
    argv.insert(argv.end(), args.begin(), args.end());
    if (in_dir) {
        // The working directory is `dir`: the shell changes to it, then becomes timewheeld
        // (exec: the same process, signals and all).
        argv.insert(argv.begin(), {"/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", dir.string()});
    }
    argv.insert(argv.begin(), wrapper.begin(), wrapper.end());
    process.reset();
    process.emplace(child_process::options{.argv = argv,
                                           .output = dir / "timewheeld.log",
                                           .faketime = faketime,
                                           .preload = preload,
                                           .env = env});
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
        std::ifstream in(port_file);
        unsigned p = 0;
        if (in >> p && p != 0) {
            return static_cast<std::uint16_t>(p);
        }
        if (!process->running()) {
            throw std::runtime_error("timewheeld exited at start: " + process->output());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    throw std::runtime_error("timewheeld did not listen within 30 s: " + process->output());
}

/// A redis-server and a timewheeld in front of it.
class api_service {
public:
    struct options {
        std::vector<std::string> args{}; ///< extra flags
        std::vector<std::string> env{};  ///< extra "NAME=value"
        std::string queue = "api";
        /// Run timewheeld's own callback worker (the API's tests play the worker themselves:
        /// --no-worker unless this is set).
        bool worker = false;
        /// Give no --store: timewheeld runs with its default store, in dir() as its working
        /// directory (the redis-server still runs, unused).
        bool default_store = false;
    };

    api_service()
        : api_service(options{}) {}

    explicit api_service(options opt)
        : opt_(std::move(opt)) {
        start();
    }

    ~api_service() {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }

    redis_server& redis() noexcept { return redis_; }
    child_process& process() noexcept { return *process_; }
    std::uint16_t port() const noexcept { return port_; }
    /// The service's temporary directory (its port file, its log; removed at the end).
    const std::filesystem::path& dir() const noexcept { return dir_; }
    const std::string& queue() const noexcept { return opt_.queue; }
    std::string store_url() const {
        return "redis://127.0.0.1:" + std::to_string(redis_.port()) + "/" + opt_.queue;
    }

    /// Sends one request on a connection of its own.
    api_reply request(api_http::verb method, std::string target, std::string body = {},
                      std::vector<std::pair<std::string, std::string>> headers = {}) {
        api_connection c(port_);
        return c.exchange({method, std::move(target), std::move(body), std::move(headers)});
    }
    api_reply get(std::string target) { return request(api_http::verb::get, std::move(target)); }
    api_reply post(std::string target, std::string body) {
        return request(api_http::verb::post, std::move(target), std::move(body));
    }

    /// The process's log so far.
    std::string log() const { return process_->output(); }

private:
    void start() {
        dir_ = make_temp_dir("timewheeld-test");
        std::vector<std::string> args;
        if (!opt_.default_store) {
            args = {"--store", store_url()};
        }
        if (!opt_.worker) {
            args.push_back("--no-worker");
        }
        args.insert(args.end(), opt_.args.begin(), opt_.args.end());
        port_ = launch_timewheeld(process_, dir_, args, opt_.env, opt_.default_store);
    }

    options opt_;
    redis_server redis_;
    std::filesystem::path dir_;
    std::optional<child_process> process_;
    std::uint16_t port_ = 0;
};

/// A JSON string literal for `s` (for building request bodies).
inline std::string json_quote(std::string_view s) {
    return boost::json::serialize(boost::json::value(s));
}

/// `t` in RFC 3339, UTC, whole seconds (cut, not rounded: never later than `t`).
inline std::string rfc3339(std::chrono::system_clock::time_point t) {
    const std::time_t secs = std::chrono::system_clock::to_time_t(t);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

/// The body of a submit of a task due at `t` (whole seconds) whose callback nobody runs.
inline std::string task_due_at(const std::string& id, std::chrono::system_clock::time_point t) {
    return R"({"id": )" + json_quote(id) + R"(, "due_at": ")" + rfc3339(t) +
           R"(", "callback": {"url": "http://127.0.0.1:9/never"}})";
}

/// The value of an unlabelled metric in Prometheus text ("" when it is absent).
inline std::string metric_value(const std::string& text, const std::string& name) {
    const auto at = text.find("\n" + name + " ");
    if (at == std::string::npos) {
        return {};
    }
    const auto begin = at + name.size() + 2;
    return text.substr(begin, text.find('\n', begin) - begin);
}

/// "2026-11-26T00:37:24.363Z" as milliseconds since the epoch (the API writes UTC).
inline std::int64_t epoch_ms(std::string_view rfc3339) {
    std::tm tm{};
    int ms = 0;
    const std::string s(rfc3339);
    BOOST_TEST_REQUIRE(std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon,
                                   &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) == 7,
                       s);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return static_cast<std::int64_t>(::timegm(&tm)) * 1000 + ms;
}

/// Checks timewheeld_oldest_due_age_seconds on `svc`, whose timewheeld runs no worker (a
/// due task waits) and whose store holds no other task: 0 with nothing due, still 0 with a
/// task due in an hour, at least 5 s (and less than an hour) with a task due 5 s ago, 0 once
/// that one is cancelled.
template <typename Service>
void check_oldest_due_age(Service& svc) {
    using namespace std::chrono_literals;
    auto age = [&] {
        const auto m = svc.get("/metrics");
        BOOST_TEST_REQUIRE(m.status == 200u, m);
        const auto v = metric_value(m.body, "timewheeld_oldest_due_age_seconds");
        BOOST_TEST_REQUIRE(!v.empty(), m.body);
        return std::strtod(v.c_str(), nullptr);
    };
    BOOST_TEST(age() == 0.0);
    BOOST_TEST_REQUIRE(
        svc.post("/v1/tasks", task_due_at("far", std::chrono::system_clock::now() + 1h)).status ==
        201u);
    BOOST_TEST(age() == 0.0);
    BOOST_TEST_REQUIRE(
        svc.post("/v1/tasks", task_due_at("late", std::chrono::system_clock::now() - 5s)).status ==
        201u);
    const auto waited = age();
    BOOST_TEST(waited >= 5.0);
    BOOST_TEST(waited < 3600.0);
    BOOST_TEST(svc.request(api_http::verb::delete_, "/v1/tasks/late").status == 200u);
    BOOST_TEST(age() == 0.0);
}

/// Polls `done` until it holds or `limit` has passed (a generous bound, not a timed
/// assertion: the checks that follow say what went wrong).
template <typename Pred>
bool eventually(Pred done, std::chrono::seconds limit = std::chrono::seconds(30)) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) {
            return true;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return done();
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SERVER_SUPPORT_API_SERVICE_HPP
