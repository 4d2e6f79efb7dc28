//
// test/wheel_allocation.cpp
//
// The wheel never allocates: every global allocation is counted (support/allocation_counter.hpp),
// and each phase of a large workload (arm, move later, move earlier, cancel,
// re-arm, next_expiry, advance with cascading and re-arming handlers) must count zero.
//

#define BOOST_TEST_MODULE wheel_allocation
#include <timewheel/wheel.hpp>

#include <boost/test/unit_test.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>
#include <vector>

#include <test/support/allocation_counter.hpp>

namespace tw = timewheel;
using tw::tick_type;
using tw::test::count_allocations;

namespace {

struct counted_entry : tw::wheel_entry {
    std::uint32_t id = 0;
};

std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdu;
    x ^= x >> 33;
    return x;
}

} // namespace

BOOST_AUTO_TEST_CASE(steady_state_allocates_nothing) {
    constexpr std::size_t n = 100'000;
    std::vector<counted_entry> entries(n);
    for (std::size_t i = 0; i < n; ++i) {
        entries[i].id = static_cast<std::uint32_t>(i);
    }
    std::vector<unsigned char> rearmed(n, 0);
    const auto w = std::make_unique<tw::wheel>(1000); // about 10 KB: before counting
    const tick_type range = w->range();
    std::size_t failures = 0; // operations that returned an unexpected value

    // Arm: every level, beyond the range, due now; some with slack.
    const std::size_t arm = count_allocations([&] {
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint64_t h = mix(i + 1);
            const unsigned kind = static_cast<unsigned>(i % 8);
            tick_type deadline;
            if (kind == 7) {
                deadline = w->now() + range + h % (3 * range);
            } else if (kind == 6 && i % 48 == 6) {
                deadline = w->now() - 10; // due now
            } else {
                deadline = w->now() + 1 + h % (tick_type{1} << (6 * (kind % 6) + 6));
            }
            w->arm(entries[i], deadline, i % 5 == 0 ? h % 5000 : 0);
        }
    });
    BOOST_TEST(arm == 0u);

    const std::size_t move_later = count_allocations([&] {
        for (std::size_t i = 0; i < n; ++i) {
            if (!w->move(entries[i], entries[i].deadline() + 1 + mix(i + 7) % 100'000)) {
                ++failures;
            }
        }
    });
    BOOST_TEST(move_later == 0u);

    const std::size_t move_earlier = count_allocations([&] {
        for (std::size_t i = 0; i < n; i += 2) {
            const tick_type now = w->now();
            const tick_type current = entries[i].deadline();
            const tick_type earlier =
                current > now + 1 ? now + 1 + mix(i + 3) % (current - now - 1) : now;
            if (!w->move(entries[i], earlier)) {
                ++failures;
            }
        }
    });
    BOOST_TEST(move_earlier == 0u);

    const std::size_t cancel = count_allocations([&] {
        for (std::size_t i = 0; i < n; i += 4) {
            if (!w->cancel(entries[i]) || w->cancel(entries[i])) {
                ++failures;
            }
        }
    });
    BOOST_TEST(cancel == 0u);

    const std::size_t rearm = count_allocations([&] {
        for (std::size_t i = 0; i < n; ++i) {
            if (i % 4 == 0 || i % 8 == 1) { // the cancelled ones, and some armed ones
                w->arm(entries[i], w->now() + mix(i + 11) % 50'000);
            }
        }
    });
    BOOST_TEST(rearm == 0u);

    std::size_t expiries = 0;
    const std::size_t next_expiry = count_allocations([&] {
        for (int i = 0; i < 1000; ++i) {
            if (w->next_expiry()) {
                ++expiries;
            }
            if (w->empty()) {
                ++failures;
            }
        }
    });
    BOOST_TEST(next_expiry == 0u);
    BOOST_TEST(expiries == 1000u);

    // Fire everything, cascading through every level; every tenth entry re-arms itself once
    // from its handler, and some advances are cut by a budget.
    std::size_t fired = 0;
    std::size_t rearms = 0;
    auto handler = [&](tw::wheel_entry& e) {
        counted_entry& entry = static_cast<counted_entry&>(e);
        if (entry.id % 10 == 0 && rearmed[entry.id] == 0) {
            rearmed[entry.id] = 1;
            ++rearms;
            w->arm(entry, w->now() + 100 + entry.id % 1000);
        }
    };
    const std::size_t advance = count_allocations([&] {
        fired += w->advance(w->now() + 1000, handler);
        for (int i = 0; i < 20; ++i) {
            fired += w->advance(w->now() + 100'000, 1000, handler);
        }
        fired += w->advance(w->now() + 10'000'000, handler);
        fired += w->advance(w->now() + 5 * range, handler);
        fired += w->advance(w->now() + 2000, handler); // the last re-arms
    });
    BOOST_TEST(advance == 0u);

    BOOST_TEST(failures == 0u);
    BOOST_TEST(rearms == n / 10);
    BOOST_TEST(fired == n + rearms);
    BOOST_TEST(w->empty());
    BOOST_TEST_MESSAGE("fired " << fired << " entries, " << rearms << " re-armed by handlers");
}
