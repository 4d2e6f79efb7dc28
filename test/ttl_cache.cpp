//
// test/ttl_cache.cpp
//
// Unit tests of ttl_cache: bad input, entries and statistics, heterogeneous lookup, LRU
// order and limit, expiry (never early, eventually gone, jitter), removal listeners that use
// the cache, async_take (singleflight, errors, every kind of completion token,
// cancellation, destruction) and the periodic report. The ttl_cache header comes first to
// prove that it is self-contained.
//
// Timing checks follow two rules: an assertion that something is still there is made only
// when the clock, read after the check, proves that its deadline had not passed; an
// assertion that something is gone is made after waiting for it with a generous bound.
//

#define BOOST_TEST_MODULE ttl_cache
#include <timewheel/ttl_cache.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/cancellation_signal.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/use_future.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace net = boost::asio;
namespace tw = timewheel;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using boost::system::error_code;

namespace {

using cache_type = tw::ttl_cache<std::uint64_t, std::uint64_t>;
using removal = tw::ttl_cache_removal;

tw::ttl_cache_options with_limit(std::size_t limit, double jitter = 0.05) {
    tw::ttl_cache_options options;
    options.limit = limit;
    options.jitter = jitter;
    options.seed = 42;
    return options;
}

// Exception predicate: an invalid_argument whose message names `word`.
auto names(std::string word) {
    return [word](const std::invalid_argument& e) {
        return std::string(e.what()).find(word) != std::string::npos;
    };
}

// Runs `io` until `done()` or until `limit` has passed.
template <typename Predicate>
bool run_until(net::io_context& io, Predicate done, clock_type::duration limit) {
    const auto end = clock_type::now() + limit;
    while (!done() && clock_type::now() < end) {
        if (io.run_one_for(5ms) == 0 && io.stopped()) {
            io.restart();
        }
    }
    return done();
}

// Runs `io` for `d` (handlers included).
void run_for(net::io_context& io, clock_type::duration d) {
    io.restart();
    io.run_for(d);
    io.restart();
}

struct removal_log {
    struct item {
        std::uint64_t key;
        std::uint64_t value;
        removal reason;
        clock_type::time_point at;
    };
    std::vector<item> items;

    auto listener() {
        return [this](const std::uint64_t& key, std::uint64_t& value, removal reason) {
            items.push_back({key, value, reason, clock_type::now()});
        };
    }

    std::vector<std::uint64_t> keys(removal reason) const {
        std::vector<std::uint64_t> out;
        for (const item& i : items) {
            if (i.reason == reason) {
                out.push_back(i.key);
            }
        }
        return out;
    }
};

// A string hash usable with std::string_view (heterogeneous lookup).
struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
    }
};

} // namespace

// --- Bad input ---------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(rejects_bad_options) {
    net::io_context io;
    BOOST_CHECK_EXCEPTION(cache_type(io, -1ms), std::invalid_argument, names("ttl"));
    BOOST_CHECK_EXCEPTION(cache_type(io, 1s, with_limit(0)), std::invalid_argument, names("limit"));
    BOOST_CHECK_EXCEPTION(cache_type(io, 1s, with_limit(10, -0.01)), std::invalid_argument,
                          names("jitter"));
    BOOST_CHECK_EXCEPTION(cache_type(io, 1s, with_limit(10, 1.0)), std::invalid_argument,
                          names("jitter"));
    BOOST_CHECK_EXCEPTION(cache_type(io, 1s, with_limit(10, std::nan(""))), std::invalid_argument,
                          names("jitter"));
    // The limits themselves are fine.
    cache_type zero_ttl(io, 0ms, with_limit(1, 0.0));
    cache_type almost_one(io, 1s, with_limit(tw::ttl_cache_options::unlimited, 0.999));
    BOOST_TEST(zero_ttl.limit() == 1u);
    BOOST_TEST(almost_one.jitter() == 0.999);
}

BOOST_AUTO_TEST_CASE(bad_calls_leave_the_cache_unchanged) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(2));
    cache.set(1, 10);
    const auto deadline = cache.expiry(1);
    BOOST_CHECK_EXCEPTION(cache.set(1, 11, -1ns), std::invalid_argument, names("ttl"));
    BOOST_CHECK_EXCEPTION(cache.set(2, 20, -1h), std::invalid_argument, names("ttl"));
    BOOST_TEST(cache.size() == 1u);
    BOOST_TEST(!cache.contains(2));
    BOOST_TEST((cache.expiry(1) == deadline));
    BOOST_TEST(*cache.get_ptr(1) == 10u);

    int reports = 0;
    cache.report_stats(20ms, [&](const tw::ttl_cache_stats&) { ++reports; });
    BOOST_CHECK_EXCEPTION(cache.report_stats(0ms, [](const tw::ttl_cache_stats&) {}),
                          std::invalid_argument, names("interval"));
    BOOST_CHECK_EXCEPTION(cache.report_stats(-1s, [](const tw::ttl_cache_stats&) {}),
                          std::invalid_argument, names("interval"));
    // The first report still runs.
    BOOST_TEST(run_until(
        io, [&] { return reports >= 1; }, 5s));
    cache.stop_stats_report();
    cache.clear();
}

// --- Entries and statistics --------------------------------------------------------------

BOOST_AUTO_TEST_CASE(set_get_erase_clear_and_stats) {
    net::io_context io;
    tw::ttl_cache_options options;
    options.name = "basic";
    cache_type cache(io, 1h, options);
    BOOST_TEST(cache.empty());
    BOOST_TEST(cache.set(1, 10));
    BOOST_TEST(cache.set(2, 20));
    BOOST_TEST(!cache.set(1, 11)); // a refresh
    BOOST_TEST(cache.size() == 2u);

    BOOST_TEST(cache.get(1).value() == 11u);
    BOOST_TEST(!cache.get(3).has_value());
    BOOST_TEST(*cache.get_ptr(2) == 20u);
    BOOST_TEST(cache.get_ptr(4) == nullptr);
    *cache.get_ptr(2) = 21; // the pointer is to the stored value
    BOOST_TEST(cache.get(2).value() == 21u);

    // contains() and expiry() count nothing.
    BOOST_TEST(cache.contains(1));
    BOOST_TEST(!cache.contains(3));
    BOOST_TEST(cache.expiry(1).has_value());
    BOOST_TEST(!cache.expiry(3).has_value());

    tw::ttl_cache_stats s = cache.stats();
    BOOST_TEST(s.name == "basic");
    BOOST_TEST(s.hits == 4u);
    BOOST_TEST(s.misses == 2u);
    BOOST_TEST(s.size == 2u);
    BOOST_TEST(s.evictions == 0u);
    BOOST_TEST(s.expirations == 0u);
    BOOST_TEST(s.hit_ratio() == 4.0 / 6.0, boost::test_tools::tolerance(1e-12));
    BOOST_TEST(tw::to_string(s) == "cache(basic) - hits: 4, misses: 2, hit_ratio: 66.7%, "
                                   "evictions: 0, expirations: 0, elements: 2");
    BOOST_TEST(tw::ttl_cache_stats{}.hit_ratio() == 0.0);

    BOOST_TEST(cache.erase(1));
    BOOST_TEST(!cache.erase(1));
    BOOST_TEST(!cache.contains(1));
    BOOST_TEST(cache.size() == 1u);

    for (std::uint64_t k = 100; k < 200; ++k) {
        cache.set(k, k);
    }
    BOOST_TEST(cache.size() == 101u);
    cache.clear();
    BOOST_TEST(cache.empty());
    BOOST_TEST(!cache.contains(150));
    BOOST_TEST(cache.set(150, 1)); // usable after clear()
    BOOST_TEST(cache.get(150).value() == 1u);
    // Erased and cleared entries are neither evictions nor expirations.
    BOOST_TEST(cache.stats().evictions == 0u);
    BOOST_TEST(cache.stats().expirations == 0u);
    cache.clear();
    io.run(); // returns: nothing is armed any more
}

BOOST_AUTO_TEST_CASE(many_keys_grow_the_index) {
    net::io_context io;
    cache_type cache(io, 1h);
    // Keys with the same low bits, which the identity std::hash would pile into one bucket.
    for (std::uint64_t i = 0; i < 5000; ++i) {
        BOOST_TEST_REQUIRE(cache.set(i << 20, i));
    }
    BOOST_TEST(cache.size() == 5000u);
    for (std::uint64_t i = 0; i < 5000; ++i) {
        BOOST_TEST_REQUIRE(cache.get(i << 20).value() == i);
    }
    BOOST_TEST(!cache.contains(1));
    for (std::uint64_t i = 0; i < 5000; i += 2) {
        BOOST_TEST_REQUIRE(cache.erase(i << 20));
    }
    BOOST_TEST(cache.size() == 2500u);
    BOOST_TEST(cache.contains(std::uint64_t{1} << 20));
    BOOST_TEST(!cache.contains(std::uint64_t{2} << 20));
}

BOOST_AUTO_TEST_CASE(string_keys_and_heterogeneous_lookup) {
    net::io_context io;
    tw::ttl_cache<std::string, std::string, string_hash, std::equal_to<>> cache(io, 1h);
    const std::string long_key(100, 'k'); // beyond the small-string buffer
    BOOST_TEST(cache.set(std::string_view(long_key), std::string("v1")));
    BOOST_TEST(cache.set("short", "v2"));
    BOOST_TEST(!cache.set(long_key, "v3"));
    BOOST_TEST(cache.contains(std::string_view(long_key)));
    BOOST_TEST(cache.contains("short"));
    BOOST_TEST(cache.get(std::string_view("short")).value() == "v2");
    BOOST_TEST(*cache.get_ptr(std::string_view(long_key)) == "v3");
    BOOST_TEST(cache.erase(std::string_view("short")));
    BOOST_TEST(!cache.contains(std::string("short")));
    BOOST_TEST(cache.size() == 1u);

    // Without a transparent hash, lookups convert to the key type.
    tw::ttl_cache<std::string, int> plain(io, 1h);
    plain.set("a", 1);
    BOOST_TEST(plain.get("a").value() == 1);
    BOOST_TEST(plain.contains(std::string("a")));
}

// --- LRU and limit -----------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(evicts_the_least_recently_used) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(3));
    removal_log log;
    cache.on_removal(log.listener());
    cache.set(1, 10);
    cache.set(2, 20);
    cache.set(3, 30);                     // order, most recent first: 3 2 1
    BOOST_TEST(cache.get(1).has_value()); // 1 3 2
    cache.set(4, 40);                     // evicts 2
    BOOST_TEST((log.keys(removal::evicted) == std::vector<std::uint64_t>{2}));
    BOOST_TEST(log.items.back().value == 20u);

    BOOST_TEST(cache.contains(3)); // contains() does not touch: 4 1 3
    BOOST_TEST(cache.expiry(3).has_value());
    cache.set(5, 50); // evicts 3
    BOOST_TEST((log.keys(removal::evicted) == std::vector<std::uint64_t>{2, 3}));

    cache.set(1, 11);               // a refresh touches: 1 5 4
    BOOST_TEST(cache.get_ptr(4));   // 4 1 5
    BOOST_TEST(!cache.get_ptr(99)); // a miss changes nothing
    cache.set(6, 60);               // evicts 5
    cache.set(7, 70);               // evicts 1
    BOOST_TEST((log.keys(removal::evicted) == std::vector<std::uint64_t>{2, 3, 5, 1}));
    BOOST_TEST(log.items.back().value == 11u);
    BOOST_TEST(cache.size() == 3u);
    BOOST_TEST(cache.stats().evictions == 4u);
    BOOST_TEST(cache.contains(4));
    BOOST_TEST(cache.contains(6));
    BOOST_TEST(cache.contains(7));

    // An erased key leaves the LRU order too.
    BOOST_TEST(cache.erase(4));
    cache.set(8, 80);
    BOOST_TEST(cache.size() == 3u);
    BOOST_TEST(log.items.size() == 4u);
}

BOOST_AUTO_TEST_CASE(limit_of_one) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(1));
    removal_log log;
    cache.on_removal(log.listener());
    for (std::uint64_t k = 0; k < 10; ++k) {
        cache.set(k, k);
        BOOST_TEST_REQUIRE(cache.size() == 1u);
        BOOST_TEST_REQUIRE(cache.contains(k));
    }
    BOOST_TEST(log.keys(removal::evicted).size() == 9u);
}

BOOST_AUTO_TEST_CASE(limit_holds_under_mixed_operations) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(16));
    std::uint64_t state = 7;
    for (int i = 0; i < 20000; ++i) {
        const std::uint64_t r = tw::detail::splitmix64(state);
        const std::uint64_t key = r % 64;
        switch ((r >> 8) % 4) {
        case 0:
        case 1:
            cache.set(key, r);
            break;
        case 2:
            cache.get(key);
            break;
        default:
            cache.erase(key);
            break;
        }
        BOOST_TEST_REQUIRE(cache.size() <= 16u);
    }
}

// --- Expiry ------------------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(never_early_and_eventually_gone) {
    net::io_context io;
    const auto ttl = 120ms;
    const double jitter = 0.2;
    cache_type cache(io, ttl, with_limit(tw::ttl_cache_options::unlimited, jitter));
    removal_log log;
    cache.on_removal(log.listener());

    const auto before = clock_type::now();
    for (std::uint64_t k = 0; k < 50; ++k) {
        cache.set(k, k);
    }
    const auto after = clock_type::now();
    const auto earliest =
        before + std::chrono::duration_cast<clock_type::duration>(ttl * (1.0 - jitter));
    const auto latest_deadline =
        after + std::chrono::duration_cast<clock_type::duration>(ttl * (1.0 + jitter)) + 1ms;

    // Deadlines lie within the jitter band, and are spread over it.
    auto low = clock_type::time_point::max();
    auto high = clock_type::time_point::min();
    for (std::uint64_t k = 0; k < 50; ++k) {
        const auto deadline = cache.expiry(k).value();
        BOOST_TEST_REQUIRE((deadline >= earliest));
        BOOST_TEST_REQUIRE((deadline <= latest_deadline));
        low = std::min(low, deadline);
        high = std::max(high, deadline);
    }
    BOOST_TEST((high - low > ttl * jitter)); // 50 draws cover much of a 2·jitter band

    // Half-way through: everything is there, if the clock says we are still early.
    run_for(io, ttl / 2);
    bool all_there = true;
    for (std::uint64_t k = 0; k < 50; ++k) {
        all_there = all_there && cache.contains(k);
    }
    if (clock_type::now() < earliest) {
        BOOST_TEST(all_there);
        BOOST_TEST(log.items.empty());
    }

    // Eventually, all gone, none early.
    const auto bound = latest_deadline - clock_type::now() + cache_type::slack_for(ttl * 2) + 2s;
    BOOST_TEST(run_until(
        io, [&] { return cache.empty(); }, bound));
    BOOST_TEST(log.items.size() == 50u);
    for (const auto& item : log.items) {
        BOOST_TEST_REQUIRE((item.at >= earliest));
        BOOST_TEST((item.reason == removal::expired));
        BOOST_TEST(item.value == item.key);
    }
    BOOST_TEST(cache.stats().expirations == 50u);
    // Each entry went at or after its own deadline: the listener saw them in deadline order
    // (within a tick, since each entry's slack is under a tick here).
    io.restart();
    io.run_for(10s);
    BOOST_TEST(io.stopped()); // out of work: nothing left armed
}

BOOST_AUTO_TEST_CASE(without_jitter_entries_set_together_expire_together) {
    net::io_context io;
    cache_type cache(io, 10s, with_limit(tw::ttl_cache_options::unlimited, 0.0));
    const auto before = clock_type::now();
    for (std::uint64_t k = 0; k < 20; ++k) {
        cache.set(k, k);
    }
    const auto after = clock_type::now();
    for (std::uint64_t k = 0; k < 20; ++k) {
        const auto deadline = cache.expiry(k).value();
        BOOST_TEST_REQUIRE((deadline >= before + 10s));
        BOOST_TEST_REQUIRE((deadline <= after + 10s + 1ms)); // rounded up to a tick
    }
    cache.clear();
}

BOOST_AUTO_TEST_CASE(set_restarts_the_time_to_live) {
    net::io_context io;
    const auto ttl = 100ms;
    cache_type cache(io, ttl, with_limit(tw::ttl_cache_options::unlimited, 0.0));
    removal_log log;
    cache.on_removal(log.listener());
    cache.set(1, 10);
    cache.set(2, 20);
    run_for(io, 60ms);
    const auto refreshed = clock_type::now();
    cache.set(1, 11); // a later deadline: moved lazily
    run_until(
        io, [&] { return !cache.contains(2); }, 5s);
    const bool one_there = cache.contains(1);
    if (clock_type::now() < refreshed + ttl) {
        BOOST_TEST(one_there);
    }
    BOOST_TEST(run_until(
        io, [&] { return cache.empty(); }, 5s));
    BOOST_TEST_REQUIRE(log.items.size() == 2u);
    BOOST_TEST(log.items[0].key == 2u);
    BOOST_TEST(log.items[1].key == 1u);
    BOOST_TEST(log.items[1].value == 11u);
    BOOST_TEST((log.items[1].at >= refreshed + ttl));

    // A shorter time to live on refresh moves the deadline earlier.
    cache.set(3, 30, 1h);
    const auto shortened = clock_type::now();
    cache.set(3, 31, 30ms);
    BOOST_TEST((cache.expiry(3).value() < shortened + 1s)); // well before the hour
    BOOST_TEST(run_until(
        io, [&] { return cache.empty(); }, 5s));
    BOOST_TEST((log.items.back().at >= shortened + 30ms));
}

BOOST_AUTO_TEST_CASE(own_time_to_live_and_zero) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(tw::ttl_cache_options::unlimited, 0.0));
    removal_log log;
    cache.on_removal(log.listener());
    cache.set(1, 10);
    const auto start = clock_type::now();
    cache.set(2, 20, 40ms);
    cache.set(3, 30, 0ms);         // expires on the next run of the wheel
    BOOST_TEST(cache.contains(3)); // not from inside set()
    BOOST_TEST(run_until(
        io, [&] { return cache.size() == 1u; }, 5s));
    BOOST_TEST(cache.contains(1));
    BOOST_TEST((log.keys(removal::expired) == std::vector<std::uint64_t>{3, 2}));
    BOOST_TEST((log.items[1].at >= start + 40ms));
    cache.clear();
}

BOOST_AUTO_TEST_CASE(slack_policy) {
    BOOST_TEST((cache_type::slack_for(64s) == 1s));
    BOOST_TEST((cache_type::slack_for(1h) == 1s));
    BOOST_TEST((cache_type::slack_for(6400ms) == 100ms));
    BOOST_TEST((cache_type::slack_for(0ms) == 0ms));
}

// --- Listeners that use the cache --------------------------------------------------------

BOOST_AUTO_TEST_CASE(expiry_listener_uses_the_cache) {
    net::io_context io;
    cache_type cache(io, 20ms, with_limit(100, 0.0));
    int renewals = 0;
    cache.set(1000, 0, 1h);
    cache.set(1001, 0, 1h);
    cache.on_removal([&](const std::uint64_t& key, std::uint64_t& value, removal reason) {
        BOOST_TEST_REQUIRE((reason == removal::expired));
        BOOST_TEST(!cache.contains(key)); // already gone
        cache.get(1000);                  // touches another entry
        cache.erase(1001);                // removes another entry
        if (value < 3) {
            ++renewals;
            BOOST_TEST(cache.set(key, value + 1)); // the same key, again
        }
        cache.erase(999); // absent: fine
    });
    for (std::uint64_t k = 0; k < 10; ++k) {
        cache.set(k, 0);
    }
    BOOST_TEST(run_until(
        io, [&] { return cache.size() == 1u; }, 10s));
    BOOST_TEST(renewals == 30);
    BOOST_TEST(cache.contains(1000));
    BOOST_TEST(cache.stats().expirations == 40u);

    // A listener that clears the whole cache.
    cache.on_removal([&](const std::uint64_t&, std::uint64_t&, removal) { cache.clear(); });
    cache.set(1, 1, 1h);
    cache.set(2, 2, 10ms);
    BOOST_TEST(run_until(
        io, [&] { return cache.empty(); }, 10s));
}

BOOST_AUTO_TEST_CASE(eviction_listener_uses_the_cache) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(4));
    std::vector<std::uint64_t> evicted;
    cache.on_removal([&](const std::uint64_t& key, std::uint64_t& value, removal reason) {
        BOOST_TEST_REQUIRE((reason == removal::evicted));
        BOOST_TEST(cache.size() == 4u); // the evicted entry has left
        BOOST_TEST(!cache.contains(key));
        evicted.push_back(key);
        if (key < 100) {
            cache.set(key + 100, value); // inserting evicts again, recursively
        }
        cache.get(key);
    });
    for (std::uint64_t k = 0; k < 4; ++k) {
        cache.set(k, k);
    }
    cache.set(4, 4);
    // 0 is evicted; its listener inserts 100, which evicts 1, whose listener inserts 101...
    BOOST_TEST(cache.size() == 4u);
    BOOST_TEST(evicted.size() >= 2u);
    BOOST_TEST(evicted.front() == 0u);
    BOOST_TEST(cache.stats().evictions == evicted.size());

    // A listener that re-inserts the very key it lost, making it the most recent.
    cache.on_removal([&](const std::uint64_t& key, std::uint64_t& value, removal) {
        if (key == 100) {
            cache.set(key, value);
        }
    });
    cache.clear();
    for (std::uint64_t k : {100, 1, 2, 3}) {
        cache.set(k, k);
    }
    cache.set(4, 4); // evicts 100, which comes back and evicts 1
    BOOST_TEST(cache.size() == 4u);
    BOOST_TEST(cache.contains(100));
    BOOST_TEST(!cache.contains(1));
    BOOST_TEST(cache.contains(4));
}

BOOST_AUTO_TEST_CASE(listener_may_move_the_value_out) {
    net::io_context io;
    tw::ttl_cache<int, std::unique_ptr<int>> cache(io, 1h, with_limit(1));
    std::unique_ptr<int> kept;
    cache.on_removal(
        [&](const int&, std::unique_ptr<int>& value, removal) { kept = std::move(value); });
    cache.set(1, std::make_unique<int>(10));
    cache.set(2, std::make_unique<int>(20));
    BOOST_TEST_REQUIRE(kept != nullptr);
    BOOST_TEST(*kept == 10);
    BOOST_TEST(**cache.get_ptr(2) == 20);
}

BOOST_AUTO_TEST_CASE(listener_exception_leaves_a_consistent_cache) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(2));
    cache.on_removal([](const std::uint64_t&, std::uint64_t&, removal) {
        throw std::runtime_error("listener");
    });
    cache.set(1, 1);
    cache.set(2, 2);
    BOOST_CHECK_THROW(cache.set(3, 3), std::runtime_error);
    BOOST_TEST(cache.size() == 2u);
    BOOST_TEST(!cache.contains(1));
    BOOST_TEST(cache.contains(3));
    cache.on_removal(nullptr);
    cache.set(4, 4);
    BOOST_TEST(cache.size() == 2u);
}

// --- async_take ---------------------------------------------------------------------------

namespace {

// A fetch that answers after `delay`, counting its calls.
struct slow_fetch {
    net::io_context* io;
    int* calls;
    clock_type::duration delay = 20ms;
    error_code fail{};

    template <typename Handler>
    void operator()(const std::uint64_t& key, Handler handler) const {
        ++*calls;
        auto timer = std::make_shared<net::steady_timer>(*io, delay);
        timer->async_wait([timer, h = std::move(handler), key, fail = fail](error_code) mutable {
            std::move(h)(fail, fail ? 0 : key * 10);
        });
    }
};

struct take_result {
    bool done = false;
    error_code ec;
    std::uint64_t value = 0;
};

auto record(take_result& r) {
    return [&r](error_code ec, std::uint64_t value) {
        BOOST_TEST(!r.done);
        r.done = true;
        r.ec = ec;
        r.value = value;
    };
}

} // namespace

BOOST_AUTO_TEST_CASE(take_hit_completes_later_with_the_value) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(10));
    cache.set(1, 10);
    int calls = 0;
    take_result r;
    cache.async_take(1, slow_fetch{&io, &calls}, record(r));
    BOOST_TEST(!r.done); // never inside the initiating function
    io.poll();           // (run() would wait for the entry to expire, an hour)
    BOOST_TEST(r.done);
    BOOST_TEST(!r.ec);
    BOOST_TEST(r.value == 10u);
    BOOST_TEST(calls == 0);
    BOOST_TEST(cache.stats().hits == 1u);
    cache.clear();
}

BOOST_AUTO_TEST_CASE(concurrent_takes_make_one_fetch) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(10));
    int calls = 0;
    std::vector<take_result> results(10);
    for (take_result& r : results) {
        cache.async_take(7, slow_fetch{&io, &calls}, record(r));
    }
    BOOST_TEST(calls == 1);
    BOOST_TEST(run_until(
        io, [&] { return results.back().done; }, 5s));
    for (const take_result& r : results) {
        BOOST_TEST(r.done);
        BOOST_TEST(!r.ec);
        BOOST_TEST(r.value == 70u);
    }
    BOOST_TEST(cache.get_ptr(7) != nullptr); // stored
    BOOST_TEST(*cache.get_ptr(7) == 70u);
    const tw::ttl_cache_stats s = cache.stats();
    BOOST_TEST(s.misses == 1u);    // the take that fetched
    BOOST_TEST(s.hits == 9u + 2u); // the nine that waited, and the two get_ptr()
    // Distinct keys fetch separately.
    take_result a, b;
    cache.async_take(8, slow_fetch{&io, &calls}, record(a));
    cache.async_take(9, slow_fetch{&io, &calls}, record(b));
    BOOST_TEST(calls == 3);
    BOOST_TEST(run_until(
        io, [&] { return a.done && b.done; }, 5s));
    BOOST_TEST(a.value == 80u);
    BOOST_TEST(b.value == 90u);
    cache.clear();
}

BOOST_AUTO_TEST_CASE(fetch_error_reaches_every_waiter_and_caches_nothing) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(10));
    int calls = 0;
    slow_fetch failing{&io, &calls};
    failing.fail = net::error::host_not_found;
    std::vector<take_result> results(5);
    for (take_result& r : results) {
        cache.async_take(3, failing, record(r));
    }
    BOOST_TEST(run_until(
        io, [&] { return results.back().done; }, 5s));
    for (const take_result& r : results) {
        BOOST_TEST(r.done);
        BOOST_TEST((r.ec == net::error::host_not_found));
    }
    BOOST_TEST(!cache.contains(3));
    BOOST_TEST(calls == 1);
    // The next take fetches again, and this time succeeds.
    take_result again;
    cache.async_take(3, slow_fetch{&io, &calls}, record(again));
    BOOST_TEST(calls == 2);
    BOOST_TEST(run_until(
        io, [&] { return again.done; }, 5s));
    BOOST_TEST(!again.ec);
    BOOST_TEST(again.value == 30u);
    BOOST_TEST(cache.contains(3));
    cache.clear();
}

BOOST_AUTO_TEST_CASE(fetch_completing_inline) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(10));
    take_result ok, failed;
    cache.async_take(
        4, [](const std::uint64_t& key, auto handler) { handler(error_code{}, key + 1); },
        record(ok));
    cache.async_take(
        5,
        [](const std::uint64_t&, auto handler) {
            handler(make_error_code(net::error::timed_out), 0);
        },
        record(failed));
    BOOST_TEST(!ok.done);
    BOOST_TEST(!failed.done);
    BOOST_TEST(cache.contains(4)); // stored as soon as the fetch completed
    BOOST_TEST(!cache.contains(5));
    io.poll();
    BOOST_TEST(ok.done);
    BOOST_TEST(ok.value == 5u);
    BOOST_TEST(failed.done);
    BOOST_TEST((failed.ec == net::error::timed_out));
    cache.clear();
}

BOOST_AUTO_TEST_CASE(dropped_fetch_handler_aborts_the_waiters) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(10));
    take_result inline_drop;
    cache.async_take(
        1, [](const std::uint64_t&, auto handler) { auto dropped = std::move(handler); },
        record(inline_drop));

    // Dropped later: the fetch keeps the handler, then lets it go.
    std::vector<take_result> later(3);
    std::shared_ptr<void> held;
    for (take_result& r : later) {
        cache.async_take(
            2,
            [&](const std::uint64_t&, auto handler) {
                held = std::make_shared<decltype(handler)>(std::move(handler));
            },
            record(r));
    }
    io.poll();
    BOOST_TEST(inline_drop.done);
    BOOST_TEST((inline_drop.ec == net::error::operation_aborted));
    BOOST_TEST(!later[0].done);
    held.reset();
    io.restart();
    io.run_for(1s);
    for (const take_result& r : later) {
        BOOST_TEST(r.done);
        BOOST_TEST((r.ec == net::error::operation_aborted));
    }
    BOOST_TEST(cache.empty());
}

BOOST_AUTO_TEST_CASE(fetch_that_throws) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(10));
    take_result r;
    BOOST_CHECK_THROW(
        cache.async_take(
            1, [](const std::uint64_t&, auto) -> void { throw std::runtime_error("fetch"); },
            record(r)),
        std::runtime_error);
    io.run_for(100ms);
    BOOST_TEST(!r.done); // the initiating call failed: no completion
    // The key is not stuck in flight.
    int calls = 0;
    take_result next;
    cache.async_take(1, slow_fetch{&io, &calls}, record(next));
    BOOST_TEST(calls == 1);
    io.restart();
    BOOST_TEST(run_until(
        io, [&] { return next.done; }, 5s));
    BOOST_TEST(next.value == 10u);
    cache.clear();
}

BOOST_AUTO_TEST_CASE(take_with_future_deferred_and_awaitable) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(10));
    int calls = 0;
    cache.set(1, 11);
    std::future<std::uint64_t> hit = cache.async_take(1, slow_fetch{&io, &calls}, net::use_future);
    std::future<std::uint64_t> miss = cache.async_take(2, slow_fetch{&io, &calls}, net::use_future);
    slow_fetch failing{&io, &calls};
    failing.fail = net::error::connection_refused;
    std::future<std::uint64_t> error = cache.async_take(3, failing, net::use_future);

    // deferred: nothing happens until the deferred operation is started.
    auto op = cache.async_take(4, slow_fetch{&io, &calls}, net::deferred);
    BOOST_TEST(calls == 2);
    take_result deferred_result;
    std::move(op)(record(deferred_result));
    BOOST_TEST(calls == 3);

    std::uint64_t awaited = 0;
    int awaited_joined = 0;
    net::co_spawn(
        io,
        [&]() -> net::awaitable<void> {
            awaited = co_await cache.async_take(5, slow_fetch{&io, &calls}, net::use_awaitable);
            // The same key again: a hit now.
            awaited_joined = static_cast<int>(
                co_await cache.async_take(5, slow_fetch{&io, &calls}, net::use_awaitable));
        },
        net::detached);

    BOOST_TEST(run_until(
        io,
        [&] {
            return deferred_result.done && awaited_joined != 0 &&
                   miss.wait_for(0s) == std::future_status::ready;
        },
        5s));
    BOOST_TEST(hit.get() == 11u);
    BOOST_TEST(miss.get() == 20u);
    BOOST_CHECK_THROW(error.get(), boost::system::system_error);
    BOOST_TEST(deferred_result.value == 40u);
    BOOST_TEST(awaited == 50u);
    BOOST_TEST(awaited_joined == 50);
    BOOST_TEST(calls == 4);
    cache.clear();
}

BOOST_AUTO_TEST_CASE(take_cancellation_completes_only_that_waiter) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(10));
    int calls = 0;
    net::cancellation_signal first_signal, second_signal;
    take_result first, second, third;
    cache.async_take(6, slow_fetch{&io, &calls},
                     net::bind_cancellation_slot(first_signal.slot(), record(first)));
    cache.async_take(6, slow_fetch{&io, &calls},
                     net::bind_cancellation_slot(second_signal.slot(), record(second)));
    cache.async_take(6, slow_fetch{&io, &calls}, record(third));
    second_signal.emit(net::cancellation_type::total); // not supported: ignored
    first_signal.emit(net::cancellation_type::terminal);
    first_signal.emit(net::cancellation_type::terminal); // twice: inert
    BOOST_TEST(!first.done);                             // not inside emit()
    io.poll();
    BOOST_TEST(first.done);
    BOOST_TEST((first.ec == net::error::operation_aborted));
    BOOST_TEST(run_until(
        io, [&] { return third.done; }, 5s));
    BOOST_TEST(second.done);
    BOOST_TEST(!second.ec);
    BOOST_TEST(second.value == 60u);
    BOOST_TEST(third.value == 60u);
    BOOST_TEST(cache.contains(6)); // the fetch went on and its value was stored
    BOOST_TEST(calls == 1);
    second_signal.emit(net::cancellation_type::terminal); // after completion: inert
    io.restart();
    io.poll();
    cache.clear();
}

BOOST_AUTO_TEST_CASE(take_survives_its_cancellation_signal_being_destroyed) {
    // Issue 11: the slot's handler used to leave the waiting take pointing at it once the
    // signal (which owns the handler's memory) was destroyed; completing the take then wrote
    // through that pointer (AddressSanitizer: heap-use-after-free).
    net::io_context io;
    cache_type cache(io, 1h, with_limit(10));
    std::function<void()> finish_fetch;
    auto held_fetch = [&finish_fetch](std::uint64_t key, auto handler) {
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        finish_fetch = [h, key] { (*h)({}, key * 10); };
    };
    take_result first, second;
    auto signal = std::make_unique<net::cancellation_signal>();
    cache.async_take(7, held_fetch, net::bind_cancellation_slot(signal->slot(), record(first)));
    signal.reset(); // destroys the handler installed in the slot: the take stays pending
    auto other = std::make_unique<net::cancellation_signal>();
    cache.async_take(7, held_fetch, net::bind_cancellation_slot(other->slot(), record(second)));
    other->slot().clear(); // the same, through the slot
    io.poll();
    BOOST_TEST(!first.done);
    BOOST_TEST(!second.done);
    finish_fetch();
    io.restart();
    io.poll();
    BOOST_TEST(first.done);
    BOOST_TEST(!first.ec);
    BOOST_TEST(first.value == 70u);
    BOOST_TEST(second.done);
    BOOST_TEST(second.value == 70u);
    cache.clear();
}

BOOST_AUTO_TEST_CASE(take_completes_on_the_handler_executor) {
    net::io_context io;
    cache_type cache(io, 1h, with_limit(10));
    auto strand = net::make_strand(io);
    int calls = 0;
    bool on_strand_hit = false, on_strand_miss = false;
    cache.set(1, 1);
    cache.async_take(1, slow_fetch{&io, &calls},
                     net::bind_executor(strand, [&](error_code, std::uint64_t) {
                         on_strand_hit = strand.running_in_this_thread();
                     }));
    cache.async_take(2, slow_fetch{&io, &calls},
                     net::bind_executor(strand, [&](error_code, std::uint64_t) {
                         on_strand_miss = strand.running_in_this_thread();
                     }));
    BOOST_TEST(run_until(
        io, [&] { return on_strand_miss; }, 5s));
    BOOST_TEST(on_strand_hit);
    cache.clear();
}

BOOST_AUTO_TEST_CASE(destroying_the_cache_aborts_its_waiters) {
    net::io_context io;
    int calls = 0;
    std::vector<take_result> results(3);
    {
        cache_type cache(io, 1h, with_limit(10));
        for (take_result& r : results) {
            cache.async_take(1, slow_fetch{&io, &calls}, record(r));
        }
        cache.set(2, 2);
    }
    io.run(); // the fetch completes after the cache is gone: its value is dropped
    for (const take_result& r : results) {
        BOOST_TEST(r.done);
        BOOST_TEST((r.ec == net::error::operation_aborted));
    }
    BOOST_TEST(calls == 1);
}

// --- Periodic report ---------------------------------------------------------------------

BOOST_AUTO_TEST_CASE(periodic_report_counts_each_interval) {
    net::io_context io;
    tw::ttl_cache_options options;
    options.name = "report";
    cache_type cache(io, 1h, options);
    std::vector<tw::ttl_cache_stats> reports;
    cache.set(1, 1);
    cache.get(1);
    cache.get(2);
    cache.report_stats(30ms, [&](const tw::ttl_cache_stats& s) {
        reports.push_back(s);
        if (reports.size() == 1) {
            cache.get(1); // counted in the next interval
            cache.get(1);
        }
        if (reports.size() == 3) {
            cache.stop_stats_report(); // from inside the sink
        }
    });
    cache.get(1); // after the report started: counted in the first interval
    BOOST_TEST(run_until(
        io, [&] { return reports.size() >= 3; }, 5s));
    BOOST_TEST_REQUIRE(reports.size() == 3u);
    BOOST_TEST(reports[0].name == "report");
    BOOST_TEST(reports[0].hits == 1u);
    BOOST_TEST(reports[0].misses == 0u);
    BOOST_TEST(reports[0].size == 1u);
    BOOST_TEST(reports[1].hits == 2u);
    BOOST_TEST(reports[2].hits == 0u);
    BOOST_TEST(cache.stats().hits == 4u); // cumulative
    BOOST_TEST(tw::to_string(reports[1]).find("cache(report) - hits: 2") == 0u);
    cache.clear();
    io.restart();
    io.run_for(10s);
    BOOST_TEST(io.stopped()); // out of work: the report is stopped
}
