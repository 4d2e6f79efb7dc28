//
// test/server/support/service_node.hpp
//
// What the service's fault and end-to-end tests share (test/server/fault_*.cpp):
//
//   - service_node: a timewheeld with its worker on a store the test owns (a redis-server of
//     its own, or a SQLite file), which the test may kill with -9 and start again on the
//     same store, or run next to another node on the same Redis;
//   - producer: threads that submit tasks to nodes as fast as the nodes answer, each task's
//     callback aimed at a sink, and remember the tasks whose submit was answered 201 or 200
//     (the accepted ones, which the service must deliver at least once);
//   - deliveries(): how many times the sink received each task (by Idempotency-Key);
//   - small readers of the API's answers (a task's state, a metric, a time).
//
#ifndef TIMEWHEEL_TEST_SERVER_SUPPORT_SERVICE_NODE_HPP
#define TIMEWHEEL_TEST_SERVER_SUPPORT_SERVICE_NODE_HPP

#include <test/server/support/api_service.hpp>
#include <test/server/support/sink.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace timewheel::test {

/// The system clock in milliseconds since the epoch (the store's clock is the same
/// machine's).
inline std::int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

/// The body of POST /v1/tasks: task `id`, due in `delay_ms`, calling `url` with POST and
/// `body`, with the retry policy `retry` (JSON).
inline std::string task_json(const std::string& id, const std::string& url, int delay_ms = 0,
                             const std::string& retry = R"({"attempts": 5, "base_ms": 50,
                                                           "cap_ms": 100})",
                             const std::string& body = "hello") {
    return R"({"id": )" + json_quote(id) + R"(, "delay_ms": )" + std::to_string(delay_ms) +
           R"(, "callback": {"url": )" + json_quote(url) + R"(, "method": "POST", "body": )" +
           json_quote(body) + R"(}, "retry": )" + retry + "}";
}

/// The store URL of a SQLite file in `dir`.
inline std::string sqlite_store_url(const temp_dir& dir, const std::string& file = "tasks.db") {
    return "sqlite:" + dir.file(file);
}

/// `t` as RFC 3339 in UTC with milliseconds ("2026-11-26T00:37:24.363Z"), for due_at
/// (api_service.hpp's rfc3339() gives whole seconds).
inline std::string rfc3339_ms(std::chrono::system_clock::time_point t) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch());
    const std::time_t secs = static_cast<std::time_t>(ms.count() / 1000);
    std::tm tm{};
    ::gmtime_r(&secs, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<int>(ms.count() % 1000));
    return buf;
}

/// A timewheeld with its worker (loopback callbacks allowed, one thread) on `store`.
class service_node {
public:
    struct options {
        std::string store;               ///< --store, always given explicitly
        std::vector<std::string> args{}; ///< more flags
        std::vector<std::string> env{};
        std::string faketime{};             ///< when set: run under libfaketime (FAKETIME)
        std::vector<std::string> preload{}; ///< preloaded before libfaketime
    };

    explicit service_node(options opt)
        : opt_(std::move(opt))
        , dir_(make_temp_dir("timewheeld-node")) {
        start();
    }
    ~service_node() {
        process_.reset();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }
    service_node(const service_node&) = delete;
    service_node& operator=(const service_node&) = delete;

    /// Starts the process (again, after kill9(): same store, same flags, a new port).
    void start() {
        std::vector<std::string> args = {"--store", opt_.store, "--threads", "1",
                                         "--callback-allow-loopback"};
        args.insert(args.end(), opt_.args.begin(), opt_.args.end());
        port_ = launch_timewheeld(process_, dir_, args, opt_.env, false, {}, opt_.faketime,
                                  opt_.preload);
    }
    /// kill -9, waited for.
    void kill9() { process_->kill9(); }

    std::uint16_t port() const noexcept { return port_; }
    child_process& process() noexcept { return *process_; }
    /// Everything its processes wrote (all runs).
    std::string log() const { return process_->output(); }

    api_reply request(api_http::verb method, std::string target, std::string body = {}) {
        api_connection c(port_);
        return c.exchange({method, std::move(target), std::move(body), {}});
    }
    api_reply get(std::string target) { return request(api_http::verb::get, std::move(target)); }
    api_reply post(std::string target, std::string body) {
        return request(api_http::verb::post, std::move(target), std::move(body));
    }

    /// The task's JSON (GET /v1/tasks/{id} must answer 200).
    boost::json::object task(const std::string& id) {
        const auto r = get("/v1/tasks/" + id);
        BOOST_TEST_REQUIRE(r.status == 200u, r);
        return r.json().as_object();
    }
    std::string state(const std::string& id) {
        return std::string(task(id).at("state").as_string());
    }

    /// The value of the sample `name` (a whole line's name, labels included) in /metrics,
    /// or -1 when absent.
    double metric(const std::string& name) {
        const auto r = get("/metrics");
        BOOST_TEST_REQUIRE(r.status == 200u, r);
        std::istringstream in(r.body);
        std::string line;
        while (std::getline(in, line)) {
            if (line.size() > name.size() && line.compare(0, name.size(), name) == 0 &&
                line[name.size()] == ' ') {
                return std::stod(line.substr(name.size() + 1));
            }
        }
        return -1;
    }

private:
    options opt_;
    std::filesystem::path dir_;
    std::optional<child_process> process_;
    std::uint16_t port_ = 0;
};

/// Submits tasks `<prefix>-<n>` from `threads` threads (each on a keep-alive connection of
/// its own, to the nodes' ports in turn), as fast as they answer, until stop() or until
/// a node fails to answer (killed): a thread that loses its connection stops. Task n is
/// due in `delay_ms(n)` and calls `url`.
class producer {
public:
    struct options {
        std::vector<std::uint16_t> ports;
        std::string url;
        std::string prefix = "t";
        std::function<int(std::size_t)> delay_ms = [](std::size_t n) {
            return static_cast<int>(200 + n % 1000);
        };
        std::size_t threads = 2;
        std::size_t limit = 0; ///< stop after this many submits in all (0: no limit)
    };

    explicit producer(options opt)
        : opt_(std::move(opt)) {
        running_ = opt_.threads;
        for (std::size_t t = 0; t < opt_.threads; ++t) {
            threads_.emplace_back([this, t] { run(opt_.ports[t % opt_.ports.size()]); });
        }
    }
    ~producer() { stop(); }
    producer(const producer&) = delete;
    producer& operator=(const producer&) = delete;

    /// Stops submitting and waits for the threads.
    void stop() {
        stop_ = true;
        for (auto& t : threads_) {
            if (t.joinable()) {
                t.join();
            }
        }
    }
    /// The ids whose submit was answered 201 or 200, so far.
    std::set<std::string> accepted() const {
        std::lock_guard lock(mutex_);
        return accepted_;
    }
    std::size_t accepted_count() const {
        std::lock_guard lock(mutex_);
        return accepted_.size();
    }
    /// Answers other than 201 and 200 (a failure of the test: the set-up is valid).
    std::vector<std::string> refused() const {
        std::lock_guard lock(mutex_);
        return refused_;
    }
    /// Threads still submitting (0 once `limit` is reached, or every node died).
    std::size_t running() const { return running_.load(); }

private:
    void run(std::uint16_t port) {
        try {
            api_connection c(port);
            while (!stop_) {
                const auto n = next_++;
                if (opt_.limit != 0 && n >= opt_.limit) {
                    break;
                }
                const std::string id = opt_.prefix + "-" + std::to_string(n);
                const auto r = c.exchange({api_http::verb::post,
                                           "/v1/tasks",
                                           task_json(id, opt_.url, opt_.delay_ms(n)),
                                           {}});
                std::lock_guard lock(mutex_);
                if (r.status == 201 || r.status == 200) {
                    accepted_.insert(id);
                } else {
                    refused_.push_back(id + ": " + std::to_string(r.status) + " " + r.body);
                }
            }
        } catch (const std::exception&) {
            // The node died: what it had not answered is not accepted.
        }
        --running_;
    }

    options opt_;
    std::vector<std::thread> threads_;
    std::atomic<bool> stop_{false};
    std::atomic<std::size_t> next_{0};
    std::atomic<std::size_t> running_{0};
    mutable std::mutex mutex_;
    std::set<std::string> accepted_;
    std::vector<std::string> refused_;
};

/// How many times `sink` received each task (by Idempotency-Key).
inline std::map<std::string, std::size_t> deliveries(const timewheel::test::sink& sink) {
    std::map<std::string, std::size_t> n;
    for (const auto& r : sink.requests()) {
        ++n[r.header("Idempotency-Key").value_or("")];
    }
    return n;
}

/// What became of the accepted tasks at the sink.
struct delivery_count {
    std::size_t missing = 0; ///< accepted, never delivered
    std::size_t twice = 0;   ///< delivered more than once
    std::string first_missing;
};

inline delivery_count count_deliveries(const std::set<std::string>& accepted,
                                       const timewheel::test::sink& sink) {
    const auto seen = deliveries(sink);
    delivery_count c;
    for (const auto& id : accepted) {
        const auto it = seen.find(id);
        if (it == seen.end()) {
            if (c.missing++ == 0) {
                c.first_missing = id;
            }
        } else if (it->second > 1) {
            ++c.twice;
        }
    }
    return c;
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SERVER_SUPPORT_SERVICE_NODE_HPP
