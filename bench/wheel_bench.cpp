//
// bench/wheel_bench.cpp
//
// The core wheel against three other ways of keeping timers, on the same data in the same
// run: boost::asio::steady_timer, a binary heap with lazy deletion and an std::multimap.
// Names: <implementation>/<operation>/<live entries>, implementation `wheel`,
// `steady_timer`, `heap` or `multimap`:
//
//   arm, move_later, move_earlier, cancel, expire         at 1e3, 1e4, 1e5, 1e6 and 1e7
//   move_later_armorder, move_earlier_armorder,            live entries (multimap: up to
//   cancel_armorder                                        1e6), deadlines spread
//                                                          uniformly over 1-60 s
//   catchup/<lag seconds>         1000 entries due within 1 s, fired by one catch-up of
//                                 1 s, 1 h, 1 day or 1 year (the thread was blocked)
//   catchup_spread/<lag seconds>  (wheel only) 1000 entries spread over the whole lag
//   bytes_per_entry/1000000       memory and allocations per armed entry
//   baseline/random_rmw/N, baseline/pointer_chase/N   what the memory allows (see below)
//
// One benchmark iteration is a batch of operations (N/10 for arm, moves and cancel, N for
// expire and catch-up). Each benchmark reports
//   ns_per_op        nanoseconds of wall time per operation, timed around the batches only;
//   allocs_per_op    calls of operator new per operation in the timed batches (counted by
//                    report_bench.cpp's replacement of the global operator new);
//   items_per_second operations per second of CPU time (Google Benchmark's own).
// bench/README.md describes the method of each benchmark, docs/performance.md the results.
//
// The three other implementations:
//   steady_timer  one boost::asio::steady_timer per entry, all on one io_context with
//                 concurrency hint 1; an arm is expires_at() + async_wait(), a move the same
//                 (which aborts the pending wait: its handler runs in an io_context::poll()
//                 every 128 operations and at the end of each batch, inside the timed region).
//   heap          a binary min-heap (std::vector, std::push_heap/pop_heap) of 16-byte records
//                 (deadline, id, generation). Cancel bumps the entry's generation; a move
//                 bumps it and pushes a new record. Records whose generation no longer matches
//                 are dropped when they reach the top, or by a compaction (erase + make_heap)
//                 once they outnumber the live entries, inside the operation that crosses
//                 that line: its cost is spread over the moves and cancels that made the garbage.
//   multimap      std::multimap<deadline, id>, each entry keeping its iterator: cancel is an
//                 erase, a move extracts the node and reinserts it with its new key (no
//                 allocation), an arm allocates a node.
//

#include <timewheel/wheel.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace timewheel_bench {
// Calls of the global operator new made by this thread so far (defined in report_bench.cpp).
std::uint64_t allocations() noexcept;
} // namespace timewheel_bench

namespace {

using timewheel::tick_type;
using clock_type = std::chrono::steady_clock;
using us = std::chrono::microseconds;

// Arm, move and cancel process the entries in this many batches: a batch is N/10 operations,
// so that arm and cancel keep between 90% and 100% of the N entries live.
constexpr std::size_t batches = 10;

// steady_timer: io_context::poll() runs the operation_aborted handlers after every this
// many operations, as a loaded server runs them between two reactor passes (128 is the
// number of events Asio's epoll reactor takes per epoll_wait).
constexpr std::size_t poll_every = 128;

// Entries of the catch-up benchmarks.
constexpr std::size_t catchup_entries = 1000;

// --- Workloads ----------------------------------------------------------------------------

// Deadlines are relative to an origin that each implementation chooses (see expire).
struct workload {
    std::int64_t horizon_us = 0;           // every deadline is at most this far
    std::vector<std::int64_t> deadline_us; // per entry
    std::vector<std::int64_t> earlier_us;  // per entry: uniform over [1 s, deadline)
    std::vector<std::int64_t> later_us;    // per visit: uniform over [5 ms, 5 s]
    std::vector<std::uint32_t> order;      // a random permutation: the random visiting order
    // The same in wheel ticks (1 ms), rounded up.
    std::vector<tick_type> deadline_tick;
    std::vector<tick_type> earlier_tick;
    std::vector<tick_type> later_tick;
};

constexpr tick_type to_ticks(std::int64_t micros) {
    return static_cast<tick_type>((micros + 999) / 1000);
}

// n entries with deadlines uniform over [first_us, last_us].
workload make_workload(std::size_t n, std::uint64_t seed, std::int64_t first_us,
                       std::int64_t last_us) {
    workload w;
    w.horizon_us = last_us;
    std::mt19937_64 rng(seed);
    std::uniform_int_distribution<std::int64_t> deadline(first_us, last_us);
    std::uniform_int_distribution<std::int64_t> later(5'000, 5'000'000);
    w.deadline_us.resize(n);
    w.earlier_us.resize(n);
    w.later_us.resize(n);
    w.order.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        w.deadline_us[i] = deadline(rng);
        w.earlier_us[i] = std::uniform_int_distribution<std::int64_t>(
            std::min<std::int64_t>(1'000'000, w.deadline_us[i] - 1), w.deadline_us[i] - 1)(rng);
        w.later_us[i] = later(rng);
        w.order[i] = static_cast<std::uint32_t>(i);
    }
    std::shuffle(w.order.begin(), w.order.end(), rng);
    const auto ticks_of = [](const std::vector<std::int64_t>& micros) {
        std::vector<tick_type> ticks(micros.size());
        std::transform(micros.begin(), micros.end(), ticks.begin(), to_ticks);
        return ticks;
    };
    w.deadline_tick = ticks_of(w.deadline_us);
    w.earlier_tick = ticks_of(w.earlier_us);
    w.later_tick = ticks_of(w.later_us);
    return w;
}

enum class kind { standard, catchup, catchup_spread };

const workload& get_workload(kind k, std::size_t n, std::int64_t lag_s = 0) {
    static std::map<std::tuple<kind, std::size_t, std::int64_t>, workload> cache;
    auto it = cache.find({k, n, lag_s});
    if (it != cache.end()) {
        return it->second;
    }
    workload w;
    switch (k) {
    case kind::standard: // deadlines over 1-60 s
        w = make_workload(n, 20240601 + n, 1'000'000, 60'000'000);
        break;
    case kind::catchup: // due within the first second, whatever the lag
        w = make_workload(n, 20240602, 1'000, 1'000'000);
        w.horizon_us = lag_s * 1'000'000;
        break;
    case kind::catchup_spread: // spread over the whole lag
        w = make_workload(n, 20240603, 1'000, lag_s * 1'000'000);
        break;
    }
    return cache.emplace(std::tuple{k, n, lag_s}, std::move(w)).first->second;
}

// --- Measuring ------------------------------------------------------------------------------

// The latency of one clock read, subtracted from each timed batch: the smallest difference
// between two consecutive reads.
clock_type::duration clock_overhead() {
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

// Wall time and allocations around the timed batches only, and the operations they did.
class op_clock {
public:
    void start() noexcept {
        allocations_at_start_ = timewheel_bench::allocations();
        start_ = clock_type::now();
    }

    void stop(std::size_t ops) noexcept {
        benchmark::ClobberMemory();
        const clock_type::duration batch = clock_type::now() - start_;
        allocations_ += timewheel_bench::allocations() - allocations_at_start_;
        elapsed_ += std::max(batch - overhead_, clock_type::duration::zero());
        ops_ += ops;
    }

    void report(benchmark::State& state) const {
        state.SetItemsProcessed(static_cast<std::int64_t>(ops_));
        const double ops = static_cast<double>(ops_);
        state.counters["ns_per_op"] =
            ops_ == 0 ? 0.0 : std::chrono::duration<double, std::nano>(elapsed_).count() / ops;
        state.counters["allocs_per_op"] = ops_ == 0 ? 0.0 : static_cast<double>(allocations_) / ops;
    }

private:
    clock_type::duration overhead_ = clock_overhead();
    clock_type::time_point start_;
    clock_type::duration elapsed_{};
    std::uint64_t allocations_at_start_ = 0;
    std::uint64_t allocations_ = 0;
    std::size_t ops_ = 0;
};

// The slice of the visiting order that batch number `pass` processes.
struct slice {
    std::size_t begin;
    std::size_t size;
};

slice batch_of(std::size_t pass, std::size_t n) {
    const std::size_t size = n / batches;
    return {(pass % batches) * size, size};
}

// Visiting orders: a fixed random permutation, or the order of the entries in memory, which
// is also the order in which they were armed.
struct random_order {
    static std::uint32_t at(const workload& w, std::size_t j) { return w.order[j]; }
};

struct arm_order {
    static std::uint32_t at(const workload&, std::size_t j) {
        return static_cast<std::uint32_t>(j);
    }
};

// --- The implementations ------------------------------------------------------------------
// Each keeps n entries, indexed 0..n-1, and offers:
//   arm(i)              arm entry i at origin + deadline[i] (an unarmed entry in the benchmarks)
//   move_earlier(i)     move armed entry i to origin + earlier[i]
//   move_later(i, j)    move armed entry i to its deadline + later[j]
//   cancel(i)           disarm entry i
//   after_op(), flush() run what the operations queued (steady_timer's aborted handlers)
//   arm_all_due()       arm every entry so that expire_all() finds them all due
//   expire_all()        fire every entry that arm_all_due() armed; returns how many fired
//   entry_bytes         the size of what a user's object holds per entry

struct wheel_item : timewheel::wheel_entry {
    std::uint64_t fired = 0;
};

// timewheel::wheel, 1 tick = 1 ms, exact entries (slack 0).
class wheel_timers {
public:
    static constexpr std::size_t entry_bytes = sizeof(timewheel::wheel_entry);

    wheel_timers(std::size_t n, const workload& w)
        : w_(w)
        , items_(n) {}

    void arm(std::size_t i) { wheel_.arm(items_[i], origin_ + w_.deadline_tick[i]); }
    void move_earlier(std::size_t i) { wheel_.move(items_[i], origin_ + w_.earlier_tick[i]); }
    void move_later(std::size_t i, std::size_t j) {
        wheel_item& item = items_[i];
        wheel_.move(item, item.deadline() + w_.later_tick[j]);
    }
    void cancel(std::size_t i) { wheel_.cancel(items_[i]); }
    void after_op() noexcept {}
    void flush() noexcept {}

    // Armed from the wheel's time; one advance() to the end of the horizon fires them all,
    // the handler touching the user's object.
    void arm_all_due() {
        origin_ = wheel_.now();
        for (std::size_t i = 0; i < items_.size(); ++i) {
            arm(i);
        }
    }

    std::size_t expire_all() {
        return wheel_.advance(origin_ + to_ticks(w_.horizon_us) + 1,
                              [](auto& entry) { ++static_cast<wheel_item&>(entry).fired; });
    }

private:
    const workload& w_;
    timewheel::wheel wheel_;
    tick_type origin_ = 0;
    std::vector<wheel_item> items_; // destroyed before the wheel
};

// boost::asio::steady_timer on one single-threaded io_context.
class steady_timers {
public:
    static constexpr std::size_t entry_bytes = sizeof(boost::asio::steady_timer);

    // Deadlines are origin + deadline, where the origin is one hour from now, so that no
    // timer expires during the run: a heap's cost depends on the order of the deadlines, not
    // on their distance.
    steady_timers(std::size_t n, const workload& w)
        : w_(w)
        , io_(1)
        , origin_(clock_type::now() + std::chrono::hours(1)) {
        items_.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            items_.emplace_back(io_);
        }
    }

    // expires_at() rather than expires_after(): the same work less one clock read, which
    // only favours steady_timer. A pending wait is aborted and its handler queued.
    void arm(std::size_t i) { set(items_[i], origin_ + us(w_.deadline_us[i])); }
    void move_earlier(std::size_t i) { set(items_[i], origin_ + us(w_.earlier_us[i])); }
    void move_later(std::size_t i, std::size_t j) {
        item& it = items_[i];
        set(it, it.timer.expiry() + us(w_.later_us[j]));
    }
    void cancel(std::size_t i) { items_[i].timer.cancel(); }

    void after_op() {
        if (--countdown_ == 0) {
            io_.poll();
            countdown_ = poll_every;
        }
    }

    void flush() {
        io_.poll();
        countdown_ = poll_every;
    }

    // Armed at deadlines spread over the horizon that has just passed, so that one run()
    // takes every timer off the heap and runs every handler.
    void arm_all_due() {
        io_.restart();
        origin_ = clock_type::now() - us(w_.horizon_us) - std::chrono::seconds(1);
        for (std::size_t i = 0; i < items_.size(); ++i) {
            arm(i);
        }
    }

    std::size_t expire_all() { return io_.run(); }

private:
    struct item {
        explicit item(boost::asio::io_context& io)
            : timer(io) {}

        boost::asio::steady_timer timer;
        std::uint64_t fired = 0;
    };

    struct on_timer {
        item* it;

        void operator()(const boost::system::error_code& ec) const {
            if (!ec) {
                ++it->fired;
            }
        }
    };

    static void set(item& it, clock_type::time_point expiry) {
        it.timer.expires_at(expiry);
        it.timer.async_wait(on_timer{&it});
    }

    const workload& w_;
    boost::asio::io_context io_;
    clock_type::time_point origin_;
    std::size_t countdown_ = poll_every;
    std::vector<item> items_; // destroyed before io_
};

// A binary min-heap of (deadline, id, generation) with lazy deletion, in virtual time (µs).
class heap_timers {
public:
    struct entry { // what a user's object holds
        std::int64_t deadline = 0;
        std::uint32_t generation = 0;
        bool armed = false;
    };
    static constexpr std::size_t entry_bytes = sizeof(entry);

    heap_timers(std::size_t n, const workload& w)
        : w_(w)
        , items_(n) {}

    void arm(std::size_t i) {
        item& it = items_[i];
        if (it.armed) {
            ++stale_;
        } else {
            it.armed = true;
            ++live_;
        }
        push(i, origin_ + w_.deadline_us[i]);
    }

    void move_earlier(std::size_t i) { move(i, origin_ + w_.earlier_us[i]); }
    void move_later(std::size_t i, std::size_t j) { move(i, items_[i].deadline + w_.later_us[j]); }

    void cancel(std::size_t i) {
        item& it = items_[i];
        if (!it.armed) {
            return;
        }
        it.armed = false;
        ++it.generation;
        --live_;
        ++stale_;
        compact_if_needed();
    }

    void after_op() noexcept {}
    void flush() noexcept {}

    void arm_all_due() {
        origin_ = now_;
        for (std::size_t i = 0; i < items_.size(); ++i) {
            arm(i);
        }
    }

    std::size_t expire_all() {
        now_ = origin_ + w_.horizon_us + 1;
        std::size_t fired = 0;
        while (!heap_.empty() && heap_.front().deadline <= now_) {
            std::pop_heap(heap_.begin(), heap_.end(), later);
            const record r = heap_.back();
            heap_.pop_back();
            item& it = items_[r.id];
            if (r.generation != it.generation) {
                --stale_;
                continue;
            }
            it.armed = false;
            --live_;
            ++it.fired;
            ++fired;
        }
        return fired;
    }

private:
    struct record {
        std::int64_t deadline;
        std::uint32_t id;
        std::uint32_t generation;
    };
    struct item : entry {
        std::uint64_t fired = 0;
    };

    static bool later(const record& a, const record& b) { return a.deadline > b.deadline; }

    void push(std::size_t i, std::int64_t deadline) {
        item& it = items_[i];
        it.deadline = deadline;
        ++it.generation;
        heap_.push_back({deadline, static_cast<std::uint32_t>(i), it.generation});
        std::push_heap(heap_.begin(), heap_.end(), later);
    }

    void move(std::size_t i, std::int64_t deadline) {
        if (!items_[i].armed) {
            return;
        }
        ++stale_;
        push(i, deadline);
        compact_if_needed();
    }

    // Once stale records outnumber live entries: amortized O(1) per move or cancel.
    void compact_if_needed() {
        if (stale_ <= live_ || stale_ < 64) {
            return;
        }
        std::erase_if(heap_,
                      [this](const record& r) { return r.generation != items_[r.id].generation; });
        std::make_heap(heap_.begin(), heap_.end(), later);
        stale_ = 0;
    }

    const workload& w_;
    std::vector<item> items_;
    std::vector<record> heap_;
    std::size_t live_ = 0;
    std::size_t stale_ = 0;
    std::int64_t origin_ = 0;
    std::int64_t now_ = 0;
};

// std::multimap<deadline, id> with stored iterators, in virtual time (µs).
class multimap_timers {
    using map_type = std::multimap<std::int64_t, std::uint32_t>;

public:
    struct entry { // what a user's object holds
        map_type::iterator it;
        bool armed = false;
    };
    static constexpr std::size_t entry_bytes = sizeof(entry);

    multimap_timers(std::size_t n, const workload& w)
        : w_(w)
        , items_(n) {}

    void arm(std::size_t i) {
        item& it = items_[i];
        const std::int64_t deadline = origin_ + w_.deadline_us[i];
        if (it.armed) {
            reinsert(it, deadline);
            return;
        }
        it.it = map_.emplace(deadline, static_cast<std::uint32_t>(i));
        it.armed = true;
    }

    void move_earlier(std::size_t i) {
        if (items_[i].armed) {
            reinsert(items_[i], origin_ + w_.earlier_us[i]);
        }
    }

    void move_later(std::size_t i, std::size_t j) {
        item& it = items_[i];
        if (it.armed) {
            reinsert(it, it.it->first + w_.later_us[j]);
        }
    }

    void cancel(std::size_t i) {
        item& it = items_[i];
        if (it.armed) {
            map_.erase(it.it);
            it.armed = false;
        }
    }

    void after_op() noexcept {}
    void flush() noexcept {}

    void arm_all_due() {
        origin_ = now_;
        for (std::size_t i = 0; i < items_.size(); ++i) {
            arm(i);
        }
    }

    std::size_t expire_all() {
        now_ = origin_ + w_.horizon_us + 1;
        std::size_t fired = 0;
        while (!map_.empty() && map_.begin()->first <= now_) {
            item& it = items_[map_.begin()->second];
            map_.erase(map_.begin());
            it.armed = false;
            ++it.fired;
            ++fired;
        }
        return fired;
    }

private:
    struct item : entry {
        std::uint64_t fired = 0;
    };

    // Extract and reinsert the node: no allocation.
    void reinsert(item& it, std::int64_t deadline) {
        map_type::node_type node = map_.extract(it.it);
        node.key() = deadline;
        it.it = map_.insert(std::move(node));
    }

    const workload& w_;
    std::vector<item> items_;
    map_type map_;
    std::int64_t origin_ = 0;
    std::int64_t now_ = 0;
};

// --- The benchmarks ------------------------------------------------------------------------

// Arms the last N/10 entries (in memory order, like a burst of new connections) into a
// structure holding the other 90%; they are cancelled outside the timed region.
template <typename Timers>
void bench_arm(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(kind::standard, n);
    Timers timers(n, w);
    const std::size_t first = n - n / batches;
    for (std::size_t i = 0; i < first; ++i) {
        timers.arm(i);
    }
    op_clock clock;
    for (auto _ : state) {
        clock.start();
        for (std::size_t i = first; i < n; ++i) {
            timers.arm(i);
        }
        clock.stop(n - first);
        state.PauseTiming();
        for (std::size_t i = first; i < n; ++i) {
            timers.cancel(i);
        }
        timers.flush();
        state.ResumeTiming();
    }
    clock.report(state);
}

// Pushes back N/10 entries per batch by 5 ms - 5 s (an idle timeout pushed back). Nothing
// to undo: deadlines keep growing, which changes the work of none of the implementations.
template <typename Timers, typename Order>
void bench_move_later(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(kind::standard, n);
    Timers timers(n, w);
    for (std::size_t i = 0; i < n; ++i) {
        timers.arm(i);
    }
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            timers.move_later(Order::at(w, j), j);
            timers.after_op();
        }
        timers.flush();
        clock.stop(s.size);
    }
    clock.report(state);
}

// Moves N/10 entries per batch from their deadline d to a random earlier one (still at least
// 1 s away); re-arms them at d outside the timed region.
template <typename Timers, typename Order>
void bench_move_earlier(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(kind::standard, n);
    Timers timers(n, w);
    for (std::size_t i = 0; i < n; ++i) {
        timers.arm(i);
    }
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            timers.move_earlier(Order::at(w, j));
            timers.after_op();
        }
        timers.flush();
        clock.stop(s.size);
        state.PauseTiming();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            timers.arm(Order::at(w, j));
        }
        timers.flush();
        state.ResumeTiming();
    }
    clock.report(state);
}

// Cancels N/10 entries per batch; re-arms them outside the timed region.
template <typename Timers, typename Order>
void bench_cancel(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(kind::standard, n);
    Timers timers(n, w);
    for (std::size_t i = 0; i < n; ++i) {
        timers.arm(i);
    }
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            timers.cancel(Order::at(w, j));
            timers.after_op();
        }
        timers.flush();
        clock.stop(s.size);
        state.PauseTiming();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            timers.arm(Order::at(w, j));
        }
        timers.flush();
        state.ResumeTiming();
    }
    clock.report(state);
}

// Every entry, armed outside the timed region, fires in one go; ns per entry fired.
template <typename Timers>
void expire_workload(benchmark::State& state, const workload& w) {
    const std::size_t n = w.deadline_us.size();
    Timers timers(n, w);
    timers.arm_all_due();
    op_clock clock;
    for (auto _ : state) {
        clock.start();
        const std::size_t fired = timers.expire_all();
        clock.stop(fired);
        if (fired != n) {
            state.SkipWithError("not every entry fired");
            break;
        }
        state.PauseTiming();
        timers.arm_all_due();
        state.ResumeTiming();
    }
    clock.report(state);
}

template <typename Timers>
void bench_expire(benchmark::State& state, std::size_t n) {
    expire_workload<Timers>(state, get_workload(kind::standard, n));
}

// 1000 entries fired by one catch-up of `lag` seconds; also reports ns per catch-up.
template <typename Timers, kind K>
void bench_catchup(benchmark::State& state, std::size_t lag_s) {
    expire_workload<Timers>(state,
                            get_workload(K, catchup_entries, static_cast<std::int64_t>(lag_s)));
    state.counters["ns_per_catchup"] =
        state.counters["ns_per_op"].value * static_cast<double>(catchup_entries);
}

// --- Floors: what the memory of this machine allows ----------------------------------------
// The same number of 40-byte items as wheel_item, visited in the same random order, doing
// the least any structure must do there:
//   baseline/random_rmw/N     read, add to and store the 8 bytes at offset 16 of item
//                             order[j] (an entry's deadline): the floor of a random move;
//   baseline/pointer_chase/N  follow a pointer at offset 0 from item to item, linked in the
//                             random order: the floor of walking any linked list of cold
//                             entries, as expiry does (the next address is known only once the
//                             current item has arrived, so the misses cannot overlap).

struct plain_item {
    plain_item* next = nullptr;
    void* prev = nullptr;
    std::uint64_t deadline = 0;
    std::uint64_t other[2] = {};
};
static_assert(sizeof(plain_item) == sizeof(wheel_item));

void baseline_random_rmw(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(kind::standard, n);
    std::vector<plain_item> items(n);
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            items[w.order[j]].deadline += w.later_tick[j];
        }
        clock.stop(s.size);
    }
    clock.report(state);
}

void baseline_pointer_chase(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(kind::standard, n);
    std::vector<plain_item> items(n);
    for (std::size_t j = 0; j < n; ++j) {
        items[w.order[j]].next = &items[w.order[(j + 1) % n]];
    }
    op_clock clock;
    plain_item* p = &items[w.order[0]];
    for (auto _ : state) {
        clock.start();
        for (std::size_t j = 0; j < n; ++j) {
            p = p->next;
        }
        benchmark::DoNotOptimize(p);
        clock.stop(n);
    }
    clock.report(state);
}

// Bytes of heap in use, as glibc's malloc counts them (chunks with their headers, and mmaps).
double heap_in_use() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
    const struct mallinfo2 info = mallinfo2();
    return static_cast<double>(info.uordblks + info.hblkhd);
#else
    return 0.0;
#endif
}

// Memory per entry, N entries armed: what the user's object holds (entry_bytes) plus the
// heap the structure allocates for it (glibc's count, malloc's headers included); then the
// same after every entry was moved later once, in random order (the heap's garbage).
template <typename Timers>
void bench_bytes(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(kind::standard, n);
    auto timers = std::make_unique<Timers>(n, w); // the entries, not counted as heap
    timers->arm(0);                               // creates Asio's services and queues
    timers->cancel(0);
    timers->flush();
    const double heap_before = heap_in_use();
    const std::uint64_t allocations_before = timewheel_bench::allocations();
    for (std::size_t i = 0; i < n; ++i) {
        timers->arm(i);
    }
    const double heap_armed = heap_in_use() - heap_before;
    const std::uint64_t allocations = timewheel_bench::allocations() - allocations_before;
    double heap_moved = 0;
    for (std::size_t j = 0; j < n; ++j) {
        timers->move_later(w.order[j], j);
        timers->after_op();
        heap_moved = std::max(heap_moved, (j & 1023) == 0 ? heap_in_use() - heap_before : 0.0);
    }
    timers->flush();
    heap_moved = std::max(heap_moved, heap_in_use() - heap_before);
    for (auto _ : state) {
        benchmark::DoNotOptimize(timers.get());
    }
    const double count = static_cast<double>(n);
    const double entry = static_cast<double>(Timers::entry_bytes);
    state.counters["entry_bytes"] = entry;
    state.counters["heap_bytes_per_entry"] = heap_armed / count;
    state.counters["bytes_per_entry"] = entry + heap_armed / count;
    state.counters["bytes_per_entry_after_moves"] = entry + heap_moved / count;
    state.counters["allocs_per_entry"] = static_cast<double>(allocations) / count;
}

// --- Registration -------------------------------------------------------------------------

using bench_fn = void (*)(benchmark::State&, std::size_t);

struct implementation {
    const char* name;
    bench_fn arm, move_later, move_later_armorder, move_earlier, move_earlier_armorder, cancel,
        cancel_armorder, expire, catchup, bytes;
};

template <typename Timers>
constexpr implementation implementation_of(const char* name) {
    return {name,
            bench_arm<Timers>,
            bench_move_later<Timers, random_order>,
            bench_move_later<Timers, arm_order>,
            bench_move_earlier<Timers, random_order>,
            bench_move_earlier<Timers, arm_order>,
            bench_cancel<Timers, random_order>,
            bench_cancel<Timers, arm_order>,
            bench_expire<Timers>,
            bench_catchup<Timers, kind::catchup>,
            bench_bytes<Timers>};
}

void add(const std::string& name, bench_fn fn, std::size_t n) {
    benchmark::RegisterBenchmark(name.c_str(), [fn, n](benchmark::State& state) {
        fn(state, n);
    })->Unit(benchmark::kNanosecond);
}

[[maybe_unused]] const bool registered = [] {
    const implementation impls[] = {
        implementation_of<wheel_timers>("wheel"),
        implementation_of<steady_timers>("steady_timer"),
        implementation_of<heap_timers>("heap"),
        implementation_of<multimap_timers>("multimap"),
    };
    const std::pair<const char*, bench_fn implementation::*> ops[] = {
        {"arm", &implementation::arm},
        {"move_later", &implementation::move_later},
        {"move_later_armorder", &implementation::move_later_armorder},
        {"move_earlier", &implementation::move_earlier},
        {"move_earlier_armorder", &implementation::move_earlier_armorder},
        {"cancel", &implementation::cancel},
        {"cancel_armorder", &implementation::cancel_armorder},
        {"expire", &implementation::expire},
    };
    for (const auto& [op, member] : ops) {
        for (const std::size_t n : {1'000, 10'000, 100'000, 1'000'000, 10'000'000}) {
            for (const implementation& impl : impls) {
                if (n == 10'000'000 && std::string_view(impl.name) == "multimap") {
                    continue; // a minute to fill per benchmark: see bench/README.md
                }
                add(std::string(impl.name) + "/" + op + "/" + std::to_string(n), impl.*member, n);
            }
        }
    }
    for (const std::size_t n : {1'000, 10'000, 100'000, 1'000'000, 10'000'000}) {
        add("baseline/random_rmw/" + std::to_string(n), baseline_random_rmw, n);
        add("baseline/pointer_chase/" + std::to_string(n), baseline_pointer_chase, n);
    }
    constexpr std::size_t second = 1, hour = 3600, day = 86'400, year = 365 * day;
    for (const std::size_t lag : {second, hour, day, year}) {
        for (const implementation& impl : impls) {
            add(std::string(impl.name) + "/catchup/" + std::to_string(lag), impl.catchup, lag);
        }
        add("wheel/catchup_spread/" + std::to_string(lag),
            bench_catchup<wheel_timers, kind::catchup_spread>, lag);
    }
    for (const implementation& impl : impls) {
        add(std::string(impl.name) + "/bytes_per_entry/1000000", impl.bytes, 1'000'000);
    }
    return true;
}();

} // namespace
