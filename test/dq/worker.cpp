//
// test/dq/worker.cpp
//
// dq::worker against dq::redis_store on a real redis-server (loopback): a task runs once, at
// or after its due time by the store's clock; many random due times all run, in due order
// within each start batch; a cancel or a reschedule reaches a prefetched task; retries
// follow the policy to the dead letters and back; tasks due while no worker ran all run;
// a long handler keeps its lease; the concurrency limit holds; a graceful stop releases
// what it prefetched and waits for what runs; a Redis restart under the worker is survived,
// and so is a FUNCTION FLUSH;
// a lying clock sample cannot make a task start early. Time is only ever checked as order
// and "never early" (by the store's clock), with generous limits on waiting.
//

#include <timewheel/dq/worker.hpp>

#define BOOST_TEST_MODULE dq_worker
#include <boost/test/unit_test.hpp>

#include <test/dq/support/forwarding_store.hpp>
#include <test/dq/support/store_calls.hpp>
#include <test/dq/support/worker_cases.hpp>
#include <test/redis/support/redis_fixture.hpp>
#include <test/support/allocation_counter.hpp>

#include <timewheel/dq/queue.hpp>
#include <timewheel/dq/redis_store.hpp>
#include <timewheel/wheel_timer.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace dq = timewheel::dq;
using timewheel::test::redis_available;
using timewheel::test::redis_server;
using timewheel::test::run_until;
using namespace std::chrono_literals;
using boost::system::error_code;

using timewheel::test::resp_command;

namespace {

redis_server& server() {
    static auto instance = std::make_unique<redis_server>();
    return *instance;
}

dq::redis_store_options small_queue() {
    dq::redis_store_options o;
    o.name = "w";
    o.shards = 4;
    o.buckets = 8;
    return o;
}

// A store decorator whose claims report the store's time `skew` later than it is: a worker
// trusting that sample fires early, and only the store's own check keeps the task waiting.
// It also counts the claims in flight (with a skew of 0 it only watches).
class lying_clock_store final : public timewheel::test::forwarding_store {
public:
    lying_clock_store(dq::store& inner, dq::duration skew)
        : forwarding_store(inner)
        , skew_(skew) {}

    std::size_t too_early_ = 0;
    std::size_t claims_in_flight_ = 0;
    std::size_t most_claims_in_flight_ = 0;

private:
    void do_claim(const dq::claim_options& o,
                  handler<void(error_code, dq::claim_result)> h) override {
        most_claims_in_flight_ = std::max(most_claims_in_flight_, ++claims_in_flight_);
        inner().claim(o, [this, h = std::move(h)](error_code ec, dq::claim_result r) mutable {
            --claims_in_flight_;
            r.server_time += skew_;
            if (r.next_due) {
                *r.next_due += skew_; // (claim again when the worker thinks it is due)
            }
            std::move(h)(ec, std::move(r));
        });
    }
    void do_start(std::vector<dq::lease_ref> l,
                  handler<void(error_code, std::vector<dq::start_result>)> h) override {
        inner().start(std::move(l), [this, h = std::move(h)](
                                        error_code ec, std::vector<dq::start_result> r) mutable {
            for (auto x : r) {
                too_early_ += x == dq::start_result::too_early;
            }
            std::move(h)(ec, std::move(r));
        });
    }

    dq::duration skew_;
};

struct fixture : timewheel::test::worker_fixture {
    std::unique_ptr<dq::queue> queue;

    explicit fixture(const redis_server& srv = server(),
                     std::chrono::milliseconds request_timeout = 0ms) {
        srv.command(resp_command({"FLUSHALL"}));
        auto cfg = srv.config();
        cfg.request_timeout = request_timeout;
        store = std::make_unique<dq::redis_store>(io.get_executor(), cfg, small_queue());
        queue = std::make_unique<dq::queue>(*store);
    }

    ~fixture() override {
        static_cast<dq::redis_store&>(*store).close();
        timewheel::test::run_for(io, 20ms);
    }
};

std::unique_ptr<timewheel::test::worker_fixture> make_fixture() {
    return std::make_unique<fixture>();
}

using timewheel::test::options;
using timewheel::test::recording_handler;
using timewheel::test::run;

} // namespace

BOOST_AUTO_TEST_SUITE(worker, *boost::unit_test::precondition(redis_available()))

DQ_TEST_WORKER_CASES(make_fixture)

BOOST_AUTO_TEST_CASE(the_three_handler_forms_and_an_abandoned_job) {
    fixture f;
    // A plain function: its return value is the report; an exception is a retry.
    {
        int calls = 0;
        dq::worker w(*f.store, options(), [&](const dq::job& j) -> dq::outcome {
            ++calls;
            if (j.payload() == "throw") {
                throw std::runtime_error("thrown by the handler");
            }
            return dq::outcome::failure("no: " + j.payload());
        });
        w.start();
        f.submit("plain", 0ms, "x", {1, 10ms, 10ms});
        f.submit("thrower", 0ms, "throw", {1, 10ms, 10ms});
        BOOST_REQUIRE(f.wait([&] { return w.stats().acked == 2; }));
        BOOST_TEST(calls == 2);
        BOOST_TEST(w.stats().failed == 1u);
        BOOST_TEST(w.stats().retried == 1u);
        BOOST_TEST(f.status("plain").state == dq::task_state::dead);
        BOOST_TEST(f.status("plain").last_error == "no: x");
        BOOST_TEST(f.status("thrower").last_error == "thrown by the handler");
        BOOST_TEST(f.stop(w) == error_code());
    }
    // A coroutine.
    {
        dq::worker w(*f.store, options(),
                     [&](const dq::job& j) -> boost::asio::awaitable<dq::outcome> {
                         timewheel::wheel_timer t(co_await boost::asio::this_coro::executor, 5ms);
                         co_await t.async_wait(boost::asio::use_awaitable);
                         co_return j.payload() == "ok" ? dq::outcome::success()
                                                       : dq::outcome::retry("later");
                     });
        w.start();
        f.submit("coro", 0ms, "ok");
        BOOST_REQUIRE(f.wait([&] { return w.stats().acked == 1; }));
        BOOST_TEST(w.stats().succeeded == 1u);
        BOOST_TEST(f.status("coro").state == dq::task_state::finished);
        BOOST_TEST(f.stop(w) == error_code());
    }
    // A job dropped without a report is a retry with the error "abandoned".
    {
        dq::worker w(*f.store, options(), [&](dq::job j) {
            BOOST_TEST(j.valid());
            dq::job moved = std::move(j);
            BOOST_TEST(!j.valid());
        });
        w.start();
        f.submit("dropped", 0ms, "p", {1, 10ms, 10ms});
        BOOST_REQUIRE(f.wait([&] { return w.stats().acked == 1; }));
        BOOST_TEST(w.stats().abandoned == 1u);
        BOOST_TEST(f.status("dropped").state == dq::task_state::dead);
        BOOST_TEST(f.status("dropped").last_error == "abandoned");
        BOOST_TEST(f.stop(w) == error_code());
    }
}

BOOST_AUTO_TEST_CASE(tasks_due_while_no_worker_ran_all_run_when_one_starts) {
    fixture f;
    const auto now = f.now();
    constexpr int n = 300;
    for (int i = 0; i < n; ++i) {
        f.submit("past" + std::to_string(i), now - dq::duration(1 + i * 37));
    }
    std::set<std::string> ran;
    dq::worker w(*f.store, options(), [&](const dq::job& j) {
        ran.insert(j.id());
        return dq::outcome::success();
    });
    w.start();
    BOOST_REQUIRE(f.wait([&] { return w.stats().acked == n; }));
    BOOST_TEST(ran.size() == std::size_t(n));
    BOOST_TEST(w.stats().started == std::uint64_t(n));
    // Already due at the claim: the claim itself started some (no start call for them).
    BOOST_TEST(w.stats().started_by_claim > 0u);
    BOOST_TEST(f.stop(w) == error_code());
}

BOOST_AUTO_TEST_CASE(a_handler_longer_than_the_lease_keeps_it_through_renewals) {
    fixture f;
    auto o = options();
    o.claim.lease = 300ms;
    int calls = 0;
    std::vector<std::unique_ptr<timewheel::wheel_timer>> timers;
    auto slow = [&](dq::job j) {
        ++calls;
        timers.push_back(std::make_unique<timewheel::wheel_timer>(f.io, 1500ms));
        timers.back()->async_wait([j = std::move(j)](error_code) mutable { j.succeed(); });
    };
    dq::worker a(*f.store, o, slow);
    o.claim.worker = "w2";
    dq::worker b(*f.store, o, slow); // would take it over if the lease ran out
    a.start();
    b.start();
    f.submit("long", 0ms);
    BOOST_REQUIRE(f.wait([&] { return a.stats().acked + b.stats().acked == 1; }));
    timewheel::test::run_for(f.io, 500ms);
    BOOST_TEST(calls == 1);
    BOOST_TEST(a.stats().renewals + b.stats().renewals >= 3u);
    BOOST_TEST(a.stats().ack_stale + b.stats().ack_stale == 0u);
    BOOST_TEST(a.stats().renew_stale + b.stats().renew_stale == 0u);
    const auto st = f.status("long");
    BOOST_TEST(st.state == dq::task_state::finished);
    BOOST_TEST(st.attempt == 1u);
    BOOST_TEST(f.stop(a) == error_code());
    BOOST_TEST(f.stop(b) == error_code());
}

BOOST_AUTO_TEST_CASE(the_concurrency_limit_is_never_exceeded) {
    fixture f;
    auto o = options();
    o.concurrency = 3;
    std::size_t running = 0, most = 0, done = 0;
    std::vector<std::unique_ptr<timewheel::wheel_timer>> timers;
    dq::worker w(*f.store, o, [&](dq::job j) {
        most = std::max(most, ++running);
        timers.push_back(std::make_unique<timewheel::wheel_timer>(f.io, 20ms));
        timers.back()->async_wait([&, j = std::move(j)](error_code) mutable {
            --running;
            ++done;
            j.succeed();
        });
    });
    constexpr int n = 40;
    for (int i = 0; i < n; ++i) {
        f.submit("c" + std::to_string(i), 0ms);
    }
    w.start();
    BOOST_REQUIRE(f.wait([&] { return w.stats().acked == n; }));
    BOOST_TEST(done == std::size_t(n));
    BOOST_TEST(most == 3u);
    BOOST_TEST(w.stats().max_running == 3u);
    // Claims started due tasks too, within the limit (most == 3 above).
    BOOST_TEST(w.stats().started_by_claim >= 1u);
    BOOST_TEST(f.stop(w) == error_code());
}

// A backlog: claims come back full, so the worker keeps two in flight (the store runs the next
// while the worker handles the last); claims and start calls overlap (half the tasks are due
// later, prefetched); still every task runs once and never more than `concurrency` at once.
BOOST_AUTO_TEST_CASE(a_backlog_keeps_two_claims_in_flight_within_the_limits) {
    fixture f;
    lying_clock_store watched(*f.store, dq::duration(0));
    auto o = options();
    o.claim.batch = 8;
    o.concurrency = 5;
    std::map<std::string, int> runs;
    std::size_t running = 0, most = 0;
    std::vector<std::unique_ptr<timewheel::wheel_timer>> timers;
    dq::worker w(watched, o, [&](dq::job j) {
        ++runs[j.id()];
        most = std::max(most, ++running);
        timers.push_back(std::make_unique<timewheel::wheel_timer>(f.io, 2ms));
        timers.back()->async_wait([&, j = std::move(j)](error_code) mutable {
            --running;
            j.succeed();
        });
    });
    constexpr int n = 200;
    for (int i = 0; i < n; ++i) {
        f.submit("b" + std::to_string(i), i % 2 ? 0ms : std::chrono::milliseconds(i));
    }
    w.start();
    BOOST_REQUIRE(f.wait([&] { return w.stats().acked == n; }));
    BOOST_TEST(runs.size() == std::size_t(n));
    BOOST_TEST(std::all_of(runs.begin(), runs.end(), [](const auto& r) { return r.second == 1; }));
    BOOST_TEST(most <= 5u);
    BOOST_TEST(w.stats().max_running <= 5u);
    BOOST_TEST(watched.most_claims_in_flight_ == 2u);
    BOOST_TEST(f.stop(w) == error_code());
}

BOOST_AUTO_TEST_CASE(a_graceful_stop_releases_prefetched_tasks_and_waits_for_running_ones) {
    fixture f;
    auto o = options();
    o.claim.horizon = 10s;
    std::vector<std::string> ran_a;
    std::optional<dq::job> held;
    dq::worker a(*f.store, o, [&](dq::job j) {
        ran_a.push_back(j.id());
        held = std::move(j);
    });
    f.submit("running", 0ms);
    for (int i = 0; i < 5; ++i) {
        f.submit("later" + std::to_string(i), 2s);
    }
    a.start();
    BOOST_REQUIRE(f.wait([&] { return held.has_value() && a.stats().claimed == 6; }));
    std::optional<error_code> stopped;
    bool reported_before_stop = false;
    a.async_stop(std::chrono::steady_clock::now() + 20s, [&](error_code ec) { stopped = ec; });
    BOOST_REQUIRE(f.wait([&] { return a.stats().released == 5; }));
    timewheel::test::run_for(f.io, 200ms);
    BOOST_TEST(!stopped.has_value()); // waits for the running one
    timewheel::wheel_timer later(f.io, 300ms);
    later.async_wait([&](error_code) {
        reported_before_stop = !stopped.has_value();
        held->succeed();
    });
    BOOST_REQUIRE(f.wait([&] { return stopped.has_value(); }));
    BOOST_TEST(*stopped == error_code());
    BOOST_TEST(reported_before_stop);
    BOOST_TEST(a.stats().acked == 1u); // the ack was flushed before the stop completed
    BOOST_TEST(f.status("later0").state == dq::task_state::delayed);

    // A second worker runs the released ones, at their due time.
    std::vector<run> runs;
    const dq::worker* wp = nullptr;
    o.claim.worker = "w2";
    dq::worker b(*f.store, o, recording_handler(*f.store, runs, &wp));
    wp = &b;
    b.start();
    BOOST_REQUIRE(f.wait([&] { return b.stats().acked == 5; }));
    BOOST_TEST(ran_a.size() == 1u);
    for (auto& r : runs) {
        BOOST_TEST(r.attempt == 1u); // a release does not count an attempt
        BOOST_TEST((r.store_time >= r.due));
    }
    BOOST_TEST(f.stop(b) == error_code());
}

BOOST_AUTO_TEST_CASE(a_stop_whose_deadline_passes_says_timed_out) {
    fixture f;
    std::optional<dq::job> held;
    dq::worker w(*f.store, options(), [&](dq::job j) { held = std::move(j); });
    w.start();
    f.submit("stuck", 0ms);
    BOOST_REQUIRE(f.wait([&] { return held.has_value(); }));
    BOOST_TEST(f.stop(w, 200ms) == error_code(boost::asio::error::timed_out));
    std::optional<error_code> again;
    w.async_stop(std::chrono::steady_clock::now(), [&](error_code ec) { again = ec; });
    BOOST_REQUIRE(f.wait([&] { return again.has_value(); }));
    BOOST_TEST(*again == error_code(boost::asio::error::in_progress));
    held->succeed(); // a late report is still acknowledged
    BOOST_REQUIRE(f.wait([&] { return w.stats().acked == 1; }));
    BOOST_TEST(f.status("stuck").state == dq::task_state::finished);
}

BOOST_AUTO_TEST_CASE(a_worker_destroyed_with_a_job_out_leaves_the_lease_to_run_out) {
    fixture f;
    std::optional<dq::job> held;
    {
        auto o = options();
        o.claim.lease = 500ms;
        dq::worker w(*f.store, o, [&](dq::job j) { held = std::move(j); });
        w.start();
        f.submit("orphan", 0ms, "p", {2, 10ms, 10ms});
        BOOST_REQUIRE(f.wait([&] { return held.has_value(); }));
    }
    BOOST_TEST(held->id() == "orphan");
    held->succeed(); // the worker is gone: nothing is sent, nothing breaks
    BOOST_TEST(!held->valid());
    timewheel::test::run_for(f.io, 100ms);
    BOOST_TEST(f.status("orphan").state == dq::task_state::running);
    // Its lease runs out, and the next worker runs it again (attempt 2).
    std::vector<std::uint32_t> attempts;
    dq::worker w2(*f.store, options("w2"), [&](const dq::job& j) {
        attempts.push_back(j.attempt());
        return dq::outcome::success();
    });
    w2.start();
    BOOST_REQUIRE(f.wait([&] { return w2.stats().acked == 1; }));
    BOOST_TEST(attempts == std::vector<std::uint32_t>{2}, boost::test_tools::per_element());
    BOOST_TEST(f.status("orphan").state == dq::task_state::finished);
    BOOST_TEST(f.stop(w2) == error_code());
}

BOOST_AUTO_TEST_CASE(a_clock_sample_that_lies_cannot_make_a_task_start_early) {
    fixture f;
    // The claims say the store's clock is 30 s ahead: the worker fires 30 s early, and the
    // store's start refuses until the real due time.
    lying_clock_store liar(*f.store, 30s);
    std::vector<run> runs;
    const dq::worker* wp = nullptr;
    // A horizon longer than the delay: the task is claimed (prefetched) well before its due
    // time, so its start goes through start() (a claim only starts tasks already due).
    auto o = options();
    o.claim.horizon = 5s;
    dq::worker w(liar, o, recording_handler(*f.store, runs, &wp));
    wp = &w;
    w.start();
    f.submit("skewed", 2s);
    BOOST_REQUIRE(f.wait([&] { return w.stats().acked == 1; }));
    BOOST_REQUIRE_EQUAL(runs.size(), 1u);
    BOOST_TEST((runs[0].store_time >= runs[0].due), "started before its due time");
    BOOST_TEST(w.stats().too_early >= 1u);
    BOOST_TEST(liar.too_early_ == w.stats().too_early);
    BOOST_TEST(f.stop(w) == error_code());
}

BOOST_AUTO_TEST_CASE(a_redis_restart_under_the_worker_is_survived) {
    redis_server srv({.args = {"--appendonly", "yes", "--appendfsync", "always"}});
    fixture f(srv, 500ms); // so that operations fail while it is down
    std::set<std::string> ran;
    auto o = options();
    o.backoff_max = 300ms;
    dq::worker w(*f.store, o, [&](const dq::job& j) {
        ran.insert(j.id());
        return dq::outcome::success();
    });
    w.start();
    f.submit("before", 0ms);
    f.submit("across", 1500ms); // due while Redis is down
    BOOST_REQUIRE(f.wait([&] { return ran.count("before") == 1; }));
    srv.kill9();
    BOOST_REQUIRE(f.wait([&] { return w.stats().store_errors >= 3; }));
    const auto claims = w.stats().claims;
    srv.start();
    BOOST_REQUIRE(f.wait([&] { return ran.count("across") == 1; }, 60s));
    f.submit("after", 0ms);
    BOOST_REQUIRE(f.wait([&] { return ran.count("after") == 1; }, 60s));
    BOOST_REQUIRE(f.wait([&] { return f.status("after").state == dq::task_state::finished; }));
    BOOST_TEST(w.stats().claims > claims);
    BOOST_TEST(f.stop(w) == error_code());
}

// Redis loses the store's functions (FUNCTION FLUSH, as a restart without persistence or a
// failover to a node without them would) while the worker claims, starts and acknowledges:
// the calls that find them gone load them again and are resent, no operation fails, and
// every task runs once.
BOOST_AUTO_TEST_CASE(a_function_flush_under_the_worker_is_survived) {
    fixture f;
    std::map<std::string, int> ran;
    dq::worker w(*f.store, options(), [&](const dq::job& j) {
        ++ran[j.id()];
        return dq::outcome::success();
    });
    w.start();
    constexpr int n = 300;
    for (int i = 0; i < n; ++i) {
        f.submit("t" + std::to_string(i), std::chrono::milliseconds(i * 5)); // over 1.5 s
    }
    for (int flushes = 0; flushes < 3; ++flushes) {
        BOOST_REQUIRE(f.wait([&] { return ran.size() >= std::size_t(50 + 80 * flushes); }));
        server().command(resp_command({"FUNCTION", "FLUSH"}));
    }
    f.submit("after", 0ms); // a producer's call after the flush loads them too
    BOOST_REQUIRE(f.wait([&] { return w.stats().acked == n + 1; }, 60s));
    BOOST_TEST(ran.size() == std::size_t(n + 1));
    BOOST_TEST(std::all_of(ran.begin(), ran.end(), [](const auto& r) { return r.second == 1; }));
    BOOST_TEST(w.stats().store_errors == 0u);
    BOOST_TEST(f.status("t299").state == dq::task_state::finished);
    BOOST_TEST(f.stop(w) == error_code());
}

BOOST_AUTO_TEST_CASE(allocations_per_task_after_warm_up) {
    fixture f;
    auto o = options();
    dq::worker w(*f.store, o, [](const dq::job&) { return dq::outcome::success(); });
    w.start();
    auto batch = [&](int from, int n) {
        const auto due = f.now() + 300ms;
        for (int i = from; i < from + n; ++i) {
            f.submit("a" + std::to_string(i), due);
        }
        const auto target = w.stats().acked + std::uint64_t(n);
        BOOST_REQUIRE(f.wait([&] { return w.stats().acked == target; }));
    };
    batch(0, 200); // warm-up
    // Submit first (the producer's allocations are not the worker's), then count from the
    // first claim to the last ack.
    const auto due = f.now() + 500ms;
    constexpr int n = 200;
    for (int i = 0; i < n; ++i) {
        f.submit("b" + std::to_string(i), due);
    }
    timewheel::test::allocation_counter counter;
    BOOST_REQUIRE(f.wait([&] { return w.stats().acked == 200u + n; }));
    const double per_task = double(counter.count()) / n;
    BOOST_TEST_MESSAGE("allocations per task (worker and Redis store, claim to ack): " << per_task);
    BOOST_TEST(per_task < 40.0); // a regression guard, not the figure itself
    BOOST_TEST(f.stop(w) == error_code());
}

BOOST_AUTO_TEST_SUITE_END()
