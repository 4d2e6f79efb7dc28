// Tests of callback_timer: fire once, periodic re-arm from its own callback, cancel,
// destroy while armed, reschedule, bad input, exceptions, executors, shutdown.

#define BOOST_TEST_MODULE callback_timer
#include <timewheel/callback_timer.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <test/support/fixtures.hpp>
#include <test/support/watchdog.hpp>

namespace net = boost::asio;
using namespace std::chrono_literals;
using timewheel::callback_timer;
using timewheel::wheel_service;
using clock_type = std::chrono::steady_clock;

namespace {

using timewheel::test::run;

// A callback that records when it ran.
struct recorder {
    int* calls;
    clock_type::time_point* at;
    void operator()() const {
        ++*calls;
        *at = clock_type::now();
    }
};

using timewheel::test::shutdown_context;

} // namespace

static_assert(!std::is_copy_constructible_v<callback_timer<recorder>>);
static_assert(!std::is_move_constructible_v<callback_timer<recorder>>);
static_assert(!std::is_move_assignable_v<callback_timer<recorder>>);

BOOST_AUTO_TEST_CASE(fires_once_never_early) {
    net::io_context io;
    int calls = 0;
    clock_type::time_point at{};
    callback_timer t(io, recorder{&calls, &at});
    BOOST_TEST(!t.armed());
    const auto expiry = clock_type::now() + 10ms;
    t.expires_at(expiry);
    BOOST_TEST(t.armed());
    BOOST_TEST(&t.service() == &net::use_service<wheel_service>(io));
    run(io);
    BOOST_TEST(calls == 1);
    BOOST_TEST((at >= expiry));
    BOOST_TEST(!t.armed());
    BOOST_TEST(t.service().size() == 0u);
}

BOOST_AUTO_TEST_CASE(zero_and_negative_delays_fire_on_the_next_run_not_inside_the_call) {
    net::io_context io;
    int calls = 0;
    clock_type::time_point at{};
    callback_timer t(io, recorder{&calls, &at});
    for (const auto delay :
         {clock_type::duration(0ms), clock_type::duration(-5ms), clock_type::duration::min()}) {
        t.expires_after(delay);
        BOOST_TEST(t.armed());
        const int before = calls;
        run(io);
        BOOST_TEST(calls == before + 1);
    }
    t.expires_at(clock_type::time_point::min());
    run(io);
    BOOST_TEST(calls == 4);
}

BOOST_AUTO_TEST_CASE(rearming_from_its_own_callback_makes_it_periodic) {
    net::io_context io;
    struct periodic {
        callback_timer<std::function<void()>>* self = nullptr;
        std::vector<clock_type::time_point> expiries;
        std::vector<clock_type::time_point> fired;
    } state;
    callback_timer<std::function<void()>> t(io, [&] {
        state.fired.push_back(clock_type::now());
        if (state.fired.size() < 5) {
            state.expiries.push_back(clock_type::now() + 3ms);
            state.self->expires_at(state.expiries.back());
        }
    });
    state.self = &t;
    state.expiries.push_back(clock_type::now() + 3ms);
    t.expires_at(state.expiries.back());
    run(io);
    BOOST_TEST_REQUIRE(state.fired.size() == 5u);
    for (std::size_t i = 0; i < 5; ++i) {
        BOOST_TEST((state.fired[i] >= state.expiries[i]));
    }
    BOOST_TEST(!t.armed());
}

BOOST_AUTO_TEST_CASE(the_callback_is_reachable_through_callback) {
    net::io_context io;
    struct counter {
        int n = 0;
        void operator()() { ++n; }
    };
    callback_timer<counter> t(io, counter{});
    t.expires_after(1ms);
    run(io);
    BOOST_TEST(t.callback().n == 1);
}

BOOST_AUTO_TEST_CASE(cancel_cancel_twice_and_run_returns) {
    net::io_context io;
    int calls = 0;
    clock_type::time_point at{};
    callback_timer t(io, recorder{&calls, &at});
    BOOST_TEST(!t.cancel()); // never armed
    t.expires_after(1h);
    BOOST_TEST(t.cancel());
    BOOST_TEST(!t.cancel());
    BOOST_TEST(!t.armed());
    run(io); // returns at once: the driver's wait for the hour is gone
    BOOST_TEST(calls == 0);

    t.expires_after(1h);
    net::post(io, [&] { BOOST_TEST(t.cancel()); });
    run(io);
    BOOST_TEST(calls == 0);
}

BOOST_AUTO_TEST_CASE(a_timer_destroyed_while_armed_never_fires) {
    net::io_context io;
    int calls = 0;
    clock_type::time_point at{};
    {
        callback_timer t(io, recorder{&calls, &at});
        t.expires_after(1ms);
    }
    BOOST_TEST(net::use_service<wheel_service>(io).size() == 0u);
    auto owned = std::make_unique<callback_timer<recorder>>(io, recorder{&calls, &at});
    owned->expires_after(0ms);
    callback_timer<std::function<void()>> killer(io, [&] { owned.reset(); });
    killer.expires_after(0ms); // armed after `owned`, due with it: fires after it
    run(io);
    BOOST_TEST(calls == 1); // `owned` fired before `killer` destroyed it
    BOOST_TEST(!owned);

    // A callback destroying a timer that is due in the same run: it never fires. (An
    // instant that has passed: both are due now, in arming order.)
    calls = 0;
    auto victim = std::make_unique<callback_timer<recorder>>(io, recorder{&calls, &at});
    callback_timer<std::function<void()>> first(io, [&] { victim.reset(); });
    const auto same = clock_type::now() - 1ms;
    first.expires_at(same);
    victim->expires_at(same);
    run(io);
    BOOST_TEST(calls == 0);
    BOOST_TEST(net::use_service<wheel_service>(io).size() == 0u);
}

BOOST_AUTO_TEST_CASE(reschedule_later_and_earlier) {
    net::io_context io;
    int calls = 0;
    clock_type::time_point at{};
    callback_timer t(io, recorder{&calls, &at});

    t.expires_after(5ms);
    const auto later = clock_type::now() + 40ms;
    BOOST_TEST(t.reschedule_at(later));
    run(io);
    BOOST_TEST(calls == 1);
    BOOST_TEST((at >= later));

    t.expires_after(1h);
    const auto before = clock_type::now();
    BOOST_TEST(t.reschedule_after(5ms));
    run(io); // returns: the earlier expiry re-armed the driver
    BOOST_TEST(calls == 2);
    BOOST_TEST((at >= before + 5ms));

    // Pushed back many times while the io_context runs: fires once, after the last.
    t.expires_after(1h);
    int pushes = 0;
    clock_type::time_point last{};
    callback_timer<std::function<void()>> pusher(io, [] {});
    pusher.callback() = [&] {
        BOOST_TEST(calls == 2);
        if (++pushes < 10) {
            BOOST_TEST(t.reschedule_after(1h));
            pusher.expires_after(1ms);
        } else {
            last = clock_type::now() + 5ms;
            BOOST_TEST(t.reschedule_at(last));
        }
    };
    pusher.expires_after(1ms);
    run(io);
    BOOST_TEST(pushes == 10);
    BOOST_TEST(calls == 3);
    BOOST_TEST((at >= last));
}

BOOST_AUTO_TEST_CASE(reschedule_returns_false_when_not_armed) {
    net::io_context io;
    int calls = 0;
    clock_type::time_point at{};
    callback_timer t(io, recorder{&calls, &at});
    BOOST_TEST(!t.reschedule_after(1ms)); // never armed
    BOOST_TEST(!t.armed());
    t.expires_after(1ms);
    run(io);
    BOOST_TEST(!t.reschedule_after(1ms)); // after it fired
    t.expires_after(1h);
    t.cancel();
    BOOST_TEST(!t.reschedule_at(clock_type::now())); // after cancel
    BOOST_TEST(!t.armed());
    run(io);
    BOOST_TEST(calls == 1);
}

BOOST_AUTO_TEST_CASE(rearming_an_armed_timer_restarts_it) {
    net::io_context io;
    int calls = 0;
    clock_type::time_point at{};
    callback_timer t(io, recorder{&calls, &at});
    t.expires_after(1ms);
    const auto later = clock_type::now() + 20ms;
    t.expires_at(later);
    BOOST_TEST(t.service().size() == 1u);
    run(io);
    BOOST_TEST(calls == 1);
    BOOST_TEST((at >= later));
}

BOOST_AUTO_TEST_CASE(negative_slack_throws_and_leaves_the_timer_as_it_was) {
    net::io_context io;
    int calls = 0;
    clock_type::time_point at{};
    callback_timer t(io, recorder{&calls, &at});
    try {
        t.expires_after(1ms, -1ms);
        BOOST_TEST(false, "negative slack must throw");
    } catch (const std::invalid_argument& e) {
        BOOST_TEST(std::string(e.what()).find("slack") != std::string::npos, e.what());
    }
    BOOST_TEST(!t.armed());
    t.expires_after(1h);
    BOOST_CHECK_THROW(t.expires_after(1ms, -1ns), std::invalid_argument);
    BOOST_TEST(t.armed()); // still armed for the hour
    BOOST_TEST(t.cancel());
    run(io);
    BOOST_TEST(calls == 0);
}

BOOST_AUTO_TEST_CASE(slack_never_fires_early) {
    net::io_context io;
    std::deque<callback_timer<recorder>> timers;
    std::vector<int> calls(40);
    std::vector<clock_type::time_point> at(40);
    std::vector<clock_type::time_point> expiry(40);
    for (std::size_t i = 0; i < 40; ++i) {
        expiry[i] = clock_type::now() + std::chrono::milliseconds(i * 2);
        timers.emplace_back(io, recorder{&calls[i], &at[i]})
            .expires_at(expiry[i], std::chrono::milliseconds(i * 3));
    }
    run(io);
    for (std::size_t i = 0; i < 40; ++i) {
        BOOST_TEST(calls[i] == 1);
        BOOST_TEST((at[i] >= expiry[i]), "timer " << i << " fired early");
    }
}

BOOST_AUTO_TEST_CASE(same_instant_fires_in_arming_order) {
    // A future instant (FIFO within its tick, if all were armed before it came), and one
    // that has passed (due now: FIFO).
    for (const auto offset : {clock_type::duration(20ms), clock_type::duration(-5ms)}) {
        net::io_context io;
        std::vector<int> order;
        std::deque<callback_timer<std::function<void()>>> timers;
        const auto at = clock_type::now() + offset;
        for (int i = 0; i < 20; ++i) {
            timers.emplace_back(io, [&order, i] { order.push_back(i); }).expires_at(at);
        }
        const bool armed_in_time = offset < 0ms || clock_type::now() < at;
        run(io);
        BOOST_TEST_REQUIRE(order.size() == 20u);
        if (!armed_in_time) {
            BOOST_TEST_MESSAGE("the instant passed while arming: order not checked");
            continue;
        }
        for (int i = 0; i < 20; ++i) {
            BOOST_TEST(order[i] == i);
        }
    }
}

BOOST_AUTO_TEST_CASE(a_throwing_callback_propagates_and_the_rest_fire_on_the_next_run) {
    net::io_context io;
    std::vector<int> fired;
    std::deque<callback_timer<std::function<void()>>> timers;
    const auto at = clock_type::now() - 1ms; // passed: all three due now, in arming order
    timers.emplace_back(io, [&] {
        fired.push_back(0);
        throw std::runtime_error("boom");
    });
    timers.emplace_back(io, [&] { fired.push_back(1); });
    timers.emplace_back(io, [&] { fired.push_back(2); });
    for (auto& t : timers) {
        t.expires_at(at);
    }
    BOOST_CHECK_THROW(io.run(), std::runtime_error);
    BOOST_TEST(fired == (std::vector<int>{0}));
    BOOST_TEST(timers[1].armed()); // still due, not lost
    BOOST_TEST(timers[2].armed());
    run(io);
    BOOST_TEST(fired == (std::vector<int>{0, 1, 2}));
    BOOST_TEST(net::use_service<wheel_service>(io).size() == 0u);

    // The wheel keeps working afterwards.
    timers[0].callback() = [&] { fired.push_back(3); };
    timers[0].expires_after(1ms);
    run(io);
    BOOST_TEST(fired.back() == 3);
}

BOOST_AUTO_TEST_CASE(constructed_from_executors) {
    net::io_context io;
    int calls = 0;
    clock_type::time_point at{};
    callback_timer from_executor(io.get_executor(), recorder{&calls, &at});
    callback_timer from_any(net::any_io_executor(io.get_executor()), recorder{&calls, &at});
    callback_timer from_strand(net::make_strand(io), recorder{&calls, &at});
    wheel_service& s = net::use_service<wheel_service>(io);
    BOOST_TEST(&from_executor.service() == &s);
    BOOST_TEST(&from_any.service() == &s);
    BOOST_TEST(&from_strand.service() == &s);
    from_executor.expires_after(1ms);
    from_any.expires_after(1ms);
    from_strand.expires_after(1ms);
    run(io);
    BOOST_TEST(calls == 3);
}

BOOST_AUTO_TEST_CASE(shutdown_disarms_without_calling) {
    bool called = false;
    shutdown_context io;
    auto flag = std::make_shared<int>(0);
    callback_timer armed(io, [&called, flag] { called = true; });
    callback_timer due(io, [&called, flag] { called = true; });
    armed.expires_after(1h);
    due.expires_after(0ms);
    io.shutdown();
    BOOST_TEST(!called);
    BOOST_TEST(!armed.armed());
    BOOST_TEST(!due.armed());
    BOOST_TEST(flag.use_count() == 3); // the callbacks are the timers': still alive
    BOOST_TEST(!armed.cancel());
}

BOOST_AUTO_TEST_CASE(io_context_destroyed_with_a_due_timer_after_its_timer) {
    // The supported order: the timer is destroyed before its io_context.
    bool called = false;
    auto io = std::make_unique<net::io_context>();
    {
        callback_timer t(*io, [&] { called = true; });
        t.expires_after(0ms);
    }
    io.reset();
    BOOST_TEST(!called);
}

BOOST_AUTO_TEST_CASE(an_empty_callback_is_rejected_at_construction) {
    net::io_context io;
    using function_timer = timewheel::callback_timer<std::function<void()>>;
    BOOST_CHECK_EXCEPTION(function_timer(io, std::function<void()>()), std::invalid_argument,
                          [](const std::invalid_argument& e) {
                              return std::string(e.what()).find("callback") != std::string::npos;
                          });
    using pointer_timer = timewheel::callback_timer<void (*)()>;
    BOOST_CHECK_THROW(pointer_timer(io, nullptr), std::invalid_argument);
    int calls = 0;
    function_timer ok(io, [&calls] { ++calls; });
    ok.expires_after(-1s);
    io.run();
    BOOST_TEST(calls == 1);
}
