//
// test/support/allocation_counter.hpp
//
// Counting the heap allocations of a test program, so that "allocates nothing" is a claim that
// can fail.
//
// Including this header makes test/CMakeLists.txt link counting_new.cpp into the test. It
// looks when CMake configures: after adding the include to an existing test, re-run cmake, or
// the link misses all_allocations_so_far(). counting_new.cpp replaces every replaceable global
// operator new and delete (plain, array, nothrow, aligned, sized), and aligned_alloc (which
// Asio's recycling allocator calls), with versions over malloc that count each allocation, on every
// thread, in one atomic. Counting is always on; an allocation_counter reads the difference, so
// counters nest and cost nothing to start. Under AddressSanitizer the replacements call ASan's
// malloc, so leaks and overflows are still caught (only new/delete mismatches are not).
//
//     timewheel::test::allocation_counter counter;
//     wheel.move(entry, later);
//     BOOST_TEST(counter.count() == 0u);
//
// Allocations made by other threads (a watchdog's, Boost.Test's) count as well: read the
// counter before anything else can run.
//

#ifndef TIMEWHEEL_TEST_SUPPORT_ALLOCATION_COUNTER_HPP
#define TIMEWHEEL_TEST_SUPPORT_ALLOCATION_COUNTER_HPP

#include <cstddef>
#include <utility>

namespace timewheel::test {

// Calls of the global operator new made by the program so far (every one that returned
// memory or failed), on every thread. Not aligned_alloc: see all_allocations_so_far().
// Defined in counting_new.cpp.
std::size_t allocations_so_far() noexcept;

// The same plus the calls of aligned_alloc, which Asio's recycling allocator makes when its
// per-thread cache cannot serve an operation (always, outside the io_context's thread).
// What allocation_counter counts.
std::size_t all_allocations_so_far() noexcept;

// Calls of operator new and aligned_alloc made by the calling thread only (what a
// benchmark's timed batch did).
std::size_t thread_allocations_so_far() noexcept;

// Counts the global allocations made between its construction (or reset()) and count().
class allocation_counter {
public:
    allocation_counter() noexcept
        : start_(all_allocations_so_far()) {}

    allocation_counter(const allocation_counter&) = delete;
    allocation_counter& operator=(const allocation_counter&) = delete;

    // Allocations since construction or the last reset().
    std::size_t count() const noexcept { return all_allocations_so_far() - start_; }

    // Starts counting from zero again.
    void reset() noexcept { start_ = all_allocations_so_far(); }

private:
    std::size_t start_;
};

// The number of global allocations made while f() runs.
template <typename Function>
std::size_t count_allocations(Function&& f) {
    allocation_counter counter;
    std::forward<Function>(f)();
    return counter.count();
}

} // namespace timewheel::test

#endif // TIMEWHEEL_TEST_SUPPORT_ALLOCATION_COUNTER_HPP
