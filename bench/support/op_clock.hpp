//
// bench/support/op_clock.hpp
//
// The op timer every benchmark file shares: wall time and allocations around the timed
// batches only, reported as `ns_per_op` and `allocs_per_op`.
//
// Allocations are counted by the counting operator new (every form) and aligned_alloc of the
// tests, test/support/counting_new.cpp, which bench/CMakeLists.txt links into the binary.
//

#ifndef TIMEWHEEL_BENCH_SUPPORT_OP_CLOCK_HPP
#define TIMEWHEEL_BENCH_SUPPORT_OP_CLOCK_HPP

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include <time.h>

#if !defined(TIMEWHEEL_BENCH_NO_ALLOCATION_COUNT)
#include <test/support/allocation_counter.hpp>
#endif

namespace timewheel_bench {

/// Calls of the global operator new (and aligned_alloc) made by this thread so far; always 0
/// in a binary built without counting (TIMEWHEEL_BENCH_COUNT_ALLOCATIONS=OFF).
inline std::uint64_t allocations() noexcept {
#if defined(TIMEWHEEL_BENCH_NO_ALLOCATION_COUNT)
    return 0;
#else
    return timewheel::test::thread_allocations_so_far();
#endif
}

/// The latency of one steady_clock read (the smallest difference between two consecutive
/// reads), subtracted from each timed batch.
inline std::chrono::steady_clock::duration clock_overhead() {
    using clock_type = std::chrono::steady_clock;
    static const clock_type::duration overhead = [] {
        clock_type::duration best = clock_type::duration::max();
        for (int i = 0; i < 10'000; ++i) {
            const clock_type::time_point a = clock_type::now();
            const clock_type::time_point b = clock_type::now();
            best = std::min(best, b - a);
        }
        return best;
    }();
    return overhead;
}

/// CPU time of the calling thread, in ns.
inline std::int64_t thread_cpu_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

/// Wall time, thread CPU time and allocations around the timed batches only, and the
/// operations they did.
/**
 * Use: start(); ...the batch...; stop(ops); and once at the end report(state), which sets
 * the counters `ns_per_op` (wall ns per operation, less one clock read per batch),
 * `cpu_ns_per_op` (CPU time of the thread per operation: the figure to compare on a loaded
 * machine, where wall time includes the time the thread waited for a CPU),
 * `allocs_per_op` and Google Benchmark's items_per_second.
 */
class op_clock {
public:
    using clock_type = std::chrono::steady_clock;

    void start() noexcept {
        allocations_at_start_ = allocations();
        cpu_start_ = thread_cpu_ns();
        start_ = clock_type::now();
    }

    void stop(std::size_t ops) noexcept {
        benchmark::ClobberMemory();
        const clock_type::duration batch = clock_type::now() - start_;
        cpu_ns_ += thread_cpu_ns() - cpu_start_;
        allocations_ += allocations() - allocations_at_start_;
        elapsed_ += std::max(batch - overhead_, clock_type::duration::zero());
        ops_ += ops;
    }

    std::size_t ops() const noexcept { return ops_; }

    double ns_per_op() const noexcept {
        return ops_ == 0 ? 0.0
                         : std::chrono::duration<double, std::nano>(elapsed_).count() /
                               static_cast<double>(ops_);
    }

    void report(benchmark::State& state) const {
        state.SetItemsProcessed(static_cast<std::int64_t>(ops_));
        state.counters["ns_per_op"] = ns_per_op();
        state.counters["cpu_ns_per_op"] =
            ops_ == 0 ? 0.0 : static_cast<double>(cpu_ns_) / static_cast<double>(ops_);
        state.counters["allocs_per_op"] =
            ops_ == 0 ? 0.0 : static_cast<double>(allocations_) / static_cast<double>(ops_);
    }

private:
    clock_type::duration overhead_ = clock_overhead();
    clock_type::time_point start_;
    clock_type::duration elapsed_{};
    std::int64_t cpu_start_ = 0;
    std::int64_t cpu_ns_ = 0;
    std::uint64_t allocations_at_start_ = 0;
    std::uint64_t allocations_ = 0;
    std::size_t ops_ = 0;
};

} // namespace timewheel_bench

#endif // TIMEWHEEL_BENCH_SUPPORT_OP_CLOCK_HPP
