#define BOOST_TEST_MODULE repeating_task
#include <timewheel/repeating_task.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
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

struct recorded {
    tw::repeat_run run;
    std::uint64_t wakeup; // the service's wakeup count: equal for runs of one wheel pass
};

tw::wheel_service& service_of(net::io_context& io) {
    return net::use_service<tw::wheel_service>(io);
}

// The rule each policy follows, written independently of the library.
clock_type::time_point expected_next(tw::missed_tick_policy policy, const tw::repeat_run& run,
                                     clock_type::duration interval) {
    const auto on_time = run.scheduled + interval;
    if (run.started < on_time) {
        return on_time;
    }
    switch (policy) {
    case tw::missed_tick_policy::burst:
        return on_time;
    case tw::missed_tick_policy::delay:
        return run.started + interval;
    case tw::missed_tick_policy::skip:
        break;
    }
    auto next = on_time;
    while (next <= run.started) {
        next += interval;
    }
    return next;
}

} // namespace

BOOST_AUTO_TEST_CASE(runs_exactly_count_times_in_phase_never_early) {
    net::io_context io;
    std::vector<tw::repeat_run> runs;
    const auto first = clock_type::now() + 5ms;
    auto task =
        tw::repeat_at(io, first, 3ms, [&](const tw::repeat_run& run) { runs.push_back(run); },
                      {.count = 5, .missed = tw::missed_tick_policy::burst});
    BOOST_TEST(task.active());
    BOOST_TEST((task.next_run() == first));
    BOOST_TEST((task.interval() == 3ms));
    io.run(); // returns once the last run is done: nothing is left armed
    BOOST_REQUIRE_EQUAL(runs.size(), 5u);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        BOOST_TEST(runs[i].index == i);
        BOOST_TEST((runs[i].scheduled == first + static_cast<int>(i) * 3ms));
        BOOST_TEST((runs[i].started >= runs[i].scheduled));
    }
    BOOST_TEST(task.runs() == 5u);
    BOOST_TEST(!task.active());
    BOOST_TEST(!task.next_run().has_value());
    BOOST_TEST(!task.cancel());
    BOOST_TEST(service_of(io).size() == 0u);
}

BOOST_AUTO_TEST_CASE(forever_until_cancelled_from_inside) {
    net::io_context io;
    int runs = 0;
    tw::repeating_task task;
    bool cancelled = false;
    task = tw::repeat_every(io, 1ms, [&] {
        if (++runs == 10) {
            cancelled = task.cancel();
            BOOST_TEST(!task.active());
        }
    });
    io.run();
    BOOST_TEST(runs == 10);
    BOOST_TEST(cancelled);
    BOOST_TEST(task.runs() == 10u);
    BOOST_TEST(!task.cancel()); // twice: nothing
}

BOOST_AUTO_TEST_CASE(forever_until_cancelled_from_another_task) {
    net::io_context io;
    int runs = 0;
    int runs_at_cancel = -1;
    auto forever = tw::repeat_every(io, 1ms, [&] { ++runs; });
    auto stopper = tw::repeat_after(io, 30ms, 1s,
                                    [&] {
                                        runs_at_cancel = runs;
                                        BOOST_TEST(forever.cancel());
                                    },
                                    {.count = 1});
    io.run();
    BOOST_TEST(runs_at_cancel > 0);
    BOOST_TEST(runs == runs_at_cancel);
    BOOST_TEST(!forever.active());
    BOOST_TEST(!stopper.active());
}

BOOST_AUTO_TEST_CASE(destroying_the_handle_cancels) {
    net::io_context io;
    int runs = 0;
    {
        auto task = tw::repeat_after(io, 0ms, 1ms, [&] { ++runs; });
        BOOST_TEST(service_of(io).size() == 1u);
    }
    BOOST_TEST(service_of(io).size() == 0u);
    io.run();
    BOOST_TEST(runs == 0);
}

BOOST_AUTO_TEST_CASE(handle_destroyed_inside_its_own_run) {
    net::io_context io;
    int runs = 0;
    std::optional<tw::repeating_task> task;
    task.emplace(tw::repeat_every(io, 1ms, [&] {
        if (++runs == 3) {
            task.reset(); // the state outlives this call; it is freed when the run returns
        }
    }));
    io.run();
    BOOST_TEST(runs == 3);
    BOOST_TEST(service_of(io).size() == 0u);
}

BOOST_AUTO_TEST_CASE(moving_the_handle_moves_the_task) {
    net::io_context io;
    int a = 0;
    int b = 0;
    auto first = tw::repeat_every(io, 1ms, [&] { ++a; }, {.count = 3});
    tw::repeating_task second = std::move(first);
    BOOST_TEST(!first.valid()); // NOLINT(bugprone-use-after-move): a moved-from handle is empty
    BOOST_TEST(!first.cancel());
    BOOST_TEST(second.active());
    auto other = tw::repeat_every(io, 1ms, [&] { ++b; }, {.count = 3});
    other = std::move(second); // cancels other's own task
    io.run();
    BOOST_TEST(a == 3);
    BOOST_TEST(b == 0);
    BOOST_TEST(other.runs() == 3u);
}

BOOST_AUTO_TEST_CASE(detached_task_runs_to_its_count_and_frees_itself) {
    net::io_context io;
    auto token = std::make_shared<int>(0);
    int runs = 0;
    auto task = tw::repeat_every(io, 1ms, [&runs, token] { ++runs; }, {.count = 3});
    task.detach();
    BOOST_TEST(!task.valid());
    BOOST_TEST(token.use_count() == 2);
    io.run();
    BOOST_TEST(runs == 3);
    BOOST_TEST(token.use_count() == 1); // the callable was destroyed with the task
}

BOOST_AUTO_TEST_CASE(detached_forever_task_is_freed_at_shutdown) {
    auto token = std::make_shared<int>(0);
    int runs = 0;
    {
        net::io_context io;
        tw::repeat_every(io, 1ms, [&runs, token] { ++runs; }).detach();
        io.run_for(20ms);
        BOOST_TEST(token.use_count() == 2);
    } // shutdown: the task frees itself without running
    BOOST_TEST(runs > 0);
    BOOST_TEST(token.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(handle_may_outlive_its_io_context) {
    auto token = std::make_shared<int>(0);
    tw::repeating_task task;
    {
        net::io_context io;
        task = tw::repeat_every(io, 1h, [token] {});
        BOOST_TEST(task.active());
    }
    BOOST_TEST(task.valid());
    BOOST_TEST(!task.active());
    BOOST_TEST(!task.cancel()); // does not touch the destroyed io_context
    task = tw::repeating_task();
    BOOST_TEST(token.use_count() == 1);
}

BOOST_AUTO_TEST_CASE(first_run_in_the_past_is_due_now_but_not_inline) {
    net::io_context io;
    std::vector<tw::repeat_run> runs;
    auto task =
        tw::repeat_at(io, clock_type::now() - 1s, 1h,
                      [&](const tw::repeat_run& run) { runs.push_back(run); }, {.count = 1});
    BOOST_TEST(runs.empty());
    io.run();
    BOOST_TEST(runs.size() == 1u);
}

BOOST_AUTO_TEST_CASE(bad_arguments_are_named_and_schedule_nothing) {
    net::io_context io;
    const auto names = [](const char* argument) {
        return [argument](const std::invalid_argument& e) {
            return std::string(e.what()).find(argument) != std::string::npos;
        };
    };
    int runs = 0;
    const auto f = [&] { ++runs; };
    BOOST_CHECK_EXCEPTION((void)tw::repeat_every(io, 0ms, f), std::invalid_argument,
                          names("interval"));
    BOOST_CHECK_EXCEPTION((void)tw::repeat_after(io, 1ms, -5ms, f), std::invalid_argument,
                          names("interval"));
    BOOST_CHECK_EXCEPTION((void)tw::repeat_at(io, clock_type::now(), -1ns, f),
                          std::invalid_argument, names("interval"));
    BOOST_CHECK_EXCEPTION((void)tw::repeat_every(io, 1ms, f, {.count = 0}), std::invalid_argument,
                          names("count"));
    BOOST_CHECK_EXCEPTION((void)tw::repeat_every(io, 1ms, f, {.slack = -1ms}),
                          std::invalid_argument, names("slack"));
    BOOST_TEST(service_of(io).size() == 0u);
    io.run();
    BOOST_TEST(runs == 0);
}

BOOST_AUTO_TEST_CASE(throwing_callable_ends_the_task) {
    net::io_context io;
    int runs = 0;
    auto task = tw::repeat_every(io, 1ms, [&] {
        ++runs;
        throw std::runtime_error("boom");
    });
    auto token = std::make_shared<int>(0);
    tw::repeat_every(io, 1ms, [token] { throw std::runtime_error("detached"); }).detach();
    BOOST_CHECK_THROW(io.run(), std::runtime_error);
    io.restart();
    BOOST_CHECK_THROW(io.run(), std::runtime_error);
    io.restart();
    io.run();
    BOOST_TEST(runs == 1);
    BOOST_TEST(!task.active());
    BOOST_TEST(token.use_count() == 1); // the detached one freed itself
    BOOST_TEST(service_of(io).size() == 0u);
}

BOOST_AUTO_TEST_CASE(executor_and_slack) {
    net::io_context io;
    std::vector<tw::repeat_run> runs;
    auto task = tw::repeat_every(io.get_executor(), 2ms,
                                 [&](const tw::repeat_run& run) { runs.push_back(run); },
                                 {.count = 3, .slack = 5ms});
    io.run();
    BOOST_REQUIRE_EQUAL(runs.size(), 3u);
    for (const auto& run : runs) {
        BOOST_TEST((run.started >= run.scheduled));
    }
}

// --- Missed ticks: the io thread is blocked past four due times, deterministically ---------

namespace {

struct stall_result {
    std::vector<recorded> runs;
    clock_type::time_point first;
    clock_type::time_point unblocked;
};

constexpr auto stall_interval = 40ms;

// Runs due at first, first + 40 ms, ... The io thread is blocked until first + 150 ms, so the
// runs due at first .. first + 120 ms (four) come due during the stall.
stall_result run_with_stall(tw::missed_tick_policy policy) {
    net::io_context io;
    stall_result result;
    result.first = clock_type::now() + 100ms; // the blocker surely starts before
    auto task = tw::repeat_at(io, result.first, stall_interval,
                              [&](const tw::repeat_run& run) {
                                  result.runs.push_back({run, service_of(io).wakeups()});
                              },
                              {.count = 8, .missed = policy});
    net::post(io, [&] {
        std::this_thread::sleep_until(result.first + 150ms);
        result.unblocked = clock_type::now();
    });
    io.run();
    return result;
}

void check_rule_and_never_early(const stall_result& r, tw::missed_tick_policy policy) {
    BOOST_REQUIRE_EQUAL(r.runs.size(), 8u);
    BOOST_TEST((r.runs[0].run.scheduled == r.first));
    for (std::size_t i = 0; i < r.runs.size(); ++i) {
        BOOST_TEST(r.runs[i].run.index == i);
        BOOST_TEST((r.runs[i].run.started >= r.runs[i].run.scheduled));
        if (i > 0) {
            BOOST_TEST((r.runs[i].run.scheduled ==
                        expected_next(policy, r.runs[i - 1].run, stall_interval)));
        }
    }
    BOOST_TEST((r.runs[0].run.started >= r.unblocked)); // the first run was late
}

} // namespace

BOOST_AUTO_TEST_CASE(burst_runs_the_missed_runs_back_to_back) {
    const stall_result r = run_with_stall(tw::missed_tick_policy::burst);
    check_rule_and_never_early(r, tw::missed_tick_policy::burst);
    // Every run keeps its place in the schedule: none is dropped.
    for (std::size_t i = 0; i < r.runs.size(); ++i) {
        BOOST_TEST((r.runs[i].run.scheduled == r.first + static_cast<int>(i) * stall_interval));
    }
    // The four runs due during the stall ran late, in one pass of the wheel.
    for (std::size_t i = 0; i < 4; ++i) {
        BOOST_TEST((r.runs[i].run.started >= r.unblocked));
        BOOST_TEST(r.runs[i].wakeup == r.runs[0].wakeup);
    }
}

BOOST_AUTO_TEST_CASE(delay_restarts_the_schedule_from_the_late_run) {
    const stall_result r = run_with_stall(tw::missed_tick_policy::delay);
    check_rule_and_never_early(r, tw::missed_tick_policy::delay);
    BOOST_TEST((r.runs[1].run.scheduled == r.runs[0].run.started + stall_interval));
    BOOST_TEST(r.runs[1].wakeup != r.runs[0].wakeup); // no burst
}

BOOST_AUTO_TEST_CASE(skip_keeps_the_phase_and_drops_the_missed_runs) {
    const stall_result r = run_with_stall(tw::missed_tick_policy::skip);
    check_rule_and_never_early(r, tw::missed_tick_policy::skip);
    // One late run for the whole stall; the next is the first due time after it, in phase.
    BOOST_TEST((r.runs[1].run.scheduled > r.runs[0].run.started));
    BOOST_TEST((r.runs[1].run.scheduled >= r.first + 4 * stall_interval)); // three dropped
    for (const recorded& run : r.runs) {
        BOOST_TEST((run.run.scheduled - r.first) % stall_interval == clock_type::duration::zero());
    }
    BOOST_TEST(r.runs[1].wakeup != r.runs[0].wakeup);
}

// --- Spread --------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(spread_distributes_first_runs_across_the_interval) {
    net::io_context io;
    constexpr int tasks = 50;
    const clock_type::duration interval = 1s;
    const auto first = clock_type::now() + 1s;
    std::vector<tw::repeating_task> handles;
    std::vector<clock_type::duration> offsets;
    for (int i = 0; i < tasks; ++i) {
        handles.push_back(tw::repeat_at(io, first, interval, [] {}, {.spread = true}));
        offsets.push_back(*handles.back().next_run() - first);
    }
    std::sort(offsets.begin(), offsets.end());
    BOOST_TEST((offsets.front() >= clock_type::duration::zero()));
    BOOST_TEST((offsets.back() < interval));
    clock_type::duration widest = interval - offsets.back() + offsets.front(); // wrap-around gap
    for (std::size_t i = 1; i < offsets.size(); ++i) {
        BOOST_TEST((offsets[i] > offsets[i - 1])); // distinct
        widest = std::max(widest, offsets[i] - offsets[i - 1]);
    }
    BOOST_TEST((widest <= 2 * interval / tasks)); // even: the three-distance theorem gives 1.72
    // Without spread, tasks created together are due together.
    auto plain = tw::repeat_at(io, first, interval, [] {});
    BOOST_TEST((plain.next_run() == first));
}

BOOST_AUTO_TEST_CASE(spread_task_keeps_its_offset_as_its_phase) {
    net::io_context io;
    std::vector<tw::repeat_run> runs;
    const auto first = clock_type::now();
    auto task =
        tw::repeat_at(io, first, 10ms, [&](const tw::repeat_run& run) { runs.push_back(run); },
                      {.count = 3, .missed = tw::missed_tick_policy::burst, .spread = true});
    const auto due = *task.next_run();
    BOOST_TEST((due >= first));
    BOOST_TEST((due < first + 10ms));
    io.run();
    BOOST_REQUIRE_EQUAL(runs.size(), 3u);
    for (std::size_t i = 0; i < runs.size(); ++i) {
        BOOST_TEST((runs[i].scheduled == due + static_cast<int>(i) * 10ms));
        BOOST_TEST((runs[i].started >= runs[i].scheduled));
    }
}

BOOST_AUTO_TEST_CASE(runs_allocate_nothing) {
    net::io_context io;
    int runs = 0;
    std::size_t allocated = 0;
    timewheel::test::allocation_counter counter;
    tw::repeating_task task;
    task = tw::repeat_every(io, 1ms, [&] {
        ++runs;
        if (runs == 20) { // warm
            counter.reset();
        } else if (runs == 70) {
            allocated = counter.count();
            task.cancel();
        }
    });
    io.run();
    BOOST_TEST(runs == 70);
    BOOST_TEST(allocated == 0u);
}
