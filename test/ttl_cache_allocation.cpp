//
// test/ttl_cache_allocation.cpp
//
// Counts the heap allocations of ttl_cache (support/allocation_counter.hpp counts every global
// allocation): at most one per inserted entry, plus one per doubling of the index; none, once
// warm, for a refresh, a hit, a miss, an erase followed by an insertion (a recycled node),
// an eviction, an expiry, or an async_take() hit. Only the operations under test are
// counted, never a Boost.Test assertion.
//

#define BOOST_TEST_MODULE ttl_cache_allocation
#include <timewheel/ttl_cache.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>

#include <test/support/allocation_counter.hpp>

namespace net = boost::asio;
namespace tw = timewheel;
using namespace std::chrono_literals;
using cache_type = tw::ttl_cache<std::uint64_t, std::uint64_t>;
using timewheel::test::count_allocations;

namespace {

// A cheap deterministic sequence for keys.
std::uint64_t next(std::uint64_t& state) {
    return tw::detail::splitmix64(state);
}

} // namespace

BOOST_AUTO_TEST_CASE(one_allocation_per_entry_at_most) {
    net::io_context io;
    tw::ttl_cache_options options;
    options.spare_nodes = 0; // no reuse: every insertion pays for its node
    options.jitter = 0;      // deadlines in insertion order: the wheel's wakeup never moves
                             // earlier (which may allocate a driver operation in the service)
    cache_type cache(io, 1h, options);
    constexpr std::size_t n = 5000;
    // Warm up the wheel's driver (its first wait allocates an operation, then recycles it).
    cache.set(n, 0);
    cache.erase(n);
    io.poll();
    const std::size_t inserted = count_allocations([&] {
        for (std::uint64_t k = 0; k < n; ++k) {
            cache.set(k, k);
        }
    });
    // 8 initial buckets, doubled while the entries would outnumber them: 8 -> 8192.
    std::size_t doublings = 0;
    for (std::size_t buckets = 8; buckets < n; buckets *= 2) {
        ++doublings;
    }
    BOOST_TEST(inserted == n + doublings);
    BOOST_TEST(cache.size() == n);
    cache.clear();
}

BOOST_AUTO_TEST_CASE(warm_cache_allocates_nothing) {
    net::io_context io;
    constexpr std::size_t limit = 2000;
    tw::ttl_cache_options options;
    options.limit = limit;
    options.spare_nodes = 256;
    options.jitter = 0; // see one_allocation_per_entry_at_most; jitter has its own case below
    cache_type cache(io, 1h, options);
    std::uint64_t state = 1;

    // Warm-up: fill to the limit, evict a few, erase and re-insert a few.
    for (std::uint64_t k = 0; k < limit + 100; ++k) {
        cache.set(k, k);
    }
    for (std::uint64_t k = 1000; k < 1100; ++k) {
        cache.erase(k);
    }
    for (std::uint64_t k = 1000; k < 1100; ++k) {
        cache.set(k, k);
    }
    BOOST_TEST_REQUIRE(cache.size() == limit);

    const std::size_t refresh = count_allocations([&] {
        for (int i = 0; i < 20000; ++i) {
            const std::uint64_t k = 100 + next(state) % limit; // all cached
            cache.set(k, k + 1);
            cache.set(k, k + 2, 2h);
        }
    });
    BOOST_TEST(refresh == 0u);

    std::size_t hits = 0;
    std::size_t misses = 0;
    const std::size_t lookups = count_allocations([&] {
        for (int i = 0; i < 20000; ++i) {
            const std::uint64_t k = 100 + next(state) % limit;
            hits += cache.get(k).has_value() ? 1 : 0;
            misses += cache.get(k + 1'000'000).has_value() ? 0 : 1;
            hits += cache.get_ptr(k) != nullptr ? 1 : 0;
            hits += cache.contains(k) ? 1 : 0;
        }
    });
    BOOST_TEST(lookups == 0u);
    BOOST_TEST(hits == 60000u);
    BOOST_TEST(misses == 20000u);

    const std::size_t recycled = count_allocations([&] {
        for (int i = 0; i < 20000; ++i) {
            const std::uint64_t k = 100 + next(state) % limit;
            cache.erase(k);
            cache.set(k, k); // a node from the spare list
        }
    });
    BOOST_TEST(recycled == 0u);

    const std::uint64_t evictions_before = cache.stats().evictions;
    const std::size_t evicting = count_allocations([&] {
        for (std::uint64_t k = 10'000; k < 30'000; ++k) {
            cache.set(k, k); // each evicts one, whose node the next insertion reuses
        }
    });
    BOOST_TEST(evicting == 0u);
    BOOST_TEST(cache.stats().evictions - evictions_before == 20000u);
    BOOST_TEST(cache.size() == limit);
    cache.clear();
}

BOOST_AUTO_TEST_CASE(jittered_refresh_allocates_nothing) {
    net::io_context io;
    cache_type cache(io, 1h); // default jitter: a refresh keeps its deadline, or moves it
    // The earliest deadline, which no refresh below goes under: the wheel's wakeup stays put.
    cache.set(1'000'000, 0, 10min);
    for (std::uint64_t k = 0; k < 2000; ++k) {
        cache.set(k, k);
    }
    io.poll();
    std::uint64_t state = 3;
    const std::size_t counted = count_allocations([&] {
        for (int i = 0; i < 20000; ++i) {
            const std::uint64_t k = next(state) % 2000;
            cache.set(k, k + 1); // mostly kept: the deadline is still in the band
            cache.set(k, k + 2, std::chrono::minutes(60 + next(state) % 60)); // later or earlier
        }
    });
    BOOST_TEST(counted == 0u);
    BOOST_TEST(cache.size() == 2001u);
    cache.clear();
}

BOOST_AUTO_TEST_CASE(expiry_allocates_nothing) {
    net::io_context io;
    tw::ttl_cache_options options;
    options.spare_nodes = 1000;
    options.jitter = 0; // deadlines never go under the wheel's pending wakeup (see above)
    cache_type cache(io, 5ms, options);
    std::size_t expired = 0;
    cache.on_removal(
        [&](const std::uint64_t&, std::uint64_t&, tw::ttl_cache_removal) { ++expired; });
    const auto expire_all = [&] {
        for (std::uint64_t k = 0; k < 1000; ++k) {
            cache.set(k, k, std::chrono::milliseconds(1 + k % 20));
        }
        while (!cache.empty()) {
            io.restart();
            io.run_one_for(50ms);
        }
    };
    expire_all(); // warm-up: nodes, index, the wheel's driver
    expired = 0;
    const std::size_t counted = count_allocations(expire_all);
    BOOST_TEST(counted == 0u);
    BOOST_TEST(expired == 1000u);
}

namespace {

// Takes key 1 `remaining` times in a row, each take started from the completion handler of
// the one before, so that all run on the io_context's thread, as in a server: Asio's
// recycling allocator caches an operation's memory only there (from another thread every
// operation is a fresh aligned_alloc). Counts the allocations from the first take's
// completion to the last one's: the first take's operation may need a block larger than the
// one the posted start left in the allocator's cache.
struct take_chain {
    cache_type& cache;
    std::uint64_t& sum;
    int remaining = 0;
    bool first = true;
    tw::test::allocation_counter* counter = nullptr;
    std::size_t counted = 0;

    void operator()() {
        cache.async_take(
            1, [](const std::uint64_t&, auto handler) { handler({}, 0); },
            [this](boost::system::error_code, std::uint64_t v) {
                sum += v;
                if (first) {
                    first = false;
                    counter->reset();
                }
                if (--remaining > 0) {
                    (*this)();
                } else {
                    counted = counter->count();
                }
            });
    }
};

} // namespace

BOOST_AUTO_TEST_CASE(take_hit_allocates_nothing_once_warm) {
    net::io_context io;
    tw::ttl_cache_options options;
    options.jitter = 0; // so that key 2 expires after key 1 and the wheel's wakeup stays put
    cache_type cache(io, 1h, options);
    cache.set(1, 10);
    std::uint64_t sum = 0;
    tw::test::allocation_counter counter;
    take_chain chain{cache, sum, 0, true, &counter};
    const auto takes = [&](int n) {
        chain.remaining = n;
        chain.first = true;
        net::post(io, [&] { chain(); });
        io.restart();
        while (chain.remaining > 0) { // run() would wait for the 1 h entry
            io.run_one();
        }
    };
    takes(100); // warm-up: the recycling allocator keeps the operations' memory
    takes(1000);
    BOOST_TEST(chain.counted == 0u);
    BOOST_TEST(sum == 11000u);

    // A miss allocates its flight and the node of the entry it stores; the operation comes
    // from the recycling allocator, warm since the hits. Started, as the hits, from a take's
    // completion.
    std::size_t miss = 0;
    bool missed = false;
    const auto loader = [](std::uint64_t value) {
        return [value](const std::uint64_t&, auto handler) { handler({}, value); };
    };
    net::post(io, [&] {
        cache.async_take(1, loader(0), [&](boost::system::error_code, std::uint64_t) {
            counter.reset();
            cache.async_take(2, loader(20), [&](boost::system::error_code, std::uint64_t v) {
                miss = counter.count();
                missed = true;
                sum += v;
            });
        });
    });
    io.restart();
    while (!missed) {
        io.run_one();
    }
    BOOST_TEST_MESSAGE("allocations of an async_take miss: " << miss);
    BOOST_TEST(miss == 2u);
    BOOST_TEST(sum == 11020u);
    cache.clear();
}
