//
// bench/wheel_timer_bench.cpp
//
// The Asio face against boost::asio::steady_timer, like with like (a whole Asio object
// each, with a pending async_wait whose handler runs through the io_context), with the
// shared workload of issue 12 (bench/support/workload.hpp): N live timers out of a pool of
// 1.5 N placed in memory in random order, timeouts uniform over [1 s, 60 s] (the wheel ticks
// at 1 ms), an arm order and a visit order that are independent random permutations, and
// fresh timers (cancelled five batches earlier, not the ones just touched) armed in arm
// order. One benchmark iteration is one batch of N/10 operations, 10 batches (one pass) per
// benchmark, so that few of the 1 s - 60 s timeouts come due during a run (100 batches at
// 10,000 timers, whose batches are too short to time alone on a busy machine). Names are
// asio/<implementation>/<operation>/<live timers> (wheel_bench.cpp's steady_timer/* cases are its
// own, different workloads):
//
// Every timed loop polls the io_context every 128 operations and at the end of the batch,
// inside the timed region, as wheel_bench.cpp does (bench/support/handler_poll.hpp says
// why): an aborted handler runs in a real program too, soon after its cancel.
//
//   */arm/N         expires_at(now + timeout) + async_wait() on a fresh timer. Untimed after
//                   each batch: the live timers armed longest ago are cancelled and their
//                   aborted handlers run, so that N stay live.
//   */cancel/N      cancel() of live timers in visit order, and running their aborted
//                   handlers, which a user pays too. Untimed after each batch: they are
//                   re-armed in arm order, unrelated to the visit order.
//   steady_timer/idle_move/N   the idle-timeout loop: every visit (visit order) pushes the
//                   timer's deadline to now + its timeout: expires_at() + a new async_wait();
//                   the aborted handlers run in the polls (timed).
//   wheel_timer/idle_move/N    the same with reschedule_at(): the wait stays pending. Real
//                   time advances between batches, so the wheel's deferred re-filing (an
//                   entry moved later is re-filed when its old slot comes due, in the
//                   driver's run inside a poll) is paid in the timed polls.
//   wheel_timer/idle_rearm/N   wheel_timer doing what steady_timer does in idle_move.
//
// Counters: ns_per_op (wall time of the timed part per operation, bench/support/op_clock),
// cpu_ns_per_op (the same in CPU time of the benchmark thread: read this one on a loaded
// machine),
// allocs_per_op (operator new / aligned_alloc calls per operation: for arm, the allocations
// per wait), expired (waits that expired during the run: the 1 s timeouts can come due in a
// long run; a small share).
//
//   */bytes_per_timer/1   memory per timer with one pending wait:
//     bytes        sizeof(timer) + the wait operation requested from the handler's allocator
//                  (none for wheel_timer, which keeps a small handler's wait inside itself);
//     sizeof_timer, op_bytes  its two parts;
//     heap_bytes   what 100000 such timers cost the process, per timer (glibc mallinfo2):
//                  timer, operation with malloc's overhead, steady_timer's share of its heap.
//
// Measured on a shared machine, read the ratios of one run.
//

#include <timewheel/wheel_timer.hpp>

#include "support/counting_allocator.hpp"
#include "support/handler_poll.hpp"
#include "support/op_clock.hpp"
#include "support/workload.hpp"

#include <benchmark/benchmark.h>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

namespace net = boost::asio;
namespace tb = timewheel_bench;
using clock_type = std::chrono::steady_clock;
using time_point = clock_type::time_point;
using std::chrono::microseconds;

struct wait_counts {
    std::uint64_t aborted = 0;
    std::uint64_t expired = 0;
};

// The completion handler of every wait: one pointer, as a typical lambda.
struct on_wait {
    wait_counts* counts;

    void operator()(const boost::system::error_code& ec) const {
        if (ec == net::error::operation_aborted) {
            ++counts->aborted;
        } else {
            ++counts->expired;
        }
    }
};

// CPU time of the calling thread: less disturbed than wall time by a loaded machine.
std::chrono::nanoseconds thread_cpu_time() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// bench/support's op_clock (wall time, allocations) and the thread's CPU time, around the
// same timed parts.
class batch_clock {
public:
    void start() noexcept {
        cpu_start_ = thread_cpu_time();
        wall_.start();
    }

    void stop(std::size_t ops) noexcept {
        wall_.stop(ops);
        cpu_ += thread_cpu_time() - cpu_start_;
    }

    void report(benchmark::State& state) const {
        wall_.report(state);
        state.counters["cpu_ns_per_op"] =
            wall_.ops() == 0 ? 0.0
                             : static_cast<double>(cpu_.count()) / static_cast<double>(wall_.ops());
    }

private:
    tb::op_clock wall_;
    std::chrono::nanoseconds cpu_start_{};
    std::chrono::nanoseconds cpu_{};
};

// The pool of timers of one io_context, the first N of the arm order armed.
template <typename Timer>
struct timer_pool {
    explicit timer_pool(const tb::workload& w)
        : io(1)
        , timers(w, [this] { return Timer(io); })
        , arm_timeout(w.gather(w.timeout_us, w.arm_order, true))
        , visit_timeout(w.gather(w.timeout_us, w.visit_order))
        , undo_timeout(w.gather(w.timeout_us, w.undo_order)) {
        const time_point now = clock_type::now();
        for (std::size_t j = 0; j < w.live; ++j) {
            arm(*timers.by_arm()[j], now + microseconds(arm_timeout[j]));
        }
        poller.flush();
    }

    void arm(Timer& t, time_point expiry) {
        t.expires_at(expiry);
        t.async_wait(on_wait{&counts});
    }

    void report(benchmark::State& state, const batch_clock& clock) const {
        clock.report(state);
        state.counters["expired"] = static_cast<double>(counts.expired);
    }

    net::io_context io;
    tb::handler_poll poller{io};
    wait_counts counts;
    tb::scattered<Timer> timers; // destroyed before io
    std::vector<std::int64_t> arm_timeout, visit_timeout, undo_timeout;
};

template <typename Timer>
void arm_fresh(benchmark::State& state, std::size_t n) {
    const tb::workload& w = tb::get_workload(n);
    timer_pool<Timer> pool(w);
    const std::size_t batch = w.batch_size();
    batch_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const std::size_t first = w.fresh_arm(pass);
        const time_point now = clock_type::now();
        clock.start();
        for (std::size_t k = first; k < first + batch; ++k) {
            pool.arm(*pool.timers.by_arm()[k], now + microseconds(pool.arm_timeout[k]));
            pool.poller.after_op();
        }
        pool.poller.flush();
        clock.stop(batch);
        const std::size_t oldest = w.fresh_cancel(pass);
        for (std::size_t k = oldest; k < oldest + batch; ++k) {
            pool.timers.by_arm()[k]->cancel();
        }
        pool.poller.flush();
        ++pass;
    }
    pool.report(state, clock);
}

template <typename Timer>
void cancel_live(benchmark::State& state, std::size_t n) {
    const tb::workload& w = tb::get_workload(n);
    timer_pool<Timer> pool(w);
    const std::size_t batch = w.batch_size();
    batch_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const std::size_t first = w.visit_slice(pass);
        clock.start();
        for (std::size_t k = first; k < first + batch; ++k) {
            pool.timers.by_visit()[k]->cancel();
            pool.poller.after_op(); // the aborted handlers
        }
        pool.poller.flush();
        clock.stop(batch);
        const time_point now = clock_type::now();
        for (std::size_t k = first; k < first + batch; ++k) {
            pool.arm(*pool.timers.by_undo()[k], now + microseconds(pool.undo_timeout[k]));
        }
        pool.poller.flush();
        ++pass;
    }
    pool.report(state, clock);
}

// The idle-timeout loop: every visit pushes the deadline to now + the timer's timeout.
struct rearm {
    template <typename Timer>
    static void apply(timer_pool<Timer>& pool, Timer& t, time_point expiry) {
        pool.arm(t, expiry);
    }
};

struct reschedule {
    template <typename Timer>
    static void apply(timer_pool<Timer>&, Timer& t, time_point expiry) {
        t.reschedule_at(expiry);
    }
};

template <typename Timer, typename Move>
void idle_move(benchmark::State& state, std::size_t n) {
    const tb::workload& w = tb::get_workload(n);
    timer_pool<Timer> pool(w);
    const std::size_t batch = w.batch_size();
    batch_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const std::size_t first = w.visit_slice(pass);
        const time_point now = clock_type::now();
        clock.start();
        for (std::size_t k = first; k < first + batch; ++k) {
            Move::apply(pool, *pool.timers.by_visit()[k],
                        now + microseconds(pool.visit_timeout[k]));
            pool.poller.after_op(); // aborted handlers (steady_timer, idle_rearm)
        }
        pool.poller.flush(); // and the deferred re-filing (wheel_timer)
        clock.stop(batch);
        ++pass;
    }
    pool.report(state, clock);
}

// --- Bytes per timer ----------------------------------------------------------------------

using timewheel_bench::allocator_log;
using timewheel_bench::counting_allocator;

// on_wait with an associated allocator. The handler has the same size and the allocator is
// stateless, so the operation allocated for it has the size of the one for on_wait.
struct counted_on_wait : on_wait {
    using allocator_type = counting_allocator<void>;
    allocator_type get_allocator() const noexcept { return {}; }
};

static_assert(sizeof(counted_on_wait) == sizeof(on_wait));

// Bytes of heap in use, as glibc's malloc counts them (chunks with their headers, and mmaps).
std::size_t heap_in_use() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
#else
    return 0;
#endif
}

// Heap per timer for 100000 timers with one pending wait each (0 where not measurable).
template <typename Timer>
double heap_bytes_per_timer() {
    constexpr std::size_t count = 100'000;
    net::io_context io(1);
    wait_counts counts;
    { // create the services and the timer queue first
        Timer warm_up(io, std::chrono::hours(1));
        warm_up.async_wait(on_wait{&counts});
    }
    io.poll();
    const std::size_t before = heap_in_use();
    std::vector<Timer> timers;
    timers.reserve(count);
    for (std::size_t i = 0; i < count; ++i) {
        Timer& timer = timers.emplace_back(io);
        timer.expires_after(std::chrono::hours(1) + std::chrono::milliseconds(i % 60'000));
        timer.async_wait(on_wait{&counts});
    }
    const std::size_t after = heap_in_use();
    return after > before ? static_cast<double>(after - before) / count : 0.0;
}

template <typename Timer>
void bytes_per_timer(benchmark::State& state) {
    static const double heap_bytes = heap_bytes_per_timer<Timer>();
    net::io_context io(1);
    wait_counts counts;
    Timer timer(io);
    timer.expires_after(std::chrono::hours(1));
    timewheel_bench::counted_allocations() = {};
    timer.async_wait(counted_on_wait{{&counts}});
    const allocator_log log = timewheel_bench::counted_allocations();
    if (log.calls > 1) {
        state.SkipWithError("expected at most one allocation per async_wait");
        return;
    }
    for (auto _ : state) {
        timer.expires_after(std::chrono::hours(1));
        timer.async_wait(on_wait{&counts});
        io.poll();
    }
    state.counters["bytes"] = static_cast<double>(sizeof(Timer) + log.last_bytes);
    state.counters["sizeof_timer"] = static_cast<double>(sizeof(Timer));
    state.counters["op_bytes"] = static_cast<double>(log.last_bytes);
    state.counters["heap_bytes"] = heap_bytes;
}

// --- Registration -------------------------------------------------------------------------

[[maybe_unused]] const bool registered = [] {
    using bench_fn = void (*)(benchmark::State&, std::size_t);
    using timewheel::wheel_timer;
    const std::pair<const char*, bench_fn> cases[] = {
        {"asio/steady_timer/arm/", &arm_fresh<net::steady_timer>},
        {"asio/wheel_timer/arm/", &arm_fresh<wheel_timer>},
        {"asio/steady_timer/cancel/", &cancel_live<net::steady_timer>},
        {"asio/wheel_timer/cancel/", &cancel_live<wheel_timer>},
        {"asio/steady_timer/idle_move/", &idle_move<net::steady_timer, rearm>},
        {"asio/wheel_timer/idle_move/", &idle_move<wheel_timer, reschedule>},
        {"asio/wheel_timer/idle_rearm/", &idle_move<wheel_timer, rearm>},
    };
    for (const std::size_t n : {10'000, 100'000, 1'000'000}) {
        for (const auto& [prefix, fn] : cases) {
            const std::string name = prefix + std::to_string(n);
            benchmark::RegisterBenchmark(name.c_str(),
                                         [fn = fn, n](benchmark::State& state) { fn(state, n); })
                ->Unit(benchmark::kNanosecond)
                ->Iterations(n >= 100'000 ? 10 : 100); // 10k: batches of 1,000 are short
        }
    }
    benchmark::RegisterBenchmark("steady_timer/bytes_per_timer/1",
                                 &bytes_per_timer<net::steady_timer>)
        ->Unit(benchmark::kNanosecond);
    benchmark::RegisterBenchmark("wheel_timer/bytes_per_timer/1", &bytes_per_timer<wheel_timer>)
        ->Unit(benchmark::kNanosecond);
    return true;
}();

} // namespace
