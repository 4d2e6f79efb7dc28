//
// bench/wheel_bench.cpp
//
// The core wheel against core-shaped ways of keeping timers, and boost::asio::steady_timer,
// on the same data in the same run, by the method of issue 12 (bench/support/workload.hpp):
// N live timers with timeouts uniform over 1-60 s at 1 ms ticks, armed in one random order,
// visited in another, placed in memory in a third. Names: <implementation>/<operation>/<N>,
// implementation `wheel`, `heap`, `multimap` or `steady_timer`:
//
//   arm           arm N/10 fresh timers (cancelled N/2 operations earlier) into N live ones
//   cancel        cancel N/10 live timers in the visit order
//   expire        N timers armed in random order fire in one advance over the minute
//   expire_tick   the same with one advance per 1 ms tick (60,000 advances; not
//                 steady_timer, whose clock is real)
//   move_later    the idle loop: in the visit order, each timer is moved to now + its
//                 timeout, and time advances by one tick every N/500 moves (50 ticks per
//                 batch), so that the wheel's deferred re-filing is paid inside the batch
//                 (and the heap's garbage)
//   catchup/<lag seconds>       1000 timers (1-60 s) fired by one catch-up of 60 s, 1 h,
//                               1 day or 1 year (wheel, heap, multimap)
//   bytes_per_entry/1000000     memory per pending timer (its wait operation included)
//                               and allocations per arm
//   baseline/random_rmw/N, baseline/pointer_chase/N   what the memory allows
//
// at N = 1e3, 1e4, 1e5, 1e6, and 1e7 for `wheel` and `heap` (arm, cancel, expire,
// move_later). One benchmark iteration is a batch (N/10 operations; all N for expire). Each
// reports ns_per_op (wall ns per operation in the timed batches), allocs_per_op and
// items_per_second (bench/support/op_clock.hpp). bench/README.md describes each method,
// docs/performance.md the results.
//
// The implementations:
//   wheel         timewheel::wheel, 1 tick = 1 ms, exact timers; the handler touches the
//                 user's object.
//   heap          a binary min-heap (std::vector) of 16-byte records (deadline, index,
//                 generation) with lazy deletion: cancel bumps the timer's generation, a move
//                 bumps it and pushes a new record; stale records are dropped when they reach
//                 the top or by a compaction once they outnumber the live timers, inside the
//                 operation that crosses that line.
//   multimap      std::multimap<deadline, item*>, each timer keeping its iterator; a move
//                 extracts the node and reinserts it (no allocation), an arm allocates.
//   steady_timer  one boost::asio::steady_timer per timer on one io_context (concurrency
//                 hint 1); arm and move are expires_at() + async_wait(); aborted handlers run
//                 in io_context::poll() every 128 operations and at the end of each batch,
//                 inside the timed region (bench/support/handler_poll.hpp says why; the
//                 Asio face's benchmarks, wheel_timer_bench.cpp, do the same).
//

#include "support/handler_poll.hpp"
#include "support/op_clock.hpp"
#include "support/workload.hpp"

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
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

using timewheel::tick_type;
using timewheel_bench::op_clock;
using timewheel_bench::workload;
using clock_type = std::chrono::steady_clock;
using us = std::chrono::microseconds;

// The idle loop advances time by this many 1 ms ticks per batch: a pass over the live
// timers (10 batches) spans 500 ms, less than the shortest timeout, so nothing fires.
constexpr tick_type idle_ticks_per_batch = 50;

// Ticks of the expire benchmarks: every timeout is at most 60 s.
constexpr tick_type expire_ticks = 60'001;

// --- The implementations ------------------------------------------------------------------
// Each keeps the workload's pool of timers (scattered in memory) and a virtual time in
// 1 ms ticks, and offers:
//   arm(item, timeout_tick)   arm (or re-arm) at now + timeout
//   cancel(item)
//   after_op(), flush()        run what the operations queued (steady_timer)
//   advance(tick)              move time to `tick`, firing what is due; returns fired
//   entry_bytes                what a user's object holds per timer

struct wheel_item : timewheel::wheel_entry {
    std::uint64_t fired = 0;
};

class wheel_timers {
public:
    using item = wheel_item;
    static constexpr std::size_t entry_bytes = sizeof(timewheel::wheel_entry);
    static constexpr bool has_tick_expiry = true;

    explicit wheel_timers(const workload& w)
        : pool_(w, [] { return item(); }) {}

    timewheel_bench::scattered<item>& pool() { return pool_; }
    tick_type now() const { return wheel_.now(); }

    void arm(item& it, tick_type timeout) { wheel_.arm(it, wheel_.now() + timeout); }
    void cancel(item& it) { wheel_.cancel(it); }
    void move_later(item& it, tick_type timeout) { wheel_.move(it, wheel_.now() + timeout); }
    void after_op() noexcept {}
    void flush() noexcept {}

    std::size_t advance(tick_type to) {
        return wheel_.advance(to, [](timewheel::wheel_entry& e) { ++static_cast<item&>(e).fired; });
    }

private:
    timewheel::wheel wheel_;
    timewheel_bench::scattered<item> pool_; // destroyed before the wheel
};

// A binary min-heap with lazy deletion, in virtual time (ticks).
class heap_timers {
public:
    struct entry { // what a user's object holds
        std::int64_t deadline = 0;
        std::uint32_t generation = 0;
        bool armed = false;
    };
    struct item : entry {
        std::uint64_t fired = 0;
    };
    static constexpr std::size_t entry_bytes = sizeof(entry);
    static constexpr bool has_tick_expiry = true;

    explicit heap_timers(const workload& w)
        : pool_(w, [] { return item(); }) {}

    timewheel_bench::scattered<item>& pool() { return pool_; }
    tick_type now() const { return static_cast<tick_type>(now_); }

    void arm(item& it, tick_type timeout) {
        if (it.armed) {
            ++stale_;
        } else {
            it.armed = true;
            ++live_;
        }
        push(it, now_ + static_cast<std::int64_t>(timeout));
        compact_if_needed();
    }

    void move_later(item& it, tick_type timeout) {
        if (it.armed) {
            ++stale_;
            push(it, now_ + static_cast<std::int64_t>(timeout));
            compact_if_needed();
        }
    }

    void cancel(item& it) {
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

    std::size_t advance(tick_type to) {
        now_ = std::max(now_, static_cast<std::int64_t>(to));
        std::size_t fired = 0;
        while (!heap_.empty() && heap_.front().deadline <= now_) {
            std::pop_heap(heap_.begin(), heap_.end(), later);
            const record r = heap_.back();
            heap_.pop_back();
            item& it = pool_.data()[r.index];
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
        std::uint32_t index;
        std::uint32_t generation;
    };

    static bool later(const record& a, const record& b) { return a.deadline > b.deadline; }

    void push(item& it, std::int64_t deadline) {
        it.deadline = deadline;
        ++it.generation;
        heap_.push_back({deadline, static_cast<std::uint32_t>(&it - pool_.data()), it.generation});
        std::push_heap(heap_.begin(), heap_.end(), later);
    }

    // Once stale records outnumber live timers: amortized O(1) per move or cancel.
    void compact_if_needed() {
        if (stale_ <= live_ || stale_ < 64) {
            return;
        }
        std::erase_if(heap_, [this](const record& r) {
            return r.generation != pool_.data()[r.index].generation;
        });
        std::make_heap(heap_.begin(), heap_.end(), later);
        stale_ = 0;
    }

    timewheel_bench::scattered<item> pool_;
    std::vector<record> heap_;
    std::size_t live_ = 0;
    std::size_t stale_ = 0;
    std::int64_t now_ = 0;
};

// std::multimap<deadline, item*> with stored iterators, in virtual time (ticks).
class multimap_timers {
public:
    struct item;
    using map_type = std::multimap<std::int64_t, item*>;
    struct entry { // what a user's object holds
        map_type::iterator it;
        bool armed = false;
    };
    struct item : entry {
        std::uint64_t fired = 0;
    };
    static constexpr std::size_t entry_bytes = sizeof(entry);
    static constexpr bool has_tick_expiry = true;

    explicit multimap_timers(const workload& w)
        : pool_(w, [] { return item(); }) {}

    timewheel_bench::scattered<item>& pool() { return pool_; }
    tick_type now() const { return static_cast<tick_type>(now_); }

    void arm(item& it, tick_type timeout) {
        const std::int64_t deadline = now_ + static_cast<std::int64_t>(timeout);
        if (it.armed) {
            reinsert(it, deadline);
            return;
        }
        it.it = map_.emplace(deadline, &it);
        it.armed = true;
    }

    void move_later(item& it, tick_type timeout) {
        if (it.armed) {
            reinsert(it, now_ + static_cast<std::int64_t>(timeout));
        }
    }

    void cancel(item& it) {
        if (it.armed) {
            map_.erase(it.it);
            it.armed = false;
        }
    }

    void after_op() noexcept {}
    void flush() noexcept {}

    std::size_t advance(tick_type to) {
        now_ = std::max(now_, static_cast<std::int64_t>(to));
        std::size_t fired = 0;
        while (!map_.empty() && map_.begin()->first <= now_) {
            item& it = *map_.begin()->second;
            map_.erase(map_.begin());
            it.armed = false;
            ++it.fired;
            ++fired;
        }
        return fired;
    }

    ~multimap_timers() { map_.clear(); } // before the pool

private:
    // Extract and reinsert the node: no allocation.
    void reinsert(item& it, std::int64_t deadline) {
        map_type::node_type node = map_.extract(it.it);
        node.key() = deadline;
        it.it = map_.insert(std::move(node));
    }

    timewheel_bench::scattered<item> pool_;
    map_type map_;
    std::int64_t now_ = 0;
};

// boost::asio::steady_timer on one single-threaded io_context. Virtual time maps to real
// time as origin + ticks; the origin is an hour ahead so that nothing fires by accident in
// arm, cancel and move_later (a binary heap's work depends on the order of the deadlines,
// not on their distance). advance() only runs what is ready (aborted handlers); only
// expire() makes timers really due.
class steady_timers {
public:
    struct item {
        explicit item(boost::asio::io_context& io)
            : timer(io) {}

        boost::asio::steady_timer timer;
        std::uint64_t fired = 0;
    };
    static constexpr std::size_t entry_bytes = sizeof(boost::asio::steady_timer);
    static constexpr bool has_tick_expiry = false;

    explicit steady_timers(const workload& w)
        : io_(1)
        , origin_(clock_type::now() + std::chrono::hours(1))
        , pool_(w, [this] { return item(io_); }) {}

    ~steady_timers() {
        io_.stop(); // pending handlers are destroyed with io_, after the timers
    }

    timewheel_bench::scattered<item>& pool() { return pool_; }
    tick_type now() const { return now_; }

    void arm(item& it, tick_type timeout) {
        set(it, origin_ + std::chrono::milliseconds(now_ + timeout));
    }
    void move_later(item& it, tick_type timeout) { arm(it, timeout); }
    void cancel(item& it) { it.timer.cancel(); }

    void after_op() { poll_.after_op(); }
    void flush() { poll_.flush(); }

    std::size_t advance(tick_type to) {
        now_ = std::max(now_, to);
        flush();
        return 0;
    }

    // For expire only: from now on, virtual time `now()` is one minute ago in real time, so
    // that a run() after arming every timer at now() + timeout finds them all due.
    void make_due() {
        io_.restart();
        origin_ = clock_type::now() - std::chrono::milliseconds(now_ + expire_ticks);
    }
    std::size_t expire() { return io_.run(); }

private:
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

    boost::asio::io_context io_;
    clock_type::time_point origin_;
    tick_type now_ = 0;
    timewheel_bench::handler_poll poll_{io_};
    timewheel_bench::scattered<item> pool_; // destroyed before io_
};

// --- The benchmarks ------------------------------------------------------------------------

// Arms N/10 fresh timers (cancelled five batches earlier) into N live ones, in the arm
// order; untimed, cancels the N/10 armed longest ago.
template <typename Timers>
void bench_arm(benchmark::State& state, std::size_t n) {
    const workload& w = timewheel_bench::get_workload(n);
    Timers timers(w);
    const auto& items = timers.pool().by_arm();
    const std::vector<tick_type> timeouts = w.gather(w.timeout_tick, w.arm_order, true);
    for (std::size_t j = 0; j < n; ++j) {
        timers.arm(*items[j], timeouts[j]);
    }
    timers.flush();
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const std::size_t first = w.fresh_arm(pass);
        clock.start();
        for (std::size_t j = first; j < first + w.batch_size(); ++j) {
            timers.arm(*items[j], timeouts[j]);
            timers.after_op();
        }
        timers.flush();
        clock.stop(w.batch_size());
        state.PauseTiming();
        const std::size_t oldest = w.fresh_cancel(pass);
        for (std::size_t j = oldest; j < oldest + w.batch_size(); ++j) {
            timers.cancel(*items[j]);
        }
        timers.flush();
        ++pass;
        state.ResumeTiming();
    }
    clock.report(state);
}

// Arms the live set in the arm order; `flush` runs what that queued (not when the timers
// are already due: steady_timer's expire must find them all for its run()).
void arm_live(auto& timers, const workload& w, bool flush = true) {
    const auto& items = timers.pool().by_arm();
    for (std::size_t j = 0; j < w.live; ++j) {
        timers.arm(*items[j], w.timeout_tick[w.arm_order[j]]);
    }
    if (flush) {
        timers.flush();
    }
}

// Cancels N/10 live timers in the visit order; untimed, re-arms them in the arm order.
template <typename Timers>
void bench_cancel(benchmark::State& state, std::size_t n) {
    const workload& w = timewheel_bench::get_workload(n);
    Timers timers(w);
    arm_live(timers, w);
    const auto& visit = timers.pool().by_visit();
    const auto& undo = timers.pool().by_undo();
    const std::vector<tick_type> undo_timeouts = w.gather(w.timeout_tick, w.undo_order);
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const std::size_t first = w.visit_slice(pass++);
        clock.start();
        for (std::size_t j = first; j < first + w.batch_size(); ++j) {
            timers.cancel(*visit[j]);
            timers.after_op();
        }
        timers.flush();
        clock.stop(w.batch_size());
        state.PauseTiming();
        for (std::size_t j = first; j < first + w.batch_size(); ++j) {
            timers.arm(*undo[j], undo_timeouts[j]);
        }
        timers.flush();
        state.ResumeTiming();
    }
    clock.report(state);
}

// The idle loop: moves N/10 timers per batch, in the visit order, to now + their timeout,
// advancing time by one tick every batch_size / 50 moves.
template <typename Timers>
void bench_move_later(benchmark::State& state, std::size_t n) {
    const workload& w = timewheel_bench::get_workload(n);
    Timers timers(w);
    arm_live(timers, w);
    const auto& visit = timers.pool().by_visit();
    const std::vector<tick_type> timeouts = w.gather(w.timeout_tick, w.visit_order);
    const std::size_t per_tick = std::max<std::size_t>(1, w.batch_size() / idle_ticks_per_batch);
    op_clock clock;
    std::size_t pass = 0;
    std::size_t fired = 0;
    for (auto _ : state) {
        const std::size_t first = w.visit_slice(pass++);
        clock.start();
        for (std::size_t j = first; j < first + w.batch_size(); ++j) {
            timers.move_later(*visit[j], timeouts[j]);
            timers.after_op();
            if ((j - first) % per_tick == per_tick - 1) {
                fired += timers.advance(timers.now() + 1);
            }
        }
        timers.flush();
        clock.stop(w.batch_size());
    }
    if (fired != 0) {
        state.SkipWithError("a timer fired in the idle loop");
    }
    clock.report(state);
}

// All N live timers, armed in the arm order at now + timeout (untimed), fire in one advance
// over the minute, or in one advance per tick; ns per timer fired.
template <typename Timers, bool PerTick>
void bench_expire(benchmark::State& state, std::size_t n) {
    const workload& w = timewheel_bench::get_workload(n);
    Timers timers(w);
    op_clock clock;
    for (auto _ : state) {
        state.PauseTiming();
        if constexpr (requires { timers.make_due(); }) {
            timers.make_due();
        }
        arm_live(timers, w, false);
        const tick_type start = timers.now();
        state.ResumeTiming();
        clock.start();
        std::size_t fired = 0;
        if constexpr (requires { timers.expire(); }) {
            fired = timers.expire();
        } else if constexpr (PerTick) {
            for (tick_type t = start + 1; t <= start + expire_ticks; ++t) {
                fired += timers.advance(t);
            }
        } else {
            fired = timers.advance(start + expire_ticks);
        }
        clock.stop(fired);
        if (fired != n) {
            state.SkipWithError("not every timer fired");
            break;
        }
    }
    clock.report(state);
}

// 1000 timers (1-60 s) fired by one catch-up of `lag_s` seconds (the thread was blocked);
// also reports ns per catch-up.
template <typename Timers>
void bench_catchup(benchmark::State& state, std::size_t lag_s) {
    const workload& w = timewheel_bench::get_workload(1000);
    Timers timers(w);
    op_clock clock;
    for (auto _ : state) {
        state.PauseTiming();
        arm_live(timers, w);
        const tick_type start = timers.now();
        state.ResumeTiming();
        clock.start();
        const std::size_t fired = timers.advance(start + lag_s * 1000);
        clock.stop(fired);
        if (fired != w.live) {
            state.SkipWithError("not every timer fired");
            break;
        }
    }
    clock.report(state);
    state.counters["ns_per_catchup"] = clock.ns_per_op() * static_cast<double>(w.live);
}

// --- Floors: what the memory of this machine allows ----------------------------------------
// 40-byte items (a wheel_item) scattered like the timers, visited in the visit order:
//   baseline/random_rmw/N     read, add to and store 8 bytes of each item: a random
//                             move's floor;
//   baseline/pointer_chase/N  follow a pointer from item to item, linked in the arm order:
//                             the floor of walking any linked list of cold timers.

struct plain_item {
    plain_item* next = nullptr;
    void* prev = nullptr;
    std::uint64_t deadline = 0;
    std::uint64_t other[2] = {};
};
static_assert(sizeof(plain_item) == sizeof(wheel_item));

void baseline_random_rmw(benchmark::State& state, std::size_t n) {
    const workload& w = timewheel_bench::get_workload(n);
    timewheel_bench::scattered<plain_item> pool(w, [] { return plain_item(); });
    const std::vector<tick_type> timeouts = w.gather(w.timeout_tick, w.visit_order);
    const auto& visit = pool.by_visit();
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const std::size_t first = w.visit_slice(pass++);
        clock.start();
        for (std::size_t j = first; j < first + w.batch_size(); ++j) {
            visit[j]->deadline += timeouts[j];
        }
        clock.stop(w.batch_size());
    }
    clock.report(state);
}

void baseline_pointer_chase(benchmark::State& state, std::size_t n) {
    const workload& w = timewheel_bench::get_workload(n);
    timewheel_bench::scattered<plain_item> pool(w, [] { return plain_item(); });
    const auto& items = pool.by_arm();
    for (std::size_t j = 0; j < n; ++j) {
        items[j]->next = items[(j + 1) % n];
    }
    op_clock clock;
    plain_item* p = items[0];
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

// Memory per pending timer, N armed: what the user's object holds (entry_bytes) plus the
// heap the structure allocates for it (its wait operation, its node or record, malloc's
// headers included); then the same after every timer was moved later once (the garbage).
template <typename Timers>
void bench_bytes(benchmark::State& state, std::size_t n) {
    const workload& w = timewheel_bench::get_workload(n);
    auto timers = std::make_unique<Timers>(w);   // the objects, not counted as heap
    timers->arm(*timers->pool().by_arm()[0], 1); // creates Asio's services and queues
    timers->cancel(*timers->pool().by_arm()[0]);
    timers->flush();
    const double heap_before = heap_in_use();
    const std::uint64_t allocations_before = timewheel_bench::allocations();
    arm_live(*timers, w);
    const double heap_armed = heap_in_use() - heap_before;
    const std::uint64_t allocations = timewheel_bench::allocations() - allocations_before;
    double heap_moved = 0;
    const auto& visit = timers->pool().by_visit();
    for (std::size_t j = 0; j < n; ++j) {
        timers->move_later(*visit[j], w.timeout_tick[w.visit_order[j]] + 1);
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

void add(const std::string& name, bench_fn fn, std::size_t n) {
    benchmark::RegisterBenchmark(name.c_str(), [fn, n](benchmark::State& state) {
        fn(state, n);
    })->Unit(benchmark::kNanosecond);
}

template <typename Timers>
void add_implementation(const char* impl, bool large) {
    const std::string name(impl);
    std::vector<std::size_t> sizes = {1'000, 10'000, 100'000, 1'000'000};
    if (large) {
        sizes.push_back(10'000'000);
    }
    for (const std::size_t n : sizes) {
        const std::string at = std::to_string(n);
        add(name + "/arm/" + at, bench_arm<Timers>, n);
        add(name + "/cancel/" + at, bench_cancel<Timers>, n);
        add(name + "/expire/" + at, bench_expire<Timers, false>, n);
        if (Timers::has_tick_expiry) {
            add(name + "/expire_tick/" + at, bench_expire<Timers, true>, n);
        }
        add(name + "/move_later/" + at, bench_move_later<Timers>, n);
    }
    add(name + "/bytes_per_entry/1000000", bench_bytes<Timers>, 1'000'000);
}

[[maybe_unused]] const bool registered = [] {
    add_implementation<wheel_timers>("wheel", true);
    add_implementation<heap_timers>("heap", true);
    add_implementation<multimap_timers>("multimap", false);
    add_implementation<steady_timers>("steady_timer", false);
    constexpr std::size_t minute = 60, hour = 3600, day = 86'400, year = 365 * day;
    for (const std::size_t lag : {minute, hour, day, year}) {
        const std::string at = "/catchup/" + std::to_string(lag);
        add("wheel" + at, bench_catchup<wheel_timers>, lag);
        add("heap" + at, bench_catchup<heap_timers>, lag);
        add("multimap" + at, bench_catchup<multimap_timers>, lag);
    }
    for (const std::size_t n : {1'000, 10'000, 100'000, 1'000'000, 10'000'000}) {
        add("baseline/random_rmw/" + std::to_string(n), baseline_random_rmw, n);
        add("baseline/pointer_chase/" + std::to_string(n), baseline_pointer_chase, n);
    }
    return true;
}();

} // namespace
