//
// bench/wheel_timer_bench.cpp
//
// The Asio face against boost::asio::steady_timer, on the idle-connection pattern: N timers
// on one io_context, each with a pending async_wait (the idle timeout of a connection),
// pushed back one after another in a random order, as reads arrive. Names are
// <implementation>/<operation>/<timers>:
//
//   steady_timer/idle_rearm/N    expires_after() (aborts the pending wait) + a new
//                                async_wait(); the aborted handler runs, as in any server
//                                that uses steady_timer for idle timeouts.
//   wheel_timer/idle_rearm/N     timewheel::wheel_timer, the same calls.
//   wheel_timer/idle_extend/N    wheel_timer::reschedule_after(): the pending wait stays
//                                pending, no handler runs, nothing is allocated.
//   baseline/idle_visit/N        the floor: push the timeout, read steady_clock and read the
//                                timer's expiry, doing nothing to the timer. What every visit
//                                above pays before the timer does any work.
//   steady_timer/idle_rearm_at/N, wheel_timer/idle_rearm_at/N, wheel_timer/idle_extend_at/N
//                                the same three with a cached clock: expires_at() or
//                                reschedule_at() of a time read once per batch of 64 visits
//                                (nginx and libuv cache their loop time in the same way),
//                                instead of one steady_clock::now() per call.
//   steady_timer/bytes_per_timer/1, wheel_timer/bytes_per_timer/1: memory per idle timer.
//
// Workload (the same for all): each timer has an idle timeout drawn uniformly from
// [30 s, 60 s]; every visit pushes it later by 5 ms - 5 s (drawn per visit) and re-arms or
// reschedules the timer for that timeout from now, so its deadline only ever moves later
// (the timeouts drift later across iterations; nothing expires during a run). Each pass
// visits the timers in a random order: the passes cycle through 4 permutations shuffled in
// advance, fixed per N, so that a timer's neighbours in the timer queues' intrusive lists
// (linked in the order of the previous pass) are not the timers visited next to it, as in a
// server where the order of reads keeps changing. Setup (creating the N timers and their
// first waits) is not timed.
//
// The visits run as handlers on the io_context, 64 per handler, each handler posting the
// next: the operation_aborted handlers queued by one batch run before the next batch, as in
// a server whose reactor pass delivers a batch of reads whose handlers re-arm their timeouts.
// So a re-arm's cost includes running its aborted handler, and Asio's recycling allocator
// behaves as it does in a server. Each batch also costs one post and one epoll_wait(0):
// about 3 ns per visit, included everywhere.
//
// One benchmark iteration is one pass over the N timers. Each benchmark reports
//   ns_per_op        nanoseconds of CPU time (of the benchmark thread) per visit, over all
//                    the iterations: a figure that other processes on the machine disturb
//                    less than wall time;
//   items_per_second visits per second of CPU time (Google Benchmark's own).
// The bytes_per_timer benchmarks (whose time is one re-arm of a lone timer) report, for a
// timer with one pending wait,
//   bytes            sizeof(timer) + the size of the wait operation allocated by async_wait;
//   sizeof_timer     sizeof(timer);
//   op_bytes         the wait operation, as requested from the handler's allocator;
//   heap_bytes       what 100000 such timers cost the process, per timer, measured with
//                    glibc's mallinfo2(): the timer (in a vector), the operation with malloc's
//                    overhead and, for steady_timer, its share of the timer queue's heap.
//

#include <timewheel/wheel_timer.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/error.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <ctime>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

namespace net = boost::asio;
using clock_type = std::chrono::steady_clock;
using duration = clock_type::duration;
using time_point = clock_type::time_point;
using std::chrono::microseconds;

// Visits per handler: a batch of reads delivered by one reactor pass.
constexpr std::size_t visits_per_handler = 64;

// Random visiting orders; pass k uses orders[k % visiting_orders].
constexpr std::size_t visiting_orders = 4;

// The same timeouts, pushes and visiting orders for every implementation.
struct workload {
    std::vector<duration> timeout;                  // per timer: uniform over [30 s, 60 s]
    std::vector<duration> push;                     // per visit: uniform over [5 ms, 5 s]
    std::vector<std::vector<std::uint32_t>> orders; // random permutations of the timers
};

const workload& get_workload(std::size_t n) {
    static std::map<std::size_t, workload> cache;
    auto [it, inserted] = cache.try_emplace(n);
    workload& w = it->second;
    if (!inserted) {
        return w;
    }
    std::mt19937_64 rng(20240607 + n);
    std::uniform_int_distribution<std::int64_t> timeout(30'000'000, 60'000'000);
    std::uniform_int_distribution<std::int64_t> push(5'000, 5'000'000);
    w.timeout.resize(n);
    w.push.resize(n);
    std::vector<std::uint32_t> order(n);
    for (std::size_t i = 0; i < n; ++i) {
        w.timeout[i] = microseconds(timeout(rng));
        w.push[i] = microseconds(push(rng));
        order[i] = static_cast<std::uint32_t>(i);
    }
    for (std::size_t k = 0; k < visiting_orders; ++k) {
        std::shuffle(order.begin(), order.end(), rng);
        w.orders.push_back(order);
    }
    return w;
}

struct wait_counts {
    std::uint64_t aborted = 0;
    std::uint64_t expired = 0;
};

// The trivial completion handler of every wait.
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

template <typename Timer>
struct idle_connection {
    explicit idle_connection(net::io_context& io)
        : timer(io) {}

    Timer timer;
    duration timeout{}; // pushed later at every visit
};

// N connections on one single-threaded io_context, each with its first wait pending.
template <typename Timer>
struct connection_set {
    connection_set(std::size_t n, const workload& w)
        : io(1) {
        connections.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            idle_connection<Timer>& c = connections.emplace_back(io);
            c.timeout = w.timeout[i];
            c.timer.expires_after(c.timeout);
            c.timer.async_wait(on_wait{&counts});
        }
        io.poll(); // nothing is due: runs nothing
    }

    net::io_context io;
    wait_counts counts;
    std::vector<idle_connection<Timer>> connections; // destroyed before io
};

// Calls visit(j, order[j], t) for every j, from handlers on the io_context, where t is the
// time read once per handler. visits_per_handler visits per handler, each handler posting
// the next. Returns once the visits and every handler they queued have run.
template <typename Visit>
void run_pass(net::io_context& io, const std::vector<std::uint32_t>& order, Visit& visit) {
    struct batch {
        net::io_context* io;
        const std::vector<std::uint32_t>* order;
        Visit* visit;
        std::size_t begin;

        void operator()() const {
            const time_point now = clock_type::now();
            const std::size_t end = std::min(begin + visits_per_handler, order->size());
            for (std::size_t j = begin; j < end; ++j) {
                (*visit)(j, (*order)[j], now);
            }
            if (end < order->size()) {
                net::post(*io, batch{io, order, visit, end});
            }
        }
    };
    net::post(io, batch{&io, &order, &visit, 0});
    io.poll();
}

// CPU time of the calling thread.
std::chrono::nanoseconds thread_cpu_time() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
}

// --- What a visit does, after pushing the timeout later ------------------------------------
// apply() returns the number of waits it kept pending. `aborts`: each visit aborts the
// pending wait; `keeps`: each visit keeps it pending.

struct rearm_after {
    static constexpr bool aborts = true, keeps = false;
    template <typename Timer>
    static std::size_t apply(Timer& timer, duration timeout, time_point, on_wait handler) {
        timer.expires_after(timeout);
        timer.async_wait(handler);
        return 0;
    }
};

struct rearm_at {
    static constexpr bool aborts = true, keeps = false;
    template <typename Timer>
    static std::size_t apply(Timer& timer, duration timeout, time_point now, on_wait handler) {
        timer.expires_at(now + timeout);
        timer.async_wait(handler);
        return 0;
    }
};

struct extend_after {
    static constexpr bool aborts = false, keeps = true;
    template <typename Timer>
    static std::size_t apply(Timer& timer, duration timeout, time_point, on_wait) {
        return timer.reschedule_after(timeout);
    }
};

struct extend_at {
    static constexpr bool aborts = false, keeps = true;
    template <typename Timer>
    static std::size_t apply(Timer& timer, duration timeout, time_point now, on_wait) {
        return timer.reschedule_at(now + timeout);
    }
};

// What a reschedule_after() must do anyway: read the clock and touch the timer.
struct visit_only {
    static constexpr bool aborts = false, keeps = false;
    template <typename Timer>
    static std::size_t apply(Timer& timer, duration timeout, time_point, on_wait) {
        benchmark::DoNotOptimize(clock_type::now() + timeout - timer.expiry());
        return 0;
    }
};

template <typename Timer, typename Visit>
void idle_pass(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    connection_set<Timer> set(n, w);
    std::size_t kept = 0;
    auto visit = [&](std::size_t j, std::uint32_t i, time_point now) {
        idle_connection<Timer>& c = set.connections[i];
        c.timeout += w.push[j];
        kept += Visit::apply(c.timer, c.timeout, now, on_wait{&set.counts});
    };
    std::size_t pass = 0;
    const std::chrono::nanoseconds start = thread_cpu_time();
    for (auto _ : state) {
        const std::uint64_t aborted = set.counts.aborted;
        kept = 0;
        run_pass(set.io, w.orders[pass++ % visiting_orders], visit);
        if (set.counts.aborted - aborted != (Visit::aborts ? n : 0) ||
            kept != (Visit::keeps ? n : 0) || set.counts.expired != 0) {
            state.SkipWithError("a visit aborted, kept or fired an unexpected number of waits");
            break;
        }
    }
    const std::chrono::nanoseconds cpu = thread_cpu_time() - start;
    const auto visits = state.iterations() * static_cast<std::int64_t>(n);
    state.SetItemsProcessed(visits);
    state.counters["ns_per_op"] =
        visits == 0 ? 0.0 : static_cast<double>(cpu.count()) / static_cast<double>(visits);
}

// --- Bytes per timer ----------------------------------------------------------------------

// The size of the last allocation made through a counting_allocator.
struct allocation_log {
    std::size_t calls = 0;
    std::size_t last_bytes = 0;
};
allocation_log op_allocations;

template <typename T>
struct counting_allocator {
    using value_type = T;

    counting_allocator() noexcept = default;
    template <typename U>
    counting_allocator(const counting_allocator<U>&) noexcept {}

    T* allocate(std::size_t count) {
        ++op_allocations.calls;
        op_allocations.last_bytes = count * sizeof(T);
        return std::allocator<T>().allocate(count);
    }

    void deallocate(T* p, std::size_t count) noexcept { std::allocator<T>().deallocate(p, count); }

    template <typename U>
    bool operator==(const counting_allocator<U>&) const noexcept {
        return true;
    }
};

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
    op_allocations = {};
    timer.async_wait(counted_on_wait{{&counts}});
    const allocation_log log = op_allocations;
    if (log.calls != 1) {
        state.SkipWithError("expected one allocation per async_wait");
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
        {"steady_timer/idle_rearm/", &idle_pass<net::steady_timer, rearm_after>},
        {"wheel_timer/idle_rearm/", &idle_pass<wheel_timer, rearm_after>},
        {"wheel_timer/idle_extend/", &idle_pass<wheel_timer, extend_after>},
        {"baseline/idle_visit/", &idle_pass<wheel_timer, visit_only>},
        {"steady_timer/idle_rearm_at/", &idle_pass<net::steady_timer, rearm_at>},
        {"wheel_timer/idle_rearm_at/", &idle_pass<wheel_timer, rearm_at>},
        {"wheel_timer/idle_extend_at/", &idle_pass<wheel_timer, extend_at>},
    };
    for (const std::size_t n : {10'000, 100'000, 1'000'000}) {
        for (const auto& [prefix, fn] : cases) {
            const std::string name = prefix + std::to_string(n);
            benchmark::RegisterBenchmark(name.c_str(), [fn = fn, n](benchmark::State& state) {
                fn(state, n);
            })->Unit(benchmark::kNanosecond);
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
