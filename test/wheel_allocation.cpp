//
// test/wheel_allocation.cpp
//
// The wheel never allocates: global operator new and delete are replaced by counting
// versions, and each phase of a large workload (arm, move later, move earlier, cancel,
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

namespace {

std::atomic<std::size_t> allocations{0};

void* counted_allocate(std::size_t size) noexcept {
    allocations.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(size == 0 ? 1 : size);
}

void* counted_allocate(std::size_t size, std::align_val_t alignment) noexcept {
    allocations.fetch_add(1, std::memory_order_relaxed);
    const std::size_t align = static_cast<std::size_t>(alignment);
    const std::size_t rounded = (size + align - 1) / align * align; // aligned_alloc wants this
    return std::aligned_alloc(align, rounded == 0 ? align : rounded);
}

void* checked(void* p) {
    if (p == nullptr) {
        throw std::bad_alloc();
    }
    return p;
}

} // namespace

// Replacements of every replaceable global allocation function. Once they are inlined, GCC
// sees free() applied to what operator new returned: with these replacements, that pairing is
// the right one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif
void* operator new(std::size_t size) {
    return checked(counted_allocate(size));
}
void* operator new[](std::size_t size) {
    return checked(counted_allocate(size));
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    return counted_allocate(size);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    return counted_allocate(size);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
    return checked(counted_allocate(size, alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
    return checked(counted_allocate(size, alignment));
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return counted_allocate(size, alignment);
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return counted_allocate(size, alignment);
}

void operator delete(void* p) noexcept {
    std::free(p);
}
void operator delete[](void* p) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t) noexcept {
    std::free(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept {
    std::free(p);
}
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    std::free(p);
}
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept {
    std::free(p);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace tw = timewheel;
using tw::tick_type;

namespace {

struct counted_entry : tw::wheel_entry {
    std::uint32_t id = 0;
};

// Allocations made while running `phase`.
template <typename Phase>
std::size_t allocations_during(Phase&& phase) {
    const std::size_t before = allocations.load();
    phase();
    return allocations.load() - before;
}

std::uint64_t mix(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdu;
    x ^= x >> 33;
    return x;
}

} // namespace

BOOST_AUTO_TEST_CASE(the_counter_counts) {
    // Explicit calls, which the compiler may not elide as it may new-expressions.
    bool aligned = false;
    const std::size_t counted = allocations_during([&aligned] {
        void* p = ::operator new(24);
        void* q = ::operator new[](48);
        void* r = ::operator new (256, std::align_val_t{64});
        void* s = ::operator new(8, std::nothrow);
        aligned = reinterpret_cast<std::uintptr_t>(r) % 64 == 0;
        ::operator delete(p);
        ::operator delete[](q);
        ::operator delete (r, std::align_val_t{64});
        ::operator delete(s);
    });
    BOOST_TEST(counted == 4u);
    BOOST_TEST(aligned);
}

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
    const std::size_t arm = allocations_during([&] {
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

    const std::size_t move_later = allocations_during([&] {
        for (std::size_t i = 0; i < n; ++i) {
            if (!w->move(entries[i], entries[i].deadline() + 1 + mix(i + 7) % 100'000)) {
                ++failures;
            }
        }
    });
    BOOST_TEST(move_later == 0u);

    const std::size_t move_earlier = allocations_during([&] {
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

    const std::size_t cancel = allocations_during([&] {
        for (std::size_t i = 0; i < n; i += 4) {
            if (!w->cancel(entries[i]) || w->cancel(entries[i])) {
                ++failures;
            }
        }
    });
    BOOST_TEST(cancel == 0u);

    const std::size_t rearm = allocations_during([&] {
        for (std::size_t i = 0; i < n; ++i) {
            if (i % 4 == 0 || i % 8 == 1) { // the cancelled ones, and some armed ones
                w->arm(entries[i], w->now() + mix(i + 11) % 50'000);
            }
        }
    });
    BOOST_TEST(rearm == 0u);

    std::size_t expiries = 0;
    const std::size_t next_expiry = allocations_during([&] {
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
    const std::size_t advance = allocations_during([&] {
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
