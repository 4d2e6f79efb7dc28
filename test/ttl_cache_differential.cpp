//
// test/ttl_cache_differential.cpp
//
// ttl_cache against a reference model, driven by a seeded random sequence of operations.
//
// Phase 1, LRU and limit: times to live of an hour or more, so that time plays no part. The
// model is a std::list (most recent first) and a std::map; every set, set with a time to
// live, get, get_ptr, contains, expiry, erase, clear and async_take (with a fetch that
// completes at once, succeeds or fails) is applied to both, and the results, the size, the
// statistics and the evictions reported to the listener must agree.
//
// Phase 2, expiry: times to live of 1-60 ms (under 64 ms, so slack is below one tick and the
// wheel is exact), sets, refreshes and erases interleaved with runs of the io_context. Every
// expiry must be of a key the model holds, with its latest value, at or after its deadline
// (read with expiry() when it was set), in non-decreasing order of deadline; an entry whose
// deadline is still ahead must be there; and in the end, every entry expires.
//
// Environment:
//   TIMEWHEEL_SEED  seed to replay (default: random, printed)
//   TIMEWHEEL_OPS   operations of phase 1 (default 200,000)
//

#define BOOST_TEST_MODULE ttl_cache_differential
#include <timewheel/ttl_cache.hpp>

#include <boost/test/unit_test.hpp>

#include <boost/asio/io_context.hpp>

#include <chrono>
#include <cstdint>
#include <iterator>
#include <list>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <test/support/seed.hpp>

namespace net = boost::asio;
namespace tw = timewheel;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;
using boost::system::error_code;

namespace {

using cache_type = tw::ttl_cache<std::uint64_t, std::uint64_t>;

using timewheel::test::env_number;

std::uint64_t seed_of_run() {
    static const std::uint64_t seed =
        timewheel::test::seed_from_environment("ttl_cache_differential", std::random_device{}());
    return seed;
}

// The reference: an LRU list with a limit, counters, and what the listener should hear.
class model {
public:
    explicit model(std::size_t limit)
        : limit_(limit) {}

    // Returns the evicted keys, oldest first.
    std::vector<std::uint64_t> set(std::uint64_t key, std::uint64_t value) {
        if (auto it = index_.find(key); it != index_.end()) {
            it->second->second = value;
            order_.splice(order_.begin(), order_, it->second);
            return {};
        }
        order_.emplace_front(key, value);
        index_[key] = order_.begin();
        std::vector<std::uint64_t> evicted;
        while (order_.size() > limit_) {
            evicted.push_back(order_.back().first);
            index_.erase(order_.back().first);
            order_.pop_back();
            ++evictions;
        }
        return evicted;
    }

    std::optional<std::uint64_t> get(std::uint64_t key) {
        auto it = index_.find(key);
        if (it == index_.end()) {
            ++misses;
            return std::nullopt;
        }
        ++hits;
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
    }

    bool contains(std::uint64_t key) const { return index_.count(key) != 0; }

    bool erase(std::uint64_t key) {
        auto it = index_.find(key);
        if (it == index_.end()) {
            return false;
        }
        order_.erase(it->second);
        index_.erase(it);
        return true;
    }

    void clear() {
        order_.clear();
        index_.clear();
    }

    std::size_t size() const { return order_.size(); }

    std::uint64_t hits = 0;
    std::uint64_t misses = 0;
    std::uint64_t evictions = 0;

private:
    std::size_t limit_;
    std::list<std::pair<std::uint64_t, std::uint64_t>> order_;
    std::map<std::uint64_t, std::list<std::pair<std::uint64_t, std::uint64_t>>::iterator> index_;
};

struct take_result {
    bool done = false;
    error_code ec;
    std::uint64_t value = 0;
};

} // namespace

BOOST_AUTO_TEST_CASE(lru_and_limit_against_the_model) {
    const std::uint64_t seed = seed_of_run();
    const std::uint64_t ops = env_number("TIMEWHEEL_OPS").value_or(200'000);
    std::mt19937_64 rng(seed);
    const std::size_t limit = 1 + rng() % 48;
    const std::uint64_t key_space = limit * 2 + 1 + rng() % 32;
    tw::ttl_cache_options options;
    options.limit = limit;
    options.spare_nodes = rng() % 8; // exercise reuse and freeing
    options.seed = seed;
    BOOST_TEST_MESSAGE("seed " << seed << ": limit " << limit << ", keys " << key_space
                               << ", spare nodes " << options.spare_nodes);

    net::io_context io;
    cache_type cache(io, 1h, options);
    model ref(limit);
    std::vector<std::uint64_t> heard; // evictions the listener reported
    cache.on_removal([&](const std::uint64_t& key, std::uint64_t&, tw::ttl_cache_removal r) {
        BOOST_TEST_REQUIRE((r == tw::ttl_cache_removal::evicted), "seed " << seed);
        heard.push_back(key);
    });

    for (std::uint64_t op = 0; op < ops; ++op) {
        const std::uint64_t key = rng() % key_space;
        const std::uint64_t value = rng();
        const unsigned choice = static_cast<unsigned>(rng() % 100);
        heard.clear();
        std::vector<std::uint64_t> expected_evictions;
        if (choice < 30) {
            const bool fresh = !ref.contains(key);
            expected_evictions = ref.set(key, value);
            BOOST_TEST_REQUIRE(cache.set(key, value) == fresh, "seed " << seed << " op " << op);
        } else if (choice < 38) {
            const bool fresh = !ref.contains(key);
            expected_evictions = ref.set(key, value);
            BOOST_TEST_REQUIRE(cache.set(key, value, 1h + std::chrono::seconds(rng() % 3600)) ==
                                   fresh,
                               "seed " << seed << " op " << op);
        } else if (choice < 58) {
            const std::optional<std::uint64_t> got = cache.get(key);
            BOOST_TEST_REQUIRE((got == ref.get(key)), "seed " << seed << " op " << op);
        } else if (choice < 66) {
            const std::uint64_t* got = cache.get_ptr(key);
            const std::optional<std::uint64_t> want = ref.get(key);
            BOOST_TEST_REQUIRE((got != nullptr) == want.has_value(),
                               "seed " << seed << " op " << op);
            BOOST_TEST_REQUIRE((got == nullptr || *got == *want), "seed " << seed << " op " << op);
        } else if (choice < 74) {
            BOOST_TEST_REQUIRE(cache.contains(key) == ref.contains(key),
                               "seed " << seed << " op " << op);
            BOOST_TEST_REQUIRE(cache.expiry(key).has_value() == ref.contains(key),
                               "seed " << seed << " op " << op);
        } else if (choice < 86) {
            BOOST_TEST_REQUIRE(cache.erase(key) == ref.erase(key), "seed " << seed << " op " << op);
        } else if (choice < 99) {
            // async_take with a fetch that completes inside the call, failing one time in four.
            const bool fail = rng() % 4 == 0;
            const bool hit = ref.contains(key);
            std::optional<std::uint64_t> want;
            if (hit) {
                want = ref.get(key); // a hit, and a touch
            } else {
                ++ref.misses;
                if (!fail) {
                    expected_evictions = ref.set(key, value);
                    want = value;
                }
            }
            int fetches = 0;
            take_result result;
            cache.async_take(
                key,
                [&](const std::uint64_t& k, auto handler) {
                    ++fetches;
                    BOOST_TEST_REQUIRE(k == key);
                    if (fail) {
                        handler(make_error_code(net::error::timed_out), 0);
                    } else {
                        handler(error_code{}, value);
                    }
                },
                [&](error_code ec, std::uint64_t v) {
                    result = {true, ec, v};
                });
            BOOST_TEST_REQUIRE(!result.done, "seed " << seed << " op " << op);
            io.restart();
            io.poll();
            BOOST_TEST_REQUIRE(result.done, "seed " << seed << " op " << op);
            BOOST_TEST_REQUIRE(fetches == (hit ? 0 : 1), "seed " << seed << " op " << op);
            BOOST_TEST_REQUIRE(!result.ec == want.has_value(), "seed " << seed << " op " << op);
            BOOST_TEST_REQUIRE((!want || result.value == *want), "seed " << seed << " op " << op);
        } else {
            cache.clear();
            ref.clear();
        }
        BOOST_TEST_REQUIRE((heard == expected_evictions), "seed " << seed << " op " << op);
        BOOST_TEST_REQUIRE(cache.size() == ref.size(), "seed " << seed << " op " << op);
        BOOST_TEST_REQUIRE(cache.size() <= limit, "seed " << seed << " op " << op);
        if (op % 1024 == 0) {
            for (std::uint64_t k = 0; k < key_space; ++k) {
                BOOST_TEST_REQUIRE(cache.contains(k) == ref.contains(k),
                                   "seed " << seed << " op " << op << " key " << k);
            }
        }
    }
    const tw::ttl_cache_stats s = cache.stats();
    BOOST_TEST(s.hits == ref.hits);
    BOOST_TEST(s.misses == ref.misses);
    BOOST_TEST(s.evictions == ref.evictions);
    BOOST_TEST(s.expirations == 0u);
    cache.clear();
}

BOOST_AUTO_TEST_CASE(expiry_order_against_the_model) {
    const std::uint64_t seed = seed_of_run();
    std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
    tw::ttl_cache_options options;
    options.jitter = static_cast<double>(rng() % 20) / 100.0; // 0-19%: ttl·1.19 < 64 ms
    options.seed = seed;
    options.spare_nodes = rng() % 16;

    net::io_context io;
    cache_type cache(io, 30ms, options);

    struct live {
        std::uint64_t value;
        clock_type::time_point deadline;
    };
    std::map<std::uint64_t, live> ref;
    clock_type::time_point last_deadline = clock_type::time_point::min();
    std::size_t expired = 0;
    std::uint64_t event = 0;
    cache.on_removal([&](const std::uint64_t& key, std::uint64_t& value, tw::ttl_cache_removal r) {
        const auto now = clock_type::now();
        ++event;
        BOOST_TEST_REQUIRE((r == tw::ttl_cache_removal::expired), "seed " << seed);
        auto it = ref.find(key);
        BOOST_TEST_REQUIRE((it != ref.end()), "seed " << seed << " expiry " << event << ": key "
                                                      << key << " not cached");
        BOOST_TEST_REQUIRE(it->second.value == value, "seed " << seed << " expiry " << event);
        BOOST_TEST_REQUIRE((now >= it->second.deadline),
                           "seed " << seed << " expiry " << event << ": early");
        BOOST_TEST_REQUIRE((it->second.deadline >= last_deadline),
                           "seed " << seed << " expiry " << event << ": out of order");
        last_deadline = it->second.deadline;
        ref.erase(it);
        ++expired;
    });

    const std::uint64_t key_space = 200;
    std::uint64_t op = 0;
    for (int round = 0; round < 80; ++round) {
        const int burst = 1 + static_cast<int>(rng() % 40);
        for (int i = 0; i < burst; ++i, ++op) {
            const std::uint64_t key = rng() % key_space;
            const std::uint64_t value = rng();
            const unsigned choice = static_cast<unsigned>(rng() % 10);
            if (choice < 8) {
                const bool own = choice < 6; // else the default 30 ms
                const auto ttl = own ? std::chrono::milliseconds(1 + rng() % 53) : 30ms;
                const auto before = clock_type::now();
                if (own) {
                    cache.set(key, value, ttl);
                } else {
                    cache.set(key, value);
                }
                const auto after = clock_type::now();
                const auto deadline = cache.expiry(key).value();
                // The deadline lies in the jitter band, give or take the rounding up to a tick.
                BOOST_TEST_REQUIRE(
                    (deadline >= before + std::chrono::duration_cast<clock_type::duration>(
                                              ttl * (1.0 - options.jitter))),
                    "seed " << seed << " op " << op << ": deadline too early");
                BOOST_TEST_REQUIRE(
                    (deadline <= after + 1ms +
                                     std::chrono::duration_cast<clock_type::duration>(
                                         ttl * (1.0 + options.jitter))),
                    "seed " << seed << " op " << op << ": deadline too late");
                ref[key] = {value, deadline};
            } else {
                BOOST_TEST_REQUIRE(cache.erase(key) == (ref.erase(key) != 0),
                                   "seed " << seed << " op " << op);
            }
        }
        // What has not reached its deadline must still be there.
        for (const auto& [key, entry] : ref) {
            const bool there = cache.contains(key);
            if (clock_type::now() < entry.deadline) {
                BOOST_TEST_REQUIRE(there, "seed " << seed << " op " << op << " key " << key);
            }
        }
        BOOST_TEST_REQUIRE(cache.size() == ref.size(), "seed " << seed << " op " << op);
        io.restart();
        io.run_for(std::chrono::milliseconds(rng() % 12));
        BOOST_TEST_REQUIRE(cache.size() == ref.size(), "seed " << seed << " op " << op);
    }
    // Eventually, everything expires (the longest time to live is 53 ms·1.19).
    const auto end = clock_type::now() + 10s;
    while (!ref.empty() && clock_type::now() < end) {
        io.restart();
        io.run_one_for(10ms);
    }
    BOOST_TEST(ref.empty(), "seed " << seed << ": " << ref.size() << " never expired");
    BOOST_TEST(cache.empty());
    BOOST_TEST(cache.stats().expirations == expired);
    BOOST_TEST_MESSAGE("seed " << seed << ": " << expired << " expiries in order");
}
