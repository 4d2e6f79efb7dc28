// Tests of wheel_service: configuration, clock conversion, the tickless driver (wakeups),
// the budget, shutdown, the driver's state machine under a stale completion, and the debug
// check against use from two threads.

#define BOOST_TEST_MODULE wheel_service
#include <timewheel/wheel_service.hpp>

#include <boost/test/unit_test.hpp>

#include <timewheel/callback_timer.hpp>
#include <timewheel/wheel_timer.hpp>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

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
#include <vector>

#include <test/support/fixtures.hpp>
#include <test/support/watchdog.hpp>

namespace net = boost::asio;
using namespace std::chrono_literals;
using boost::system::error_code;
using timewheel::callback_timer;
using timewheel::wheel_service;
using timewheel::wheel_service_options;
using timewheel::wheel_timer;
using clock_type = std::chrono::steady_clock;

namespace {

using timewheel::test::run;

// Runs the io_context for a period even if it has no work.
void run_idle_for(net::io_context& io, std::chrono::milliseconds period) {
    io.restart();
    auto guard = net::make_work_guard(io);
    io.run_for(period);
}

using timewheel::test::mentions;
using timewheel::test::shutdown_context;

} // namespace

// --- The service as an Asio service ------------------------------------------------------

BOOST_AUTO_TEST_CASE(one_service_per_io_context_with_default_options) {
    net::io_context io1;
    net::io_context io2;
    wheel_service& s1 = net::use_service<wheel_service>(io1);
    BOOST_TEST(&s1 == &net::use_service<wheel_service>(io1));
    BOOST_TEST(&s1 != &net::use_service<wheel_service>(io2));
    BOOST_TEST(net::has_service<wheel_service>(io1));
    BOOST_TEST((s1.options().tick == std::chrono::nanoseconds(1ms)));
    BOOST_TEST(s1.options().levels == 6u);
    BOOST_TEST(s1.options().budget == 1024u);
    BOOST_TEST(s1.size() == 0u);
    BOOST_TEST(s1.wakeups() == 0u);
    BOOST_TEST(s1.get_wheel().empty());
}

// --- configure() -------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(configure_rejects_bad_settings_naming_them_and_keeps_the_old_ones) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    s.configure({.tick = 2ms, .levels = 4, .budget = 16});

    struct bad_case {
        wheel_service_options options;
        const char* names;
    };
    const std::vector<bad_case> cases = {
        {{.tick = 0ns}, "tick"},      {{.tick = -1ms}, "tick"},  {{.tick = 999ns}, "tick"},
        {{.tick = 1h + 1ns}, "tick"}, {{.budget = 0}, "budget"}, {{.levels = 0}, "levels"},
        {{.levels = 11}, "levels"},
    };
    for (const bad_case& c : cases) {
        try {
            s.configure(c.options);
            BOOST_TEST(false, "configure must throw for a bad " << c.names);
        } catch (const std::invalid_argument& e) {
            BOOST_TEST(mentions(e, c.names), e.what());
        }
        BOOST_TEST((s.options().tick == std::chrono::nanoseconds(2ms)));
        BOOST_TEST(s.options().levels == 4u);
        BOOST_TEST(s.options().budget == 16u);
        BOOST_TEST(s.get_wheel().levels() == 4u);
    }

    // The extremes of the ranges are accepted.
    s.configure({.tick = 1us, .levels = 1, .budget = 1});
    s.configure({.tick = 1h, .levels = 10});
    s.configure({});
    BOOST_TEST((s.options().tick == std::chrono::nanoseconds(1ms)));
}

BOOST_AUTO_TEST_CASE(configure_while_a_timer_is_armed_is_a_logic_error) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    int fired = 0;
    callback_timer armed(io, [&] { ++fired; });
    armed.expires_after(5ms);
    try {
        s.configure({.tick = 10ms});
        BOOST_TEST(false, "configure must throw while a timer is armed");
    } catch (const std::logic_error& e) {
        BOOST_TEST(!dynamic_cast<const std::invalid_argument*>(&e));
    }
    BOOST_TEST((s.options().tick == std::chrono::nanoseconds(1ms)));
    BOOST_TEST(armed.armed());
    BOOST_TEST(s.size() == 1u);
    run(io); // the armed timer still fires
    BOOST_TEST(fired == 1);

    wheel_timer waiting(io, 1h);
    waiting.async_wait([](error_code) {});
    BOOST_CHECK_THROW(s.configure({.budget = 5}), std::logic_error);
    BOOST_TEST(waiting.cancel() == 1u);
    s.configure({.budget = 5}); // fine once nothing is armed
    BOOST_TEST(s.options().budget == 5u);
    run(io);
}

BOOST_AUTO_TEST_CASE(configure_from_inside_an_expiry_callback_is_a_logic_error) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    bool threw = false;
    callback_timer t(io, [&] {
        // Nothing is armed any more, but the wheel is running this callback.
        try {
            s.configure({.tick = 5ms});
        } catch (const std::logic_error&) {
            threw = true;
        }
    });
    t.expires_after(1ms);
    run(io);
    BOOST_TEST(threw);
    BOOST_TEST((s.options().tick == std::chrono::nanoseconds(1ms)));
}

BOOST_AUTO_TEST_CASE(a_coarser_tick_still_never_fires_early) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    s.configure({.tick = 10ms});
    wheel_timer t(io, 15ms);
    clock_type::time_point at{};
    t.async_wait([&](error_code ec) {
        BOOST_TEST(!ec);
        at = clock_type::now();
    });
    const auto rounded = s.to_time(s.to_tick(t.expiry())); // up to a 10 ms boundary
    BOOST_TEST((rounded >= t.expiry() && rounded < t.expiry() + 10ms));
    run(io);
    BOOST_TEST((at >= t.expiry()));
}

// --- Clock conversion --------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(to_tick_rounds_up_and_to_time_inverts_it) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    const timewheel::tick_type now = s.current_tick();
    for (timewheel::tick_type k = now; k < now + 200; ++k) {
        const auto t = s.to_time(k);
        BOOST_TEST(s.to_tick(t) == k);
        BOOST_TEST(s.to_tick(t + 1ns) == k + 1); // never rounds down: never early
        BOOST_TEST(s.to_tick(t - 1ns) == k);
    }
    BOOST_TEST(s.to_tick(clock_type::time_point::min()) == 0u);
    BOOST_TEST(s.to_tick(clock_type::time_point()) == 0u);
    BOOST_TEST(s.to_tick(clock_type::time_point::max()) >
               s.to_tick(clock_type::now() + 24h * 365 * 100));
    BOOST_TEST((s.to_time(std::numeric_limits<timewheel::tick_type>::max()) ==
                clock_type::time_point::max()));
    BOOST_TEST(
        (s.to_time(s.to_tick(clock_type::time_point::max())) == clock_type::time_point::max()));
    BOOST_TEST((s.current_tick() >= now));

    // The same with the finest tick and the most levels, where to_time could overflow.
    s.configure({.tick = 1us, .levels = 10});
    BOOST_TEST(
        (s.to_time(s.to_tick(clock_type::time_point::max())) == clock_type::time_point::max()));
    BOOST_TEST(
        (s.to_time(s.to_tick(clock_type::time_point::max()) - 1) <= clock_type::time_point::max()));
    callback_timer far(io, [] {});
    far.expires_at(clock_type::time_point::max());
    BOOST_TEST(far.cancel());
}

// --- The driver: wakeups -----------------------------------------------------------------

BOOST_AUTO_TEST_CASE(an_idle_wheel_makes_no_wakeups) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    run_idle_for(io, 200ms);
    BOOST_TEST(s.wakeups() == 0u);
}

BOOST_AUTO_TEST_CASE(timers_an_hour_away_make_no_wakeups) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    wheel_timer t(io, 1h);
    t.async_wait([](error_code) {});
    callback_timer c(io, [] {});
    c.expires_after(1h + 1s);
    c.reschedule_after(2h); // later: lazy, no re-arm
    t.reschedule_after(3h);
    io.run_for(200ms); // the pending waits keep it running for the whole period
    BOOST_TEST(s.wakeups() == 0u);
    BOOST_TEST(s.size() == 2u);
    t.cancel();
    c.cancel();
    run(io);
}

BOOST_AUTO_TEST_CASE(timers_50ms_away_make_a_few_wakeups_not_one_per_tick) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    int fired = 0;
    std::function<void()> again;
    callback_timer periodic(io, [&] { again(); });
    again = [&] {
        if (++fired < 4) {
            periodic.expires_after(50ms);
        }
    };
    periodic.expires_after(50ms);
    std::deque<wheel_timer> waits;
    for (int i = 0; i < 10; ++i) {
        waits.emplace_back(io, 50ms).async_wait([](error_code ec) { BOOST_TEST(!ec); });
    }
    const auto start = clock_type::now();
    run(io);
    const auto ticks =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - start).count();
    BOOST_TEST(fired == 4);
    BOOST_TEST(s.wakeups() > 0u);
    BOOST_TEST(s.wakeups() <= 20u, "wakeups " << s.wakeups() << " over " << ticks << " ticks");
    BOOST_TEST(static_cast<long long>(s.wakeups()) * 4 < ticks);
}

BOOST_AUTO_TEST_CASE(cancelling_the_earliest_timer_does_not_stop_the_others) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    int fired = 0;
    callback_timer early(io, [&] { fired += 100; });
    callback_timer late(io, [&] { ++fired; });
    late.expires_after(20ms);
    early.expires_after(5ms);
    BOOST_TEST(early.cancel());
    run(io);
    BOOST_TEST(fired == 1);
    BOOST_TEST(s.size() == 0u);
}

// An arm earlier than every pending one must move the driver, in each state the driver can
// be in when it comes: waiting (behind 40 later arms, so a staged batch was filed first),
// running the wheel (from an expiry callback), and idle (the wheel's first arm). The later
// waits are 10 s away and each earlier one 20 ms: the bound of 5 s holds on a loaded
// machine, and fails if any of them waited for the driver's old time.
BOOST_AUTO_TEST_CASE(an_earlier_arm_moves_the_driver_when_it_waits_runs_or_is_idle) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    const auto start = clock_type::now();
    std::deque<wheel_timer> later;
    wheel_timer first(io); // armed while the wheel is idle
    first.expires_after(10s);
    first.async_wait([](error_code) {});
    for (int i = 0; i < 40; ++i) {
        later.emplace_back(io, 10s).async_wait([](error_code) {});
    }
    int fired = 0;
    clock_type::time_point from_callback_at{};
    callback_timer from_callback(io, [&] {
        from_callback_at = clock_type::now();
        first.cancel();
        for (wheel_timer& t : later) {
            t.cancel();
        }
    });
    wheel_timer earlier(io, 20ms); // armed while the driver waits for 10 s
    clock_type::time_point earlier_at{};
    callback_timer arming(io, [&] {
        ++fired;
        from_callback.expires_after(20ms); // armed while the driver runs the wheel
    });
    earlier.async_wait([&](error_code ec) {
        BOOST_TEST(!ec);
        earlier_at = clock_type::now();
        arming.expires_after(1ms);
    });
    BOOST_TEST(s.size() == 42u);
    run(io);
    BOOST_TEST(fired == 1);
    BOOST_TEST((earlier_at >= earlier.expiry()));
    BOOST_TEST((from_callback_at >= earlier_at + 20ms), "never early");
    BOOST_TEST((from_callback_at - start < 5s), "the driver kept waiting for the later timers");
    BOOST_TEST(s.size() == 0u);
}

// --- The budget --------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(a_budget_lets_other_handlers_run_between_batches) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    s.configure({.budget = 10});

    constexpr int n = 1000;
    int fired = 0;
    int fired_when_posted_ran = -1;
    bool posted = false;
    auto callback = [&] {
        if (fired++ == 0) {
            net::post(io, [&] { fired_when_posted_ran = fired; });
            posted = true;
        }
    };
    std::deque<callback_timer<decltype(callback)>> timers;
    const auto at = clock_type::now() + 5ms;
    for (int i = 0; i < n; ++i) {
        timers.emplace_back(io, callback).expires_at(at);
    }
    BOOST_TEST(s.size() == std::size_t{n});
    run(io);
    BOOST_TEST(fired == n);
    BOOST_TEST(posted);
    BOOST_TEST(fired_when_posted_ran > 0);
    BOOST_TEST(fired_when_posted_ran < n); // it ran before the last timer fired
    BOOST_TEST(s.wakeups() >= std::uint64_t{n / 10});
    BOOST_TEST(s.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_budget_of_one_with_wheel_timers) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    s.configure({.budget = 1});
    std::deque<wheel_timer> timers;
    int completed = 0;
    const auto at = clock_type::now() + 2ms;
    for (int i = 0; i < 100; ++i) {
        timers.emplace_back(io, at).async_wait([&](error_code ec) {
            BOOST_TEST(!ec);
            ++completed;
        });
    }
    run(io);
    BOOST_TEST(completed == 100);
    BOOST_TEST(s.wakeups() >= 100u);
}

// --- The driver's state machine ----------------------------------------------------------

// The reactor completes the driver's wait; before that completion runs, a handler moves
// the driver earlier (a new reactor wait). The old completion then runs the wheel (harmless)
// and, with a small budget, posts the continuation; the new wait completes while the
// continuation is queued. That must not post the continuation a second time (an op in an
// Asio queue twice drops the handlers queued behind it).
namespace {

void stale_driver_completion(clock_type::duration ago) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io); // its timer queue goes first
    s.configure({.budget = 1});

    int fired = 0;
    int posted_ran = 0;
    auto callback = [&] {
        ++fired;
        net::post(io, [&] { ++posted_ran; });
    };
    std::deque<callback_timer<decltype(callback)>> due;
    const auto at = clock_type::now() + 30ms;
    for (int i = 0; i < 8; ++i) {
        due.emplace_back(io, callback).expires_at(at);
    }
    BOOST_TEST_REQUIRE(s.get_wheel().next_expiry().has_value());
    const auto driver_time = s.to_time(*s.get_wheel().next_expiry());

    // A steady_timer for the same instant: the reactor completes it in the same pass as the
    // driver's wait, and before it (its service's queue was registered later).
    callback_timer<decltype(callback)> earlier(io, callback);
    net::steady_timer same_instant(io, driver_time);
    same_instant.async_wait([&](error_code ec) {
        BOOST_TEST(!ec);
        earlier.expires_at(clock_type::now() - ago); // moves the driver earlier
    });
    run(io, 10s);
    BOOST_TEST(fired == 9);
    BOOST_TEST(posted_ran == 9);
    BOOST_TEST(s.size() == 0u);
}

} // namespace

BOOST_AUTO_TEST_CASE(a_stale_driver_completion_while_a_continuation_is_queued) {
    // Moved earlier to a tick that has passed but is after the wheel's time (a new reactor
    // wait), or to long ago (due now: the continuation is posted at once).
    for (const auto ago : {clock_type::duration(10ms), clock_type::duration(1h)}) {
        BOOST_TEST_CONTEXT("moved to "
                           << std::chrono::duration_cast<std::chrono::milliseconds>(ago).count()
                           << " ms ago") {
            stale_driver_completion(ago);
        }
    }
}

BOOST_AUTO_TEST_CASE(arming_from_a_callback_for_the_same_instant_fires_in_the_same_run) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    std::vector<int> order;
    std::function<void()> second_cb = [&] { order.push_back(2); };
    callback_timer second(io, [&] { second_cb(); });
    callback_timer first(io, [&] {
        order.push_back(1);
        second.expires_after(0ms);
    });
    first.expires_after(1ms);
    run(io);
    BOOST_TEST(order == (std::vector<int>{1, 2}));
    BOOST_TEST(s.size() == 0u);
}

BOOST_AUTO_TEST_CASE(a_callback_may_poll_the_io_context_reentrantly) {
    net::io_context io;
    std::vector<int> order;
    callback_timer<std::function<void()>> second(io, [&] { order.push_back(2); });
    callback_timer<std::function<void()>> first(io, [&] {
        order.push_back(1);
        second.expires_after(0ms);
        net::post(io, [&] { order.push_back(10); });
        io.poll(); // runs the posted handler; the wheel is busy running this callback
        order.push_back(11);
    });
    first.expires_after(1ms);
    run(io);
    BOOST_TEST(order == (std::vector<int>{1, 10, 11, 2}));
}

BOOST_AUTO_TEST_CASE(works_with_a_single_threaded_concurrency_hint) {
    net::io_context io(1); // Asio then queues posts from its thread on a private queue
    wheel_service& s = net::use_service<wheel_service>(io);
    s.configure({.budget = 3});
    int fired = 0;
    int posted_ran_at = -1;
    auto callback = [&] {
        if (fired++ == 0) {
            net::post(io, [&] { posted_ran_at = fired; });
        }
    };
    std::deque<callback_timer<decltype(callback)>> timers;
    for (int i = 0; i < 30; ++i) {
        timers.emplace_back(io, callback).expires_after(i % 2 == 0 ? 0ms : 2ms);
    }
    wheel_timer t(io, 0ms);
    bool waited = false;
    t.async_wait([&](error_code ec) { waited = !ec; });
    run(io);
    BOOST_TEST(fired == 30);
    BOOST_TEST(waited);
    BOOST_TEST(posted_ran_at > 0);
    BOOST_TEST(posted_ran_at < 30);
}

BOOST_AUTO_TEST_CASE(size_counts_armed_entries) {
    net::io_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    wheel_timer t(io, 1h);
    t.async_wait([](error_code) {});
    t.async_wait([](error_code) {});
    callback_timer c(io, [] {});
    c.expires_after(1h);
    c.expires_after(2h); // re-arming is not a second entry
    BOOST_TEST(s.size() == 2u);
    BOOST_TEST(c.cancel());
    BOOST_TEST(!c.cancel());
    BOOST_TEST(s.size() == 1u);
    t.cancel();
    BOOST_TEST(s.size() == 0u);
    run(io);
}

// --- Shutdown ----------------------------------------------------------------------------

namespace {

using timewheel::test::set_on_destruction;

} // namespace

BOOST_AUTO_TEST_CASE(shutdown_disarms_callback_timers_without_calling_them) {
    bool called = false;
    bool handler_destroyed = false;
    bool handler_invoked = false;
    shutdown_context io;
    wheel_service& s = net::use_service<wheel_service>(io);
    callback_timer due_now(io, [&] { called = true; });
    callback_timer later(io, [&] { called = true; });
    due_now.expires_after(0ms);
    later.expires_after(1h);
    wheel_timer t(io, 1h);
    {
        auto guard = std::make_shared<set_on_destruction>(&handler_destroyed);
        t.async_wait([guard, &handler_invoked](error_code) { handler_invoked = true; });
    }
    io.shutdown();
    BOOST_TEST(!called);
    BOOST_TEST(!due_now.armed());
    BOOST_TEST(!later.armed());
    BOOST_TEST(handler_destroyed);
    BOOST_TEST(!handler_invoked);
    BOOST_TEST(s.size() == 0u);
    BOOST_TEST(!due_now.cancel());
    BOOST_TEST(t.cancel() == 0u);
}

BOOST_AUTO_TEST_CASE(destroying_the_io_context_with_a_budget_continuation_queued) {
    bool destroyed = false;
    int fired = 0;
    auto io = std::make_unique<net::io_context>();
    net::use_service<wheel_service>(*io).configure({.budget = 1});
    {
        auto t1 = std::make_shared<wheel_timer>(*io, 0ms);
        auto t2 = std::make_shared<wheel_timer>(*io, 0ms);
        auto guard = std::make_shared<set_on_destruction>(&destroyed);
        t1->async_wait([t1, guard, &fired](error_code) { ++fired; });
        t2->async_wait([t2, guard, &fired](error_code) { ++fired; });
    }
    io->run_one(); // at most one batch: one expiry, then the continuation is posted
    io.reset();
    BOOST_TEST(destroyed);
    BOOST_TEST(fired <= 1);
}

// --- Threads -----------------------------------------------------------------------------

namespace {

std::atomic<int> misuse_reports{0};

void count_misuse(const char*) {
    ++misuse_reports;
}

struct misuse_handler_scope {
    timewheel::thread_misuse_handler previous;
    misuse_handler_scope()
        : previous(timewheel::set_thread_misuse_handler(&count_misuse)) {
        misuse_reports = 0;
    }
    ~misuse_handler_scope() { timewheel::set_thread_misuse_handler(previous); }
};

} // namespace

#if TIMEWHEEL_THREAD_CHECKS

BOOST_AUTO_TEST_CASE(use_from_a_second_thread_while_the_wheel_runs_is_reported) {
    misuse_handler_scope scope;
    net::io_context io;
    callback_timer other(io, [] {});
    bool other_thread_done = false;
    bool other_was_armed = false;
    callback_timer running(io, [&] {
        // Inside the wheel's expiry loop: another thread arms a timer of the same wheel.
        std::thread intruder([&] { other.expires_after(1h); });
        intruder.join();
        other_thread_done = true;
        other_was_armed = other.cancel();
    });
    running.expires_after(1ms);
    BOOST_TEST(misuse_reports.load() == 0); // arming from this thread, not running: fine
    run(io);
    BOOST_TEST(other_thread_done);
    BOOST_TEST(other_was_armed);
    BOOST_TEST(misuse_reports.load() >= 1);
}

BOOST_AUTO_TEST_CASE(distinct_io_contexts_on_distinct_threads_are_not_reported) {
    misuse_handler_scope scope;
    constexpr int cycles = 3000;
    auto work = [&](net::io_context& io, int& count) {
        std::function<void()> again;
        callback_timer periodic(io, [&] { again(); });
        again = [&] {
            if (++count < cycles) {
                periodic.expires_after(0ms);
            }
        };
        wheel_timer waiter(io, 1ms);
        int waits = 0;
        std::function<void(error_code)> rewait = [&](error_code) {
            if (++waits < 200) {
                waiter.expires_after(0ms);
                waiter.async_wait(rewait);
            }
        };
        waiter.async_wait(rewait); // set up here, run by another thread: not an overlap
        periodic.expires_after(0ms);
        std::thread runner([&] { io.run(); });
        runner.join();
    };
    net::io_context io1;
    net::io_context io2;
    int count1 = 0;
    int count2 = 0;
    std::thread a([&] { work(io1, count1); });
    std::thread b([&] { work(io2, count2); });
    a.join();
    b.join();
    BOOST_TEST(count1 == cycles);
    BOOST_TEST(count2 == cycles);
    BOOST_TEST(misuse_reports.load() == 0);
}

#else

BOOST_AUTO_TEST_CASE(thread_checks_are_off_in_this_build) {
    misuse_handler_scope scope;
    BOOST_TEST_MESSAGE("TIMEWHEEL_THREAD_CHECKS is 0 (NDEBUG): the misuse tests run in Debug");
    BOOST_TEST(misuse_reports.load() == 0);
}

#endif
