//
// bench/support/workload.hpp
//
// The workload every timer benchmark shares (the method of issue 12):
//
// * N live timers, plus N/2 spare ones (a pool of 1.5 N), each with a timeout uniform over
//   [1 s, 60 s] at microsecond resolution (and the same rounded up to 1 ms ticks);
// * two independent random permutations: the arm order (over the pool; the first N armed
//   are the live set) and the visit order (over the live set) in which moves and cancels
//   visit timers;
// * a third independent permutation that places the timers in memory (scattered<T>), so
//   that memory order is unrelated to either: no benchmark walks memory in order;
// * the fresh-arm rotation: the arm benchmarks arm timers that were cancelled five batches
//   (N/2 operations) earlier, never the ones just touched;
// * undo_order: what a benchmark re-arms after a timed batch of cancels, in an order (the
//   arm order) unrelated to the visit order, so that list neighbours are not visited next.
//
// One batch is N/10 operations (batch_size()); batch p processes slice p mod 10 of an order.
// Benchmarks materialize what they visit as arrays of pointers and deadlines in visiting
// order, so that the only random accesses timed are those of the timers themselves.
//

#ifndef TIMEWHEEL_BENCH_SUPPORT_WORKLOAD_HPP
#define TIMEWHEEL_BENCH_SUPPORT_WORKLOAD_HPP

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

namespace timewheel_bench {

/// Batches per pass over the live timers: a batch is N/10 operations.
inline constexpr std::size_t batches = 10;

/// Timeouts are uniform over [min_timeout_us, max_timeout_us].
inline constexpr std::int64_t min_timeout_us = 1'000'000;
inline constexpr std::int64_t max_timeout_us = 60'000'000;

/// Microseconds to 1 ms ticks, rounded up (a timer never fires early).
constexpr std::uint64_t to_ms_ticks(std::int64_t micros) {
    return static_cast<std::uint64_t>((micros + 999) / 1000);
}

/// The shared workload of N live timers; see the top of this file.
struct workload {
    std::size_t live = 0;                    // N
    std::size_t pool = 0;                    // N + N/2 timers exist
    std::vector<std::int64_t> timeout_us;    // per timer id in [0, pool)
    std::vector<std::uint64_t> timeout_tick; // the same in 1 ms ticks, rounded up
    std::vector<std::uint32_t> arm_order;    // permutation of [0, pool)
    std::vector<std::uint32_t> visit_order;  // permutation of the live set arm_order[0, N)
    std::vector<std::uint32_t> undo_order;   // each batch slice of visit_order, in arm order
    std::vector<std::uint32_t> place;        // timer id -> position in memory

    /// Operations per batch.
    std::size_t batch_size() const noexcept { return live / batches; }

    /// First position in visit_order / undo_order of batch `pass`.
    std::size_t visit_slice(std::size_t pass) const noexcept {
        return (pass % batches) * batch_size();
    }

    /// The fresh-arm rotation over arm_order doubled (positions in [0, 2 pool), so a slice
    /// never wraps): batch `pass` arms positions [fresh_arm(pass), + batch_size()) and then
    /// cancels, untimed, the live timers armed longest ago at [fresh_cancel(pass), + ...).
    std::size_t fresh_arm(std::size_t pass) const noexcept {
        return (live + pass * batch_size()) % pool;
    }
    std::size_t fresh_cancel(std::size_t pass) const noexcept {
        return (pass * batch_size()) % pool;
    }

    /// `by_id` gathered in `order`, optionally twice over (for the doubled arm order).
    template <typename V>
    std::vector<V> gather(const std::vector<V>& by_id, const std::vector<std::uint32_t>& order,
                          bool twice = false) const {
        std::vector<V> out;
        out.reserve(order.size() * (twice ? 2 : 1));
        for (int round = 0; round < (twice ? 2 : 1); ++round) {
            for (const std::uint32_t id : order) {
                out.push_back(by_id[id]);
            }
        }
        return out;
    }
};

inline workload make_workload(std::size_t n, std::uint64_t seed) {
    workload w;
    w.live = n;
    w.pool = n + n / 2;
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int64_t> timeout(min_timeout_us, max_timeout_us);
    w.timeout_us.resize(w.pool);
    w.timeout_tick.resize(w.pool);
    for (std::size_t i = 0; i < w.pool; ++i) {
        w.timeout_us[i] = timeout(rng);
        w.timeout_tick[i] = to_ms_ticks(w.timeout_us[i]);
    }
    const auto permutation = [](std::size_t size, std::mt19937_64& r) {
        std::vector<std::uint32_t> p(size);
        std::iota(p.begin(), p.end(), 0u);
        std::shuffle(p.begin(), p.end(), r);
        return p;
    };
    std::mt19937_64 arm_rng(seed ^ 0x61726d);
    std::mt19937_64 visit_rng(seed ^ 0x7669736974);
    std::mt19937_64 place_rng(seed ^ 0x706c616365);
    w.arm_order = permutation(w.pool, arm_rng);
    w.place = permutation(w.pool, place_rng);
    const std::vector<std::uint32_t> shuffle = permutation(n, visit_rng);
    w.visit_order.resize(n);
    std::vector<std::uint32_t> arm_rank(w.pool);
    for (std::size_t j = 0; j < w.pool; ++j) {
        arm_rank[w.arm_order[j]] = static_cast<std::uint32_t>(j);
    }
    for (std::size_t j = 0; j < n; ++j) {
        w.visit_order[j] = w.arm_order[shuffle[j]];
    }
    w.undo_order = w.visit_order;
    for (std::size_t pass = 0; pass < batches; ++pass) {
        const auto first = w.undo_order.begin() + static_cast<std::ptrdiff_t>(w.visit_slice(pass));
        std::sort(first, first + static_cast<std::ptrdiff_t>(w.batch_size()),
                  [&](std::uint32_t a, std::uint32_t b) { return arm_rank[a] < arm_rank[b]; });
    }
    return w;
}

/// The workload of N live timers (N a multiple of 20), made once per process.
inline const workload& get_workload(std::size_t n) {
    static std::map<std::size_t, workload> cache;
    auto it = cache.find(n);
    if (it == cache.end()) {
        it = cache.emplace(n, make_workload(n, 20261123 + n)).first;
    }
    return it->second;
}

/// The pool of timer objects, placed in memory by the workload's `place` permutation.
/**
 * Constructs w.pool objects with `make()` (a prvalue: T need not be movable) in memory
 * order, and gives the arm and visit orders as arrays of pointers:
 *   by_arm()   arm_order twice over (2 pool pointers; see workload::fresh_arm)
 *   by_visit() visit_order (N pointers)
 *   by_undo()  undo_order (N pointers)
 */
template <typename T>
class scattered {
public:
    template <typename Make>
    scattered(const workload& w, Make&& make)
        : size_(w.pool)
        , storage_(std::allocator<T>().allocate(w.pool)) {
        for (; constructed_ < size_; ++constructed_) {
            ::new (static_cast<void*>(storage_ + constructed_)) T(make());
        }
        std::vector<T*> by_id(size_);
        for (std::size_t id = 0; id < size_; ++id) {
            by_id[id] = storage_ + w.place[id];
        }
        by_arm_ = w.gather(by_id, w.arm_order, true);
        by_visit_ = w.gather(by_id, w.visit_order);
        by_undo_ = w.gather(by_id, w.undo_order);
    }

    scattered(const scattered&) = delete;
    scattered& operator=(const scattered&) = delete;

    ~scattered() {
        while (constructed_ > 0) {
            storage_[--constructed_].~T();
        }
        std::allocator<T>().deallocate(storage_, size_);
    }

    const std::vector<T*>& by_arm() const noexcept { return by_arm_; }
    const std::vector<T*>& by_visit() const noexcept { return by_visit_; }
    const std::vector<T*>& by_undo() const noexcept { return by_undo_; }

private:
    std::size_t size_;
    std::size_t constructed_ = 0;
    T* storage_;
    std::vector<T*> by_arm_;
    std::vector<T*> by_visit_;
    std::vector<T*> by_undo_;
};

} // namespace timewheel_bench

#endif // TIMEWHEEL_BENCH_SUPPORT_WORKLOAD_HPP
