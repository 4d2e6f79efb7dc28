//
// bench/ttl_cache_bench.cpp
//
// timewheel::ttl_cache against the usual hand-made TTL cache: an std::unordered_map of keys
// to std::list iterators for the LRU order, with one boost::asio::steady_timer per entry
// (expires_after + async_wait; a refresh restarts the timer). Names:
//
//   ttl_cache/<op>/<N>, lru_steady_timer/<op>/<N>   op: set, get_hit, get_miss, expire
//                                                   N: 10000, 100000, 1000000 entries
//   ttl_cache/bytes_per_entry/1, lru_steady_timer/bytes_per_entry/1
//
// Keys are std::uint64_t (splitmix64 of 0..N-1), values std::uint64_t. Both caches have a
// limit of N (so both keep an LRU list, and nothing is evicted) and a time to live of one
// hour, except in expire. ttl_cache runs with its defaults (jitter ±5%, slack min(ttl/64,
// 1 s)); the baseline has no jitter, which only favours it.
//
//   set       N/10 refreshes per batch (set of a cached key: new value, new time to live,
//             most recent), visiting keys in a fixed random order. The baseline's restarted
//             timer queues its old wait's handler with operation_aborted; io_context::poll()
//             runs them every 128 operations and at the end of each batch (as in
//             wheel_bench.cpp), inside the timed region. (ttl_cache keeps an entry's deadline
//             when it already lies in the new jitter band, as most do here, a few seconds
//             into an hour's ±5%; otherwise it moves it later, one store. Both caches read
//             the clock once per set, which serializes the cache misses of successive sets.)
//             The set, get_hit and get_miss benchmarks of one size share one filled cache.
//   get_hit   N/10 lookups of cached keys per batch, in random order (a hit touches LRU).
//   get_miss  N/10 lookups of absent keys per batch.
//   expire    per batch, outside the timed region: fill the empty cache with N entries
//             whose times to live are spread uniformly at random over 1-50 ms, then sleep
//             until every deadline has passed. Timed: io_context::run() until it returns,
//             that is until every entry has been found due, removed from the index and the
//             LRU list, and freed. The same for both: the wheel finds due slots, the
//             baseline's reactor pops its timer heap and runs N handlers; each baseline
//             handler checks that its entry was not refreshed or replaced (the generation
//             check any correct steady_timer cache needs) before erasing it.
//   bytes_per_entry   N = 1,000,000 entries, set through a counting allocator: the counter
//             `bytes` is the live heap bytes per entry (nodes, bucket arrays; for the
//             baseline also list nodes, map nodes and the async_wait operations, whose
//             handler carries the counting allocator). Not counted: the baseline's share of
//             Asio's timer heap (an std::vector of 16 bytes per pending timer), which would
//             only add to it. `allocations` is heap allocations per entry.
//
// Each timed benchmark reports the shared op clock's counters (support/op_clock.hpp:
// ns_per_op, cpu_ns_per_op and allocs_per_op around the timed operations only; read them
// from one --benchmark_format=json run) and items_per_second.
//

#include <timewheel/ttl_cache.hpp>

#include <benchmark/benchmark.h>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "support/counting_allocator.hpp"
#include "support/op_clock.hpp"

namespace {

using clock_type = std::chrono::steady_clock;
constexpr std::size_t batches = 10;
constexpr std::size_t poll_every = 128;
constexpr auto long_ttl = std::chrono::hours(1);

// --- Workload ------------------------------------------------------------------------------

struct cache_workload {
    std::vector<std::uint64_t> keys;                  // cached
    std::vector<std::uint64_t> absent;                // never cached
    std::vector<std::uint32_t> order;                 // a random permutation: the visiting order
    std::vector<std::chrono::microseconds> short_ttl; // 1-50 ms, for expire
};

const cache_workload& get_workload(std::size_t n) {
    static std::map<std::size_t, cache_workload> cache;
    auto [it, inserted] = cache.try_emplace(n);
    cache_workload& w = it->second;
    if (!inserted) {
        return w;
    }
    std::uint64_t state = 0x5eed + n;
    w.keys.resize(n);
    w.absent.resize(n);
    w.order.resize(n);
    w.short_ttl.resize(n);
    std::mt19937_64 rng(n);
    std::uniform_int_distribution<std::int64_t> ttl_us(1'000, 50'000);
    for (std::size_t i = 0; i < n; ++i) {
        w.keys[i] = timewheel::detail::splitmix64(state);
        w.absent[i] = timewheel::detail::splitmix64(state);
        w.order[i] = static_cast<std::uint32_t>(i);
        w.short_ttl[i] = std::chrono::microseconds(ttl_us(rng));
    }
    std::shuffle(w.order.begin(), w.order.end(), rng);
    return w;
}

struct slice {
    std::size_t begin;
    std::size_t size;
};

slice batch_of(std::size_t pass, std::size_t n) {
    const std::size_t size = n / batches;
    return {(pass % batches) * size, size};
}

using timewheel_bench::op_clock;

// --- Bytes per entry: the counting allocator of support/ ------------------------------------

using timewheel_bench::allocator_log;
using timewheel_bench::counting_allocator;

// --- The baseline: unordered_map + std::list + one steady_timer per entry ------------------

template <typename Allocator = std::allocator<char>>
class lru_steady_timer {
public:
    using duration = clock_type::duration;

    lru_steady_timer(boost::asio::io_context& io, duration ttl, std::size_t limit)
        : io_(io)
        , ttl_(ttl)
        , limit_(limit) {}

    void set(std::uint64_t key, std::uint64_t value) { set(key, value, ttl_); }

    void set(std::uint64_t key, std::uint64_t value, duration ttl) {
        if (auto found = index_.find(key); found != index_.end()) {
            const entry_iterator e = found->second;
            e->value = value;
            lru_.splice(lru_.begin(), lru_, e);
            arm(e, ttl); // aborts the pending wait
            return;
        }
        lru_.emplace_front(io_, key, value);
        index_.emplace(key, lru_.begin());
        arm(lru_.begin(), ttl);
        if (lru_.size() > limit_) {
            index_.erase(lru_.back().key);
            lru_.pop_back(); // the timer's destructor aborts its wait
            ++evictions_;
        }
    }

    std::optional<std::uint64_t> get(std::uint64_t key) {
        const auto found = index_.find(key);
        if (found == index_.end()) {
            ++misses_;
            return std::nullopt;
        }
        ++hits_;
        lru_.splice(lru_.begin(), lru_, found->second);
        return found->second->value;
    }

    std::size_t size() const noexcept { return lru_.size(); }

private:
    struct entry {
        entry(boost::asio::io_context& io, std::uint64_t k, std::uint64_t v)
            : key(k)
            , value(v)
            , timer(io) {}
        std::uint64_t key;
        std::uint64_t value;
        std::uint64_t generation = 0; // bumped on every restart of the timer
        boost::asio::steady_timer timer;
    };
    template <typename T>
    using alloc = typename std::allocator_traits<Allocator>::template rebind_alloc<T>;
    using list_type = std::list<entry, alloc<entry>>;
    using entry_iterator = typename list_type::iterator;
    using map_type =
        std::unordered_map<std::uint64_t, entry_iterator, std::hash<std::uint64_t>, std::equal_to<>,
                           alloc<std::pair<const std::uint64_t, entry_iterator>>>;

    struct on_expiry {
        lru_steady_timer* self;
        std::uint64_t key;
        std::uint64_t generation;

        void operator()(const boost::system::error_code& ec) const {
            if (!ec) {
                self->expire(key, generation);
            }
        }
    };

    void arm(entry_iterator e, duration ttl) {
        e->timer.expires_after(ttl);
        const on_expiry handler{this, e->key, ++e->generation};
        if constexpr (std::is_same_v<Allocator, std::allocator<char>>) {
            e->timer.async_wait(handler); // Asio's recycling allocator, as usual
        } else {
            e->timer.async_wait(boost::asio::bind_allocator(alloc<char>(), handler));
        }
    }

    // A success may be stale: the entry was refreshed (or replaced) after the handler was
    // queued. Only the current generation's expiry removes it.
    void expire(std::uint64_t key, std::uint64_t generation) {
        const auto found = index_.find(key);
        if (found == index_.end() || found->second->generation != generation) {
            return;
        }
        lru_.erase(found->second);
        index_.erase(found);
        ++expirations_;
    }

    boost::asio::io_context& io_;
    duration ttl_;
    std::size_t limit_;
    list_type lru_;
    map_type index_;
    std::uint64_t hits_ = 0;
    std::uint64_t misses_ = 0;
    std::uint64_t evictions_ = 0;
    std::uint64_t expirations_ = 0;
};

using baseline = lru_steady_timer<>;
using cache_type = timewheel::ttl_cache<std::uint64_t, std::uint64_t>;

timewheel::ttl_cache_options limited(std::size_t n) {
    timewheel::ttl_cache_options options;
    options.limit = n;
    return options;
}

template <typename Cache>
void fill(Cache& cache, const cache_workload& w) {
    for (std::size_t i = 0; i < w.keys.size(); ++i) {
        cache.set(w.keys[i], i);
    }
}

// A cache filled with the N keys, shared by the set, get_hit and get_miss benchmarks of one
// implementation and size (filling a million-entry baseline takes seconds), kept until exit.
template <typename Cache>
struct filled {
    explicit filled(std::size_t n)
        : io(1)
        , cache(make(io, n)) {
        fill(cache, get_workload(n));
        io.poll();
    }

    static Cache make(boost::asio::io_context& io, std::size_t n) {
        if constexpr (std::is_same_v<Cache, cache_type>) {
            return Cache(io, long_ttl, limited(n));
        } else {
            return Cache(io, long_ttl, n);
        }
    }

    boost::asio::io_context io;
    Cache cache; // destroyed before io
};

template <typename Cache>
filled<Cache>& shared(std::size_t n) {
    static std::map<std::size_t, std::unique_ptr<filled<Cache>>> caches;
    std::unique_ptr<filled<Cache>>& f = caches[n];
    if (!f) {
        f = std::make_unique<filled<Cache>>(n);
    }
    return *f;
}

// --- set -----------------------------------------------------------------------------------

template <typename Cache>
void set_batches(benchmark::State& state, std::size_t n) {
    const cache_workload& w = get_workload(n);
    auto& [io, cache] = shared<Cache>(n);
    op_clock clock;
    std::size_t pass = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        std::size_t countdown = poll_every;
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            cache.set(w.keys[w.order[j]], j);
            if constexpr (!std::is_same_v<Cache, cache_type>) {
                if (--countdown == 0) { // run the aborted handlers of restarted timers
                    io.poll();
                    countdown = poll_every;
                }
            }
        }
        if constexpr (!std::is_same_v<Cache, cache_type>) {
            io.poll();
        }
        clock.stop(s.size);
    }
    clock.report(state);
}

void ttl_cache_set(benchmark::State& state, std::size_t n) {
    set_batches<cache_type>(state, n);
}

void lru_steady_timer_set(benchmark::State& state, std::size_t n) {
    set_batches<baseline>(state, n);
}

// --- get_hit and get_miss --------------------------------------------------------------------

template <typename Cache>
void get_batches(benchmark::State& state, std::size_t n, bool hit) {
    const cache_workload& w = get_workload(n);
    Cache& cache = shared<Cache>(n).cache;
    op_clock clock;
    std::size_t pass = 0;
    std::uint64_t found = 0;
    for (auto _ : state) {
        const slice s = batch_of(pass++, n);
        clock.start();
        for (std::size_t j = s.begin; j < s.begin + s.size; ++j) {
            const std::uint64_t key = hit ? w.keys[w.order[j]] : w.absent[j];
            if (auto v = cache.get(key)) {
                found += *v;
            }
        }
        clock.stop(s.size);
    }
    benchmark::DoNotOptimize(found);
    clock.report(state);
}

void ttl_cache_get_hit(benchmark::State& state, std::size_t n) {
    get_batches<cache_type>(state, n, true);
}

void lru_steady_timer_get_hit(benchmark::State& state, std::size_t n) {
    get_batches<baseline>(state, n, true);
}

void ttl_cache_get_miss(benchmark::State& state, std::size_t n) {
    get_batches<cache_type>(state, n, false);
}

void lru_steady_timer_get_miss(benchmark::State& state, std::size_t n) {
    get_batches<baseline>(state, n, false);
}

// --- expire --------------------------------------------------------------------------------

template <typename Cache>
void expire_batches(benchmark::State& state, Cache& cache, boost::asio::io_context& io,
                    const cache_workload& w) {
    const std::size_t n = w.keys.size();
    op_clock clock;
    for (auto _ : state) {
        state.PauseTiming();
        for (std::size_t i = 0; i < n; ++i) {
            cache.set(w.keys[i], i, w.short_ttl[i]);
        }
        // Every deadline has passed: 50 ms, plus 5% of jitter and a tick for ttl_cache.
        std::this_thread::sleep_for(std::chrono::milliseconds(55));
        io.restart();
        state.ResumeTiming();
        clock.start();
        io.run();
        clock.stop(n);
        if (cache.size() != 0) {
            state.SkipWithError("not every entry expired");
            break;
        }
    }
    clock.report(state);
}

void ttl_cache_expire(benchmark::State& state, std::size_t n) {
    const cache_workload& w = get_workload(n);
    boost::asio::io_context io(1);
    cache_type cache(io, long_ttl, limited(n));
    expire_batches(state, cache, io, w);
}

void lru_steady_timer_expire(benchmark::State& state, std::size_t n) {
    const cache_workload& w = get_workload(n);
    boost::asio::io_context io(1);
    baseline cache(io, long_ttl, n);
    expire_batches(state, cache, io, w);
}

// --- bytes_per_entry -----------------------------------------------------------------------

constexpr std::size_t bytes_entries = 1'000'000;

void report_bytes(benchmark::State& state, const allocator_log& before) {
    state.counters["bytes"] =
        static_cast<double>(timewheel_bench::counted_allocations().live_bytes - before.live_bytes) /
        static_cast<double>(bytes_entries);
    state.counters["allocations"] =
        static_cast<double>(timewheel_bench::counted_allocations().calls - before.calls) /
        static_cast<double>(bytes_entries);
}

void ttl_cache_bytes(benchmark::State& state, std::size_t) {
    const cache_workload& w = get_workload(bytes_entries);
    for (auto _ : state) {
        boost::asio::io_context io(1);
        const allocator_log before = timewheel_bench::counted_allocations();
        timewheel::ttl_cache<std::uint64_t, std::uint64_t, std::hash<std::uint64_t>,
                             std::equal_to<std::uint64_t>,
                             counting_allocator<std::pair<const std::uint64_t, std::uint64_t>>>
            cache(io, long_ttl, limited(bytes_entries));
        fill(cache, w);
        report_bytes(state, before);
        cache.clear();
    }
}

void lru_steady_timer_bytes(benchmark::State& state, std::size_t) {
    const cache_workload& w = get_workload(bytes_entries);
    for (auto _ : state) {
        boost::asio::io_context io(1);
        const allocator_log before = timewheel_bench::counted_allocations();
        {
            lru_steady_timer<counting_allocator<char>> cache(io, long_ttl, bytes_entries);
            fill(cache, w);
            report_bytes(state, before);
        }
        io.poll(); // frees the aborted waits of the destroyed timers
    }
}

// --- registration --------------------------------------------------------------------------

using bench_fn = void (*)(benchmark::State&, std::size_t);

[[maybe_unused]] const bool registered = [] {
    struct op {
        const char* name;
        bench_fn ours;
        bench_fn theirs;
    };
    const op ops[] = {
        {"set", ttl_cache_set, lru_steady_timer_set},
        {"get_hit", ttl_cache_get_hit, lru_steady_timer_get_hit},
        {"get_miss", ttl_cache_get_miss, lru_steady_timer_get_miss},
        {"expire", ttl_cache_expire, lru_steady_timer_expire},
    };
    const auto add = [](const std::string& name, bench_fn fn, std::size_t n) {
        benchmark::RegisterBenchmark(name.c_str(), [fn, n](benchmark::State& state) {
            fn(state, n);
        })->Unit(benchmark::kNanosecond);
    };
    for (const op& o : ops) {
        for (const std::size_t n : {10'000, 100'000, 1'000'000}) {
            const std::string suffix = std::string("/") + o.name + "/" + std::to_string(n);
            add("ttl_cache" + suffix, o.ours, n);
            add("lru_steady_timer" + suffix, o.theirs, n);
        }
    }
    add("ttl_cache/bytes_per_entry/1", ttl_cache_bytes, 1);
    add("lru_steady_timer/bytes_per_entry/1", lru_steady_timer_bytes, 1);
    return true;
}();

} // namespace
