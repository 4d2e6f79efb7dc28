#define BOOST_TEST_MODULE timer_registry
#include <timewheel/timer_registry.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <test/support/allocation_counter.hpp>

namespace {

namespace net = boost::asio;
namespace tw = timewheel;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using timer_id = tw::timer_registry::timer_id;

tw::wheel_service& service_of(net::io_context& io) {
    return net::use_service<tw::wheel_service>(io);
}

const auto names = [](const char* argument) {
    return [argument](const std::invalid_argument& e) {
        return std::string(e.what()).find(argument) != std::string::npos;
    };
};

} // namespace

BOOST_AUTO_TEST_CASE(one_shot_fires_once_never_early) {
    net::io_context io;
    tw::timer_registry timers(io);
    std::vector<clock_type::time_point> calls;
    const auto when = clock_type::now() + 10ms;
    const timer_id id = timers.add_timer(when, 0s, [&] { calls.push_back(clock_type::now()); });
    BOOST_TEST(id != 0u);
    BOOST_TEST(timers.size() == 1u);
    BOOST_TEST(timers.contains(id));
    BOOST_TEST(calls.empty());
    io.run();
    BOOST_REQUIRE_EQUAL(calls.size(), 1u);
    BOOST_TEST((calls[0] >= when));
    BOOST_TEST(timers.size() == 0u);
    BOOST_TEST(!timers.contains(id));
    BOOST_TEST(!timers.cancel(id));
}

BOOST_AUTO_TEST_CASE(one_shot_is_not_pending_inside_its_callback) {
    net::io_context io;
    tw::timer_registry timers(io);
    std::size_t size_inside = 99;
    bool cancelled_inside = true;
    timers.add_timer(1ms, 0s, [&](timer_id id) {
        size_inside = timers.size();
        cancelled_inside = timers.cancel(id);
    });
    io.run();
    BOOST_TEST(size_inside == 0u);
    BOOST_TEST(!cancelled_inside);
}

BOOST_AUTO_TEST_CASE(repeating_runs_until_it_cancels_itself) {
    net::io_context io;
    tw::timer_registry timers(io);
    int runs = 0;
    bool pending_inside = false;
    std::size_t size_inside = 0;
    const timer_id id = timers.add_timer(0ms, 2ms, [&](timer_id self) {
        pending_inside = timers.contains(self);
        size_inside = timers.size();
        if (++runs == 5) {
            BOOST_TEST(timers.cancel(self));
            BOOST_TEST(!timers.cancel(self)); // twice: nothing
            BOOST_TEST(timers.size() == 0u);
        }
    });
    io.run();
    BOOST_TEST(runs == 5);
    BOOST_TEST(pending_inside);
    BOOST_TEST(size_inside == 1u);
    BOOST_TEST(timers.size() == 0u);
    BOOST_TEST(!timers.cancel(id));
}

BOOST_AUTO_TEST_CASE(repeating_cancelled_by_another_timer) {
    net::io_context io;
    tw::timer_registry timers(io);
    int runs = 0;
    int runs_at_cancel = -1;
    const timer_id ticker = timers.add_timer(1ms, 1ms, [&] { ++runs; });
    timers.add_timer(30ms, 0s, [&] {
        runs_at_cancel = runs;
        BOOST_TEST(timers.cancel(ticker));
    });
    io.run();
    BOOST_TEST(runs_at_cancel > 0);
    BOOST_TEST(runs == runs_at_cancel);
}

BOOST_AUTO_TEST_CASE(cancel_before_expiry_and_unknown_ids) {
    net::io_context io;
    tw::timer_registry timers(io);
    int calls = 0;
    const timer_id a = timers.add_timer(5ms, 0s, [&] { ++calls; });
    const timer_id b = timers.add_timer(5ms, 5ms, [&] { ++calls; });
    BOOST_TEST(timers.size() == 2u);
    BOOST_TEST(timers.cancel(a));
    BOOST_TEST(timers.cancel(b));
    BOOST_TEST(!timers.cancel(a));
    BOOST_TEST(!timers.cancel(0));
    BOOST_TEST(!timers.cancel(12345));
    BOOST_TEST(timers.size() == 0u);
    io.run();
    BOOST_TEST(calls == 0);
}

BOOST_AUTO_TEST_CASE(ids_are_never_reused) {
    net::io_context io;
    tw::timer_registry timers(io);
    const timer_id a = timers.add_timer(1h, 0s, [] {});
    BOOST_TEST(timers.cancel(a));
    const timer_id b = timers.add_timer(1h, 0s, [] {});
    const timer_id c = timers.add_timer(1h, 0s, [] {});
    BOOST_TEST(a != 0u);
    BOOST_TEST(b > a);
    BOOST_TEST(c > b);
    BOOST_TEST(!timers.cancel(a));
    BOOST_TEST(timers.cancel_all() == 2u);
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_named_and_add_nothing) {
    net::io_context io;
    tw::timer_registry timers(io);
    const timer_id first = timers.add_timer(1h, 0s, [] {});
    BOOST_CHECK_EXCEPTION(timers.add_timer(1ms, -1ms, [] {}), std::invalid_argument,
                          names("interval"));
    BOOST_CHECK_EXCEPTION(timers.add_timer(1ms, 0s, std::function<void()>{}), std::invalid_argument,
                          names("callback"));
    void (*null_function)() = nullptr;
    BOOST_CHECK_EXCEPTION(timers.add_timer(clock_type::now(), 1s, null_function),
                          std::invalid_argument, names("callback"));
    BOOST_TEST(timers.size() == 1u);
    BOOST_TEST(service_of(io).size() == 1u);
    const timer_id next = timers.add_timer(1h, 0s, [] {});
    BOOST_TEST(next == first + 1); // the failed calls consumed no id
}

BOOST_AUTO_TEST_CASE(when_in_the_past_is_due_now_but_not_inline) {
    net::io_context io;
    tw::timer_registry timers(io);
    int calls = 0;
    timers.add_timer(clock_type::now() - 1h, 0s, [&] { ++calls; });
    BOOST_TEST(calls == 0);
    io.run();
    BOOST_TEST(calls == 1);
}

BOOST_AUTO_TEST_CASE(callbacks_may_add_timers) {
    net::io_context io;
    tw::timer_registry timers(io);
    std::vector<int> order;
    timers.add_timer(1ms, 0s, [&] {
        order.push_back(1);
        timers.add_timer(1ms, 0s, [&] { order.push_back(2); });
    });
    io.run();
    BOOST_TEST(order == std::vector<int>({1, 2}));
}

BOOST_AUTO_TEST_CASE(cancel_all_from_a_repeating_callback) {
    net::io_context io;
    tw::timer_registry timers(io);
    int runs = 0;
    std::size_t cancelled = 0;
    timers.add_timer(1h, 0s, [] {});
    timers.add_timer(1h, 1s, [] {});
    timers.add_timer(1ms, 1ms, [&] {
        ++runs;
        cancelled = timers.cancel_all();
    });
    io.run();
    BOOST_TEST(runs == 1);
    BOOST_TEST(cancelled == 3u);
    BOOST_TEST(timers.size() == 0u);
}

BOOST_AUTO_TEST_CASE(throwing_callback_ends_its_timer) {
    net::io_context io;
    tw::timer_registry timers(io);
    int runs = 0;
    const timer_id id = timers.add_timer(1ms, 1ms, [&] {
        ++runs;
        throw std::runtime_error("boom");
    });
    BOOST_CHECK_THROW(io.run(), std::runtime_error);
    BOOST_TEST(!timers.contains(id));
    BOOST_TEST(timers.size() == 0u);
    io.restart();
    io.run();
    BOOST_TEST(runs == 1);
}

BOOST_AUTO_TEST_CASE(destroying_the_registry_cancels_without_calling) {
    net::io_context io;
    int calls = 0;
    auto token = std::make_shared<int>(0);
    {
        tw::timer_registry timers(io.get_executor());
        timers.add_timer(1ms, 0s, [&calls, token] { ++calls; });
        timers.add_timer(1ms, 1ms, [&calls, token] { ++calls; });
        BOOST_TEST(service_of(io).size() == 2u);
    }
    BOOST_TEST(service_of(io).size() == 0u);
    BOOST_TEST(token.use_count() == 1);
    io.run();
    BOOST_TEST(calls == 0);
}

// --- Missed runs of a repeating timer: the io thread blocked past four due times ---------

namespace {

std::vector<std::uint64_t> wakeups_of_runs(tw::missed_tick_policy policy) {
    net::io_context io;
    tw::timer_registry timers(io, policy);
    BOOST_TEST((timers.missed() == policy));
    std::vector<std::uint64_t> wakeups;
    const auto first = clock_type::now() + 100ms;
    timers.add_timer(first, 40ms, [&](timer_id self) {
        wakeups.push_back(service_of(io).wakeups());
        if (wakeups.size() == 6) {
            timers.cancel(self);
        }
    });
    net::post(io, [&] { std::this_thread::sleep_until(first + 150ms); });
    io.run();
    return wakeups;
}

} // namespace

BOOST_AUTO_TEST_CASE(burst_runs_the_missed_runs_in_one_pass) {
    const auto wakeups = wakeups_of_runs(tw::missed_tick_policy::burst);
    BOOST_REQUIRE_EQUAL(wakeups.size(), 6u);
    for (std::size_t i = 1; i < 4; ++i) { // due at +0, +40, +80, +120 ms: all late
        BOOST_TEST(wakeups[i] == wakeups[0]);
    }
}

BOOST_AUTO_TEST_CASE(skip_runs_once_after_a_stall) {
    const auto wakeups = wakeups_of_runs(tw::missed_tick_policy::skip);
    BOOST_REQUIRE_EQUAL(wakeups.size(), 6u);
    for (std::size_t i = 1; i < wakeups.size(); ++i) {
        BOOST_TEST(wakeups[i] != wakeups[i - 1]);
    }
}

BOOST_AUTO_TEST_CASE(repeating_timers_allocate_nothing_per_run) {
    net::io_context io;
    tw::timer_registry timers(io);
    int runs = 0;
    int others = 0;
    std::size_t allocated = 0;
    std::size_t cancelled = 0;
    timewheel::test::allocation_counter counter;
    timers.add_timer(0ms, 1ms, [&] {
        ++runs;
        if (runs == 20) { // warm
            counter.reset();
        } else if (runs == 70) {
            allocated = counter.count();
            cancelled = timers.cancel_all();
        }
    });
    timers.add_timer(0ms, 1ms, [&] { ++others; }); // a second timer, recycling nodes too
    io.run();
    BOOST_TEST(runs == 70);
    BOOST_TEST(others >= 50);
    BOOST_TEST(cancelled == 2u);
    BOOST_TEST(allocated == 0u);
}
