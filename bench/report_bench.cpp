//
// bench/report_bench.cpp
//
// Driver wakeups of a real io_context over a bounded real period (a few seconds each), which
// the performance report needs besides time per operation. (Allocations are counted for the
// whole binary by the tests' counting operator new, test/support/counting_new.cpp; see
// support/op_clock.hpp.)
//
//
//   wheel_service/wakeups_idle/0                the wheel_service of an io_context with no
//   steady_timer/wakeups_idle/0                 timer (a work guard keeps run() going)
//   wheel_service/wakeups_due30s/1000000        1M timers all due 30 s after they are armed
//   steady_timer/wakeups_due30s/1000000         (callback_timer; steady_timer + async_wait)
//   wheel_service/wakeups_spread30s/1000000     1M timers due uniformly over the next 30 s:
//   steady_timer/wakeups_spread30s/1000000      about 33,000 fire every second
//   wheel_service/wakeups_spread30s_slack/1000000   the same, each accepting 1 s of lateness
//
//   Each runs io_context::run() on the benchmark thread for a window of 2 s (idle, due30s) or
//   3 s (spread30s, starting right after the timers were armed) until another thread calls
//   stop(). Counters, per second of the window:
//     wakeups_per_s   wheel_service::wakeups(): how often the service ran the wheel
//                     (wheel_service only);
//     switches_per_s  voluntary context switches of the running thread (getrusage
//                     RUSAGE_THREAD): each is one block in epoll_wait and one wakeup, for
//                     any implementation; the stop() at the end of the window adds one;
//     fired_per_s     timer callbacks run;
//     cpu_percent     CPU time of the running thread as a share of the window.
//     allocs_per_fire operator new calls per callback run (spread30s).
//

#include <timewheel/callback_timer.hpp>
#include <timewheel/wheel_service.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <random>
#include <thread>

#include <sys/resource.h>

#include "support/op_clock.hpp"

// --- Driver wakeups -------------------------------------------------------------------------

namespace {

namespace net = boost::asio;
using clock_type = std::chrono::steady_clock;

struct thread_usage {
    double cpu_seconds;
    long voluntary_switches;
};

thread_usage usage_now() {
    rusage ru{};
    getrusage(RUSAGE_THREAD, &ru);
    const auto seconds = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6;
    };
    return {seconds(ru.ru_utime) + seconds(ru.ru_stime), ru.ru_nvcsw};
}

struct window_result {
    double seconds = 0;
    double cpu_seconds = 0;
    long switches = 0;
    std::uint64_t wakeups = 0;
    std::uint64_t allocations = 0;
};

// Runs io on this thread for `window` of real time, then reports what this thread did.
window_result run_window(net::io_context& io, std::chrono::milliseconds window,
                         const timewheel::wheel_service* service) {
    auto guard = net::make_work_guard(io);
    const clock_type::time_point start = clock_type::now();
    std::thread stopper([&io, window] { // its creation allocates: before the counts start
        std::this_thread::sleep_for(window);
        io.stop();
    });
    const std::uint64_t wakeups = service != nullptr ? service->wakeups() : 0;
    const std::uint64_t allocations = timewheel_bench::allocations();
    const thread_usage before = usage_now();
    io.run();
    const thread_usage after = usage_now();
    window_result r;
    r.seconds = std::chrono::duration<double>(clock_type::now() - start).count();
    r.allocations = timewheel_bench::allocations() - allocations;
    stopper.join();
    r.cpu_seconds = after.cpu_seconds - before.cpu_seconds;
    r.switches = after.voluntary_switches - before.voluntary_switches;
    r.wakeups = service != nullptr ? service->wakeups() - wakeups : 0;
    io.restart();
    return r;
}

void report(benchmark::State& state, const window_result& r, std::uint64_t fired, bool wheel) {
    if (wheel) {
        state.counters["wakeups_per_s"] = static_cast<double>(r.wakeups) / r.seconds;
    }
    state.counters["switches_per_s"] = static_cast<double>(r.switches) / r.seconds;
    state.counters["fired_per_s"] = static_cast<double>(fired) / r.seconds;
    state.counters["cpu_percent"] = 100.0 * r.cpu_seconds / r.seconds;
    state.counters["allocs_per_fire"] =
        fired == 0 ? 0.0 : static_cast<double>(r.allocations) / static_cast<double>(fired);
}

constexpr std::chrono::milliseconds short_window{2000};
constexpr std::chrono::milliseconds long_window{3000};

enum class spread { none, due30s, spread30s, spread30s_slack };

// Deadline of timer i: 30 s, or uniform over (0, 30 s].
std::chrono::microseconds delay_of(spread s, std::mt19937_64& rng) {
    if (s == spread::due30s) {
        return std::chrono::seconds(30);
    }
    return std::chrono::microseconds(
        std::uniform_int_distribution<std::int64_t>(1, 30'000'000)(rng));
}

void wheel_wakeups(benchmark::State& state, spread s, std::size_t n) {
    for (auto _ : state) {
        net::io_context io(1);
        auto& service = net::use_service<timewheel::wheel_service>(io);
        std::uint64_t fired = 0;
        struct on_fire {
            std::uint64_t* fired;
            void operator()() const { ++*fired; }
        };
        std::deque<timewheel::callback_timer<on_fire>> timers;
        std::mt19937_64 rng(20240610);
        const auto slack =
            s == spread::spread30s_slack ? std::chrono::seconds(1) : std::chrono::seconds(0);
        for (std::size_t i = 0; i < n; ++i) {
            timers.emplace_back(io, on_fire{&fired}).expires_after(delay_of(s, rng), slack);
        }
        const window_result r = run_window(
            io, s == spread::none || s == spread::due30s ? short_window : long_window, &service);
        report(state, r, fired, true);
        state.counters["live"] = static_cast<double>(n);
        timers.clear(); // before io
    }
}

void steady_timer_wakeups(benchmark::State& state, spread s, std::size_t n) {
    for (auto _ : state) {
        net::io_context io(1);
        std::uint64_t fired = 0;
        std::deque<net::steady_timer> timers;
        std::mt19937_64 rng(20240610);
        for (std::size_t i = 0; i < n; ++i) {
            net::steady_timer& timer = timers.emplace_back(io, delay_of(s, rng));
            timer.async_wait([&fired](const boost::system::error_code& ec) {
                if (!ec) {
                    ++fired;
                }
            });
        }
        const window_result r = run_window(
            io, s == spread::none || s == spread::due30s ? short_window : long_window, nullptr);
        report(state, r, fired, false);
        state.counters["live"] = static_cast<double>(n);
        timers.clear(); // before io
    }
}

[[maybe_unused]] const bool registered = [] {
    struct wakeup_case {
        const char* name;
        spread s;
        std::size_t n;
        bool wheel;
    };
    const wakeup_case cases[] = {
        {"wheel_service/wakeups_idle/0", spread::none, 0, true},
        {"steady_timer/wakeups_idle/0", spread::none, 0, false},
        {"wheel_service/wakeups_due30s/1000000", spread::due30s, 1'000'000, true},
        {"steady_timer/wakeups_due30s/1000000", spread::due30s, 1'000'000, false},
        {"wheel_service/wakeups_spread30s/1000000", spread::spread30s, 1'000'000, true},
        {"steady_timer/wakeups_spread30s/1000000", spread::spread30s, 1'000'000, false},
        {"wheel_service/wakeups_spread30s_slack/1000000", spread::spread30s_slack, 1'000'000, true},
    };
    for (const wakeup_case& c : cases) {
        benchmark::RegisterBenchmark(c.name, [c](benchmark::State& state) {
            if (c.wheel) {
                wheel_wakeups(state, c.s, c.n);
            } else {
                steady_timer_wakeups(state, c.s, c.n);
            }
        })->Unit(benchmark::kMillisecond);
    }
    return true;
}();

} // namespace
