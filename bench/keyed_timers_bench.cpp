//
// bench/keyed_timers_bench.cpp
//
// Keyed timers: timewheel::keyed_timers<uint64_t, uint64_t> against the pattern it replaces,
// an std::unordered_map<uint64_t, std::unique_ptr<{steady_timer, value}>>, at 10k, 100k and
// 1M live keys. Names: <implementation>/<op>/<keys>, implementation `keyed_timers` or
// `map_steady_timer`, op `set`, `move` or `remove`.
//
//   set     replace the value and deadline of an existing key (keyed_timers::set_timer; the
//           map: find, assign the value, expires_after + async_wait)
//   move    change the deadline of an existing key (move_timer; the map: find,
//           expires_after + async_wait)
//   remove  drop an existing key (remove_timer; the map: find, cancel, erase); the batch's
//           keys are put back outside the timed region
//
// Keys are 0..N-1, visited in a random order (a seeded permutation); each visit draws a new
// delay uniform over [10 s, 70 s], so that half the moves are earlier and half later, and no
// timer expires during a run. Both io_contexts are polled every 128 operations (and at the
// end of each batch), as a loaded server runs its ready handlers between reactor passes:
// steady_timer pays there for the operation_aborted handler each re-arm or cancel queues;
// the wheel has nothing to run.
//
// One iteration is a batch of N/10 operations, timed by the shared op clock
// (support/op_clock.hpp: `ns_per_op`, `cpu_ns_per_op`, `allocs_per_op` around the timed
// batches only; read them from one --benchmark_format=json run).
//

#include <timewheel/keyed_timers.hpp>

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
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/op_clock.hpp"

namespace {

namespace net = boost::asio;
using clock_type = std::chrono::steady_clock;
using us = std::chrono::microseconds;
using key_type = std::uint64_t;

constexpr std::size_t batches = 10;
constexpr std::size_t poll_every = 128;

struct workload {
    std::vector<std::int64_t> initial_us; // per key
    std::vector<std::int64_t> visit_us;   // per visit
    std::vector<key_type> order;          // a random permutation of the keys
};

const workload& get_workload(std::size_t n) {
    static std::map<std::size_t, workload> cache;
    auto [it, inserted] = cache.try_emplace(n);
    workload& w = it->second;
    if (!inserted) {
        return w;
    }
    std::mt19937_64 rng(20261122 + n);
    std::uniform_int_distribution<std::int64_t> delay(10'000'000, 70'000'000);
    w.initial_us.resize(n);
    w.visit_us.resize(n);
    w.order.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        w.initial_us[i] = delay(rng);
        w.visit_us[i] = delay(rng);
        w.order[i] = i;
    }
    std::shuffle(w.order.begin(), w.order.end(), rng);
    return w;
}

using timewheel_bench::op_clock;

class poller {
public:
    explicit poller(net::io_context& io)
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
    net::io_context& io_;
    std::size_t countdown_ = poll_every;
};

struct slice {
    std::size_t begin;
    std::size_t end;
};

slice batch_of(std::size_t pass, std::size_t n) {
    const std::size_t size = n / batches;
    const std::size_t begin = (pass % batches) * size;
    return {begin, begin + size};
}

// --- timewheel::keyed_timers ----------------------------------------------------------------

struct wheel_keys {
    explicit wheel_keys(std::size_t n)
        : io(1)
        , tw(io, [this](const key_type&, std::uint64_t& v) { fired += v; }) {
        const workload& w = get_workload(n);
        tw.reserve(n);
        for (std::size_t k = 0; k < n; ++k) {
            tw.set_timer(k, k, us(w.initial_us[k]));
        }
    }

    net::io_context io;
    std::uint64_t fired = 0;
    timewheel::keyed_timers<key_type, std::uint64_t> tw;
};

void keyed_timers_set(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    wheel_keys keys(n);
    poller poll(keys.io);
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.end; ++j) {
            keys.tw.set_timer(w.order[j], pass + j, us(w.visit_us[j]));
            poll.tick();
        }
        poll.finish();
        clock.stop(s.end - s.begin);
    }
    if (keys.tw.size() != n || keys.fired != 0) {
        state.SkipWithError("a key went missing or fired");
    }
    clock.report(state);
}

void keyed_timers_move(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    wheel_keys keys(n);
    poller poll(keys.io);
    op_clock clock;
    std::size_t pass = 0;
    std::size_t moved = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.end; ++j) {
            moved += keys.tw.move_timer(w.order[j], us(w.visit_us[j]));
            poll.tick();
        }
        poll.finish();
        clock.stop(s.end - s.begin);
    }
    if (moved != (pass * (n / batches)) || keys.fired != 0) {
        state.SkipWithError("a move failed or a key fired");
    }
    clock.report(state);
}

void keyed_timers_remove(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    wheel_keys keys(n);
    poller poll(keys.io);
    op_clock clock;
    std::size_t pass = 0;
    std::size_t removed = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.end; ++j) {
            removed += keys.tw.remove_timer(w.order[j]);
            poll.tick();
        }
        poll.finish();
        clock.stop(s.end - s.begin);
        state.PauseTiming();
        for (std::size_t j = s.begin; j < s.end; ++j) {
            keys.tw.set_timer(w.order[j], j, us(w.visit_us[j]));
        }
        state.ResumeTiming();
    }
    if (removed != (pass * (n / batches)) || keys.tw.size() != n) {
        state.SkipWithError("a remove failed");
    }
    clock.report(state);
}

// --- std::unordered_map of steady_timers ------------------------------------------------------

struct timer_entry {
    explicit timer_entry(net::io_context& io)
        : timer(io) {}

    net::steady_timer timer;
    std::uint64_t value = 0;
    std::uint64_t fired = 0;
};

struct on_expiry {
    timer_entry* entry;

    void operator()(const boost::system::error_code& ec) const {
        if (!ec) {
            ++entry->fired;
        }
    }
};

struct map_keys {
    explicit map_keys(std::size_t n)
        : io(1) {
        const workload& w = get_workload(n);
        map.reserve(n);
        for (std::size_t k = 0; k < n; ++k) {
            add(k, k, w.initial_us[k]);
        }
    }

    void add(key_type key, std::uint64_t value, std::int64_t delay) {
        auto entry = std::make_unique<timer_entry>(io);
        entry->value = value;
        entry->timer.expires_after(us(delay));
        entry->timer.async_wait(on_expiry{entry.get()});
        map.emplace(key, std::move(entry));
    }

    net::io_context io;
    std::unordered_map<key_type, std::unique_ptr<timer_entry>> map; // destroyed before io
};

void map_steady_timer_set(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    map_keys keys(n);
    poller poll(keys.io);
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.end; ++j) {
            timer_entry& e = *keys.map.find(w.order[j])->second;
            e.value = pass + j;
            e.timer.expires_after(us(w.visit_us[j]));
            e.timer.async_wait(on_expiry{&e});
            poll.tick();
        }
        poll.finish();
        clock.stop(s.end - s.begin);
    }
    clock.report(state);
}

void map_steady_timer_move(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    map_keys keys(n);
    poller poll(keys.io);
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.end; ++j) {
            const auto it = keys.map.find(w.order[j]);
            if (it != keys.map.end()) {
                timer_entry& e = *it->second;
                e.timer.expires_after(us(w.visit_us[j]));
                e.timer.async_wait(on_expiry{&e});
            }
            poll.tick();
        }
        poll.finish();
        clock.stop(s.end - s.begin);
    }
    clock.report(state);
}

void map_steady_timer_remove(benchmark::State& state, std::size_t n) {
    const workload& w = get_workload(n);
    map_keys keys(n);
    poller poll(keys.io);
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.end; ++j) {
            const auto it = keys.map.find(w.order[j]);
            if (it != keys.map.end()) {
                it->second->timer.cancel();
                keys.map.erase(it);
            }
            poll.tick();
        }
        poll.finish();
        clock.stop(s.end - s.begin);
        state.PauseTiming();
        for (std::size_t j = s.begin; j < s.end; ++j) {
            keys.add(w.order[j], j, w.visit_us[j]);
        }
        state.ResumeTiming();
    }
    if (keys.map.size() != n) {
        state.SkipWithError("a remove failed");
    }
    clock.report(state);
}

// --- registration -------------------------------------------------------------------------

using bench_fn = void (*)(benchmark::State&, std::size_t);

[[maybe_unused]] const bool registered = [] {
    const struct {
        const char* name;
        bench_fn fn;
    } cases[] = {
        {"set", keyed_timers_set},       {"set", map_steady_timer_set},
        {"move", keyed_timers_move},     {"move", map_steady_timer_move},
        {"remove", keyed_timers_remove}, {"remove", map_steady_timer_remove},
    };
    for (const std::size_t n : {10'000, 100'000, 1'000'000}) {
        for (std::size_t i = 0; i < std::size(cases); ++i) {
            const char* impl = i % 2 == 0 ? "keyed_timers" : "map_steady_timer";
            const std::string name =
                std::string(impl) + "/" + cases[i].name + "/" + std::to_string(n);
            const bench_fn fn = cases[i].fn;
            benchmark::RegisterBenchmark(name.c_str(), [fn, n](benchmark::State& state) {
                fn(state, n);
            })->Unit(benchmark::kNanosecond);
        }
    }
    return true;
}();

} // namespace
