//
// bench/wheel_bench.cpp
//
// The core wheel against boost::asio::steady_timer: arm, move_later, move_earlier, cancel
// and expire, at 10k, 100k and 1M live entries whose deadlines are spread uniformly at
// random over 1-60 s (1 tick = 1 ms for the wheel). Names: <implementation>/<op>/<entries>.
//
// One benchmark iteration is a batch of operations (N/10 for arm, moves and cancel, N for
// expire). Each benchmark reports
//   ns_per_op        nanoseconds of wall time per operation, timed around the batches only;
//   items_per_second operations per second of CPU time (Google Benchmark's own).
// bench/README.md describes the method of each benchmark.
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
#include <random>
#include <string>
#include <utility>
#include <vector>

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

// The same deadlines, moves and visiting order for both implementations.
struct workload {
    std::vector<std::int64_t> deadline_us; // per entry: uniform over [1 s, 60 s]
    std::vector<std::int64_t> earlier_us;  // per entry: uniform over [1 s, deadline)
    std::vector<std::int64_t> later_us;    // per visit: uniform over [5 ms, 5 s]
    std::vector<std::uint32_t> order;      // a random permutation: the visiting order
    // The same in wheel ticks (1 ms), rounded up.
    std::vector<tick_type> deadline_tick;
    std::vector<tick_type> earlier_tick;
    std::vector<tick_type> later_tick;
};

constexpr tick_type to_ticks(std::int64_t micros) {
    return static_cast<tick_type>((micros + 999) / 1000);
}

const workload& get_workload(std::size_t n) {
    static std::map<std::size_t, workload> cache;
    auto [it, inserted] = cache.try_emplace(n);
    workload& w = it->second;
    if (!inserted) {
        return w;
    }
    std::mt19937_64 rng(20240601 + n);
    std::uniform_int_distribution<std::int64_t> deadline(1'000'000, 60'000'000);
    std::uniform_int_distribution<std::int64_t> later(5'000, 5'000'000);
    w.deadline_us.resize(n);
    w.earlier_us.resize(n);
    w.later_us.resize(n);
    w.order.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        w.deadline_us[i] = deadline(rng);
        w.earlier_us[i] =
            std::uniform_int_distribution<std::int64_t>(1'000'000, w.deadline_us[i] - 1)(rng);
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

// Wall time around the timed batches only, and the operations they performed.
class op_clock {
public:
    void start() noexcept { start_ = clock_type::now(); }

    void stop(std::size_t ops) noexcept {
        benchmark::ClobberMemory();
        elapsed_ += clock_type::now() - start_;
        ops_ += ops;
    }

    void report(benchmark::State& state) const {
        state.SetItemsProcessed(static_cast<std::int64_t>(ops_));
        state.counters["ns_per_op"] =
            ops_ == 0 ? 0.0
                      : std::chrono::duration<double, std::nano>(elapsed_).count() /
                            static_cast<double>(ops_);
    }

private:
    clock_type::time_point start_;
    clock_type::duration elapsed_{};
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

// --- timewheel::wheel ---------------------------------------------------------------------

struct wheel_item : timewheel::wheel_entry {
    std::uint64_t fired = 0;
};

// Arms the last N/10 entries (in memory order, like a burst of new connections) into a wheel
// holding the other 90%; they are cancelled outside the timed region.
void wheel_arm(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    timewheel::wheel wheel;
    std::vector<wheel_item> items(n);
    const std::size_t first = n - n / batches;
    for (std::size_t i = 0; i < first; ++i) {
        wheel.arm(items[i], w.deadline_tick[i]);
    }
    op_clock clock;
    for (auto _ : state) {
        clock.start();
        for (std::size_t i = first; i < n; ++i) {
            wheel.arm(items[i], w.deadline_tick[i]);
        }
        clock.stop(n - first);
        state.PauseTiming();
        for (std::size_t i = first; i < n; ++i) {
            wheel.cancel(items[i]);
        }
        state.ResumeTiming();
    }
    clock.report(state);
}

// Pushes back N/10 random entries per batch by 5 ms - 5 s. Nothing to undo.
void wheel_move_later(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    timewheel::wheel wheel;
    std::vector<wheel_item> items(n);
    for (std::size_t i = 0; i < n; ++i) {
        wheel.arm(items[i], w.deadline_tick[i]);
    }
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            wheel_item& item = items[w.order[j]];
            wheel.move(item, item.deadline() + w.later_tick[j]);
        }
        clock.stop(s.size);
    }
    clock.report(state);
}

// Moves N/10 random entries per batch from their deadline to a random earlier one (still at
// least 1 s away); re-arms them at their deadline outside the timed region.
void wheel_move_earlier(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    timewheel::wheel wheel;
    std::vector<wheel_item> items(n);
    for (std::size_t i = 0; i < n; ++i) {
        wheel.arm(items[i], w.deadline_tick[i]);
    }
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            const std::uint32_t i = w.order[j];
            wheel.move(items[i], w.earlier_tick[i]);
        }
        clock.stop(s.size);
        state.PauseTiming();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            const std::uint32_t i = w.order[j];
            wheel.arm(items[i], w.deadline_tick[i]);
        }
        state.ResumeTiming();
    }
    clock.report(state);
}

// Cancels N/10 random entries per batch; re-arms them outside the timed region.
void wheel_cancel(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    timewheel::wheel wheel;
    std::vector<wheel_item> items(n);
    for (std::size_t i = 0; i < n; ++i) {
        wheel.arm(items[i], w.deadline_tick[i]);
    }
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            wheel.cancel(items[w.order[j]]);
        }
        clock.stop(s.size);
        state.PauseTiming();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            const std::uint32_t i = w.order[j];
            wheel.arm(items[i], w.deadline_tick[i]);
        }
        state.ResumeTiming();
    }
    clock.report(state);
}

// All N entries, armed over now + 1-60 s outside the timed region, fire in one advance() to
// now + 60.001 s; the handler touches the user's object.
void wheel_expire(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    timewheel::wheel wheel;
    std::vector<wheel_item> items(n);
    const auto arm_all = [&] {
        const tick_type base = wheel.now();
        for (std::size_t i = 0; i < n; ++i) {
            wheel.arm(items[i], base + w.deadline_tick[i]);
        }
    };
    arm_all();
    op_clock clock;
    for (auto _ : state) {
        clock.start();
        const std::size_t fired = wheel.advance(
            wheel.now() + 60'001, [](auto& entry) { ++static_cast<wheel_item&>(entry).fired; });
        clock.stop(fired);
        if (fired != n) {
            state.SkipWithError("not every entry fired");
            break;
        }
        state.PauseTiming();
        arm_all();
        state.ResumeTiming();
    }
    clock.report(state);
}

// --- boost::asio::steady_timer ------------------------------------------------------------

struct timer_item {
    explicit timer_item(boost::asio::io_context& io)
        : timer(io) {}

    boost::asio::steady_timer timer;
    std::uint64_t fired = 0;
};

struct on_timer {
    timer_item* item;

    void operator()(const boost::system::error_code& ec) const {
        if (!ec) {
            ++item->fired;
        }
    }
};

// N timers on one single-threaded io_context. Deadlines are origin + deadline_us, where the
// origin is one hour from now, so that no timer expires during the run: a heap's cost
// depends on the order of the deadlines, not on their distance.
struct timer_set {
    explicit timer_set(std::size_t n)
        : io(1)
        , origin(clock_type::now() + std::chrono::hours(1)) {
        items.reserve(n);
        for (std::size_t i = 0; i < n; ++i) {
            items.emplace_back(io);
        }
    }

    // expires_at() rather than expires_after(): the same work less one clock read, which
    // only favours steady_timer. A pending wait is aborted and its handler queued.
    void arm(std::size_t i, std::int64_t micros) {
        timer_item& item = items[i];
        item.timer.expires_at(origin + us(micros));
        item.timer.async_wait(on_timer{&item});
    }

    boost::asio::io_context io;
    clock_type::time_point origin;
    std::vector<timer_item> items; // destroyed before io
};

// Polls every poll_every calls, then once at the end of the batch.
class poller {
public:
    explicit poller(boost::asio::io_context& io)
        : io_(io) {}

    void tick() {
        if (--countdown_ == 0) {
            io_.poll();
            countdown_ = poll_every;
        }
    }

    void finish() {
        io_.poll();
        countdown_ = poll_every;
    }

private:
    boost::asio::io_context& io_;
    std::size_t countdown_ = poll_every;
};

void steady_timer_arm(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    timer_set set(n);
    const std::size_t first = n - n / batches;
    for (std::size_t i = 0; i < first; ++i) {
        set.arm(i, w.deadline_us[i]);
    }
    op_clock clock;
    for (auto _ : state) {
        clock.start();
        for (std::size_t i = first; i < n; ++i) {
            set.arm(i, w.deadline_us[i]);
        }
        clock.stop(n - first);
        state.PauseTiming();
        for (std::size_t i = first; i < n; ++i) {
            set.items[i].timer.cancel();
        }
        set.io.poll();
        state.ResumeTiming();
    }
    clock.report(state);
}

void steady_timer_move_later(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    timer_set set(n);
    for (std::size_t i = 0; i < n; ++i) {
        set.arm(i, w.deadline_us[i]);
    }
    poller poll(set.io);
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            timer_item& item = set.items[w.order[j]];
            item.timer.expires_at(item.timer.expiry() + us(w.later_us[j]));
            item.timer.async_wait(on_timer{&item});
            poll.tick();
        }
        poll.finish();
        clock.stop(s.size);
    }
    clock.report(state);
}

void steady_timer_move_earlier(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    timer_set set(n);
    for (std::size_t i = 0; i < n; ++i) {
        set.arm(i, w.deadline_us[i]);
    }
    poller poll(set.io);
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            const std::uint32_t i = w.order[j];
            set.arm(i, w.earlier_us[i]);
            poll.tick();
        }
        poll.finish();
        clock.stop(s.size);
        state.PauseTiming();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            const std::uint32_t i = w.order[j];
            set.arm(i, w.deadline_us[i]);
        }
        set.io.poll();
        state.ResumeTiming();
    }
    clock.report(state);
}

void steady_timer_cancel(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    timer_set set(n);
    for (std::size_t i = 0; i < n; ++i) {
        set.arm(i, w.deadline_us[i]);
    }
    poller poll(set.io);
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            set.items[w.order[j]].timer.cancel();
            poll.tick();
        }
        poll.finish();
        clock.stop(s.size);
        state.PauseTiming();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            const std::uint32_t i = w.order[j];
            set.arm(i, w.deadline_us[i]);
        }
        state.ResumeTiming();
    }
    clock.report(state);
}

// All N timers are armed outside the timed region at deadlines spread over the 1-60 s
// before now (already passed, in the same random order as the other benchmarks), so one
// run() collects them from the heap and runs every handler.
void steady_timer_expire(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    timer_set set(n);
    const auto arm_all = [&] {
        const clock_type::time_point base = clock_type::now() - std::chrono::seconds(61);
        for (std::size_t i = 0; i < n; ++i) {
            timer_item& item = set.items[i];
            item.timer.expires_at(base + us(w.deadline_us[i]));
            item.timer.async_wait(on_timer{&item});
        }
    };
    arm_all();
    op_clock clock;
    for (auto _ : state) {
        clock.start();
        const std::size_t fired = set.io.run();
        clock.stop(fired);
        if (fired != n) {
            state.SkipWithError("not every timer fired");
            break;
        }
        state.PauseTiming();
        set.io.restart();
        arm_all();
        state.ResumeTiming();
    }
    clock.report(state);
}

// --- registration -------------------------------------------------------------------------

using bench_fn = void (*)(benchmark::State&, std::size_t);

struct implementation {
    const char* name;
    bench_fn arm, move_later, move_earlier, cancel, expire;
};

[[maybe_unused]] const bool registered = [] {
    const implementation impls[] = {
        {"wheel", wheel_arm, wheel_move_later, wheel_move_earlier, wheel_cancel, wheel_expire},
        {"steady_timer", steady_timer_arm, steady_timer_move_later, steady_timer_move_earlier,
         steady_timer_cancel, steady_timer_expire},
    };
    const std::pair<const char*, bench_fn implementation::*> ops[] = {
        {"arm", &implementation::arm},
        {"move_later", &implementation::move_later},
        {"move_earlier", &implementation::move_earlier},
        {"cancel", &implementation::cancel},
        {"expire", &implementation::expire},
    };
    for (const auto& [op, member] : ops) {
        for (const std::size_t n : {10'000, 100'000, 1'000'000}) {
            for (const implementation& impl : impls) {
                const std::string name =
                    std::string(impl.name) + "/" + op + "/" + std::to_string(n);
                const bench_fn fn = impl.*member;
                benchmark::RegisterBenchmark(name.c_str(), [fn, n](benchmark::State& state) {
                    fn(state, n);
                })->Unit(benchmark::kNanosecond);
            }
        }
    }
    return true;
}();

} // namespace
