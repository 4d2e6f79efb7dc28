//
// test/dq/support/fault_env.hpp
//
// The setting of a fault test: a real redis-server on 127.0.0.1, a dq::redis_store and a
// dq::queue on the test's io_context, a scratch directory, and worker processes
// (dq_test_worker) started on demand, each with its own run log and counters file. The
// blocking helpers run the io_context until an operation completes, under a generous
// watchdog: they check what happened, never how fast.
//

#ifndef TIMEWHEEL_TEST_DQ_SUPPORT_FAULT_ENV_HPP
#define TIMEWHEEL_TEST_DQ_SUPPORT_FAULT_ENV_HPP

#include <timewheel/dq/queue.hpp>
#include <timewheel/dq/redis_store.hpp>

#include <test/dq/support/run_log.hpp>
#include <test/dq/support/store_calls.hpp>
#include <test/redis/support/redis_fixture.hpp>
#include <test/support/process.hpp>
#include <test/support/temp_dir.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/test/unit_test.hpp>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#if !defined(TIMEWHEEL_DQ_TEST_WORKER) || !defined(TIMEWHEEL_DQ_TEST_TIMERFD)
#error                                                                                             \
    "TIMEWHEEL_DQ_TEST_WORKER and _TIMERFD (paths of dq_test_worker, dq_test_timerfd) are set by test/dq/CMakeLists.txt"
#endif

namespace timewheel::test {

namespace dq = timewheel::dq;

/// How to start one worker process (see test/dq/support/worker_main.cpp for the meaning).
struct worker_spec {
    std::string name{};
    std::string faketime{};                     ///< e.g. "+30s": a skewed clock
    std::chrono::milliseconds handler_time{20}; ///< how long each handler runs
    std::chrono::milliseconds lease{2000};      ///< the lease of each claim
    std::chrono::milliseconds horizon{200};     ///< how far ahead it claims
    int concurrency = 16;                       ///< handlers at once
    std::string outcome = "payload"; ///< "payload": as the payload says; "success": always
};

/// A redis-server, a store and a queue on `io`, and worker processes.
class fault_env {
public:
    /// The queue's name in Redis, and the number of shards of its layout.
    static constexpr const char* queue_name = "faults";
    static constexpr std::uint32_t shards = 8;

    explicit fault_env(redis_server::options server_options = {})
        : server_(std::move(server_options)) {
        dir_ = make_temp_dir("timewheel-dq-faults");
        open_store();
    }

    ~fault_env() {
        workers_.clear(); // kill -9 what still runs
        close_store();
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
    }

    boost::asio::io_context& io() noexcept { return io_; }
    redis_server& server() noexcept { return server_; }
    dq::queue& queue() noexcept { return *queue_; }
    dq::redis_store& store() noexcept { return *store_; }
    const std::filesystem::path& dir() const noexcept { return dir_; }

    /// Closes and re-opens the test's store (a fresh connection).
    void reopen_store() {
        close_store();
        open_store();
    }

    // --- Worker processes -----------------------------------------------------------------

    /// Starts a worker process; it runs until stopped, killed, or the test ends.
    child_process& start_worker(const worker_spec& w) {
        auto args = std::vector<std::string>{TIMEWHEEL_DQ_TEST_WORKER,
                                             "--port",
                                             std::to_string(server_.port()),
                                             "--queue",
                                             queue_name,
                                             "--shards",
                                             std::to_string(shards),
                                             "--name",
                                             w.name,
                                             "--log",
                                             log_path(w.name).string(),
                                             "--counters",
                                             counters_path(w.name).string(),
                                             "--handler-ms",
                                             std::to_string(w.handler_time.count()),
                                             "--lease-ms",
                                             std::to_string(w.lease.count()),
                                             "--horizon-ms",
                                             std::to_string(w.horizon.count()),
                                             "--concurrency",
                                             std::to_string(w.concurrency),
                                             "--outcome",
                                             w.outcome};
        // With a skewed clock, timerfd calls bypass libfaketime (support/timerfd_passthrough.cpp
        // says why).
        auto p = std::make_unique<child_process>(child_process::options{
            .argv = std::move(args),
            .output = dir_ / (w.name + ".out"),
            .faketime = w.faketime,
            .preload = w.faketime.empty() ? std::vector<std::string>{}
                                          : std::vector<std::string>{TIMEWHEEL_DQ_TEST_TIMERFD}});
        auto& ref = *p;
        workers_[w.name] = std::move(p);
        return ref;
    }

    child_process& worker(const std::string& name) { return *workers_.at(name); }

    /// Stops a worker (SIGTERM) and waits for it; it must exit 0 (a graceful stop, and no
    /// sanitizer report). Returns its counters (written when the signal came, and again
    /// after the stop).
    std::map<std::string, std::int64_t> stop_worker(const std::string& name) {
        auto& p = worker(name);
        p.terminate();
        BOOST_TEST_REQUIRE(p.wait(std::chrono::seconds(30)), name << " did not stop on SIGTERM");
        BOOST_TEST(p.exit_status() == 0, name << " exited with " << p.exit_status() << ":\n"
                                              << p.output());
        auto c = read_counters(counters_path(name));
        BOOST_TEST_REQUIRE(c.contains("runs"), name << " wrote no counters:\n" << p.output());
        return c;
    }

    std::filesystem::path log_path(const std::string& worker) const {
        return dir_ / (worker + ".log");
    }
    std::filesystem::path counters_path(const std::string& worker) const {
        return dir_ / (worker + ".counters");
    }

    /// Every run every worker logged so far.
    std::vector<run_record> runs() const {
        std::vector<std::filesystem::path> files;
        for (const auto& [name, p] : workers_) {
            files.push_back(log_path(name));
        }
        return read_runs(files);
    }

    // --- Blocking operations on the queue -------------------------------------------------

    /// Submits every task, with at most `in_flight` outstanding; returns each one's
    /// error and result, in order.
    std::vector<std::pair<boost::system::error_code, dq::submit_result>>
    submit_all(std::vector<dq::task> tasks, std::size_t in_flight = 64) {
        std::vector<std::pair<boost::system::error_code, dq::submit_result>> out(tasks.size());
        std::size_t next = 0, done = 0, outstanding = 0;
        auto pump = [&] {
            while (outstanding < in_flight && next < tasks.size()) {
                const std::size_t i = next++;
                ++outstanding;
                queue_->async_submit(std::move(tasks[i]), [&, i](boost::system::error_code ec,
                                                                 dq::submit_result r, std::string) {
                    out[i] = {ec, r};
                    --outstanding;
                    ++done;
                });
            }
        };
        const bool ok = run_until(
            io_,
            [&] {
                pump();
                return done == out.size();
            },
            std::chrono::seconds(60));
        BOOST_TEST_REQUIRE(ok, "submit_all: " << done << " of " << out.size() << " completed");
        return out;
    }

    /// The status of one task (error not_found as an empty optional).
    std::optional<dq::task_status> status(const std::string& id) {
        auto [ec, st] = timewheel::test::call<dq::task_status>(
            io_, [&](auto h) { queue_->async_status(id, std::move(h)); });
        BOOST_TEST_REQUIRE((!ec || ec == dq::error::not_found),
                           "status " << id << ": " << ec.message());
        return ec ? std::nullopt : std::optional<dq::task_status>(std::move(st));
    }

    /// The states of many tasks (pipelined: all requests out at once).
    std::map<std::string, std::optional<dq::task_status>>
    statuses(const std::vector<std::string>& ids) {
        std::map<std::string, std::optional<dq::task_status>> out;
        std::size_t done = 0;
        boost::system::error_code first_error;
        for (const auto& id : ids) {
            queue_->async_status(id, [&, id](boost::system::error_code ec, dq::task_status st) {
                if (!ec) {
                    out[id] = std::move(st);
                } else if (ec == dq::error::not_found) {
                    out[id] = std::nullopt;
                } else if (!first_error) {
                    first_error = ec;
                }
                ++done;
            });
        }
        BOOST_TEST_REQUIRE(run_until(io_, [&] { return done == ids.size(); }),
                           "statuses: " << done << " of " << ids.size());
        BOOST_TEST_REQUIRE(!first_error, "status: " << first_error.message());
        return out;
    }

    /// Polls the states of `ids` until every one is `state` (or `limit` passes, a watchdog).
    /// Returns whether they all got there.
    bool wait_all(const std::vector<std::string>& ids, dq::task_state state,
                  std::chrono::steady_clock::duration limit = std::chrono::seconds(60)) {
        const auto deadline = std::chrono::steady_clock::now() + limit;
        for (;;) {
            std::size_t there = 0;
            for (const auto& [id, s] : statuses(ids)) {
                there += s && s->state == state;
            }
            if (there == ids.size()) {
                return true;
            }
            if (std::chrono::steady_clock::now() > deadline) {
                BOOST_TEST_MESSAGE("wait_all: " << there << " of " << ids.size() << " " << state);
                return false;
            }
            // Statuses are not free (a finished task's log is read from its shard's
            // stream): poll gently.
            run_for(io_, std::chrono::milliseconds(ids.size() > 100 ? 500 : 100));
        }
    }

    /// The store's clock now.
    dq::time_point store_now() {
        auto [ec, t] =
            timewheel::test::call<dq::time_point>(io_, [&](auto h) { store_->now(std::move(h)); });
        BOOST_TEST_REQUIRE(!ec, "now: " << ec.message());
        return t;
    }

private:
    void open_store() {
        auto cfg = server_.config();
        cfg.reconnect_min_delay = std::chrono::milliseconds(20);
        cfg.reconnect_max_delay = std::chrono::milliseconds(200);
        dq::redis_store_options opt;
        opt.name = queue_name;
        opt.shards = shards;
        store_ = std::make_unique<dq::redis_store>(io_.get_executor(), cfg, opt);
        queue_ = std::make_unique<dq::queue>(*store_);
    }

    void close_store() {
        queue_.reset();
        if (store_) {
            store_->close();
            run_for(io_, std::chrono::milliseconds(20));
            store_.reset();
        }
    }

    redis_server server_;
    std::filesystem::path dir_;
    boost::asio::io_context io_;
    std::unique_ptr<dq::redis_store> store_;
    std::unique_ptr<dq::queue> queue_;
    std::map<std::string, std::unique_ptr<child_process>> workers_;
};

/// `n` tasks "<prefix><i>", due `due(i)`, with `policy`.
template <typename Due>
std::vector<dq::task> make_tasks(const std::string& prefix, std::size_t n, Due due,
                                 dq::retry_policy policy = {}) {
    std::vector<dq::task> tasks;
    for (std::size_t i = 0; i < n; ++i) {
        tasks.push_back({.id = prefix + std::to_string(i),
                         .due = due(i),
                         .payload = "payload-" + std::to_string(i),
                         .retry = policy});
    }
    return tasks;
}

inline std::vector<std::string> ids_of(const std::vector<dq::task>& tasks) {
    std::vector<std::string> ids;
    for (const auto& t : tasks) {
        ids.push_back(t.id);
    }
    return ids;
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_DQ_SUPPORT_FAULT_ENV_HPP
