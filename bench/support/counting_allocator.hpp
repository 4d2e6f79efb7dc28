//
// bench/support/counting_allocator.hpp
//
// A stateless standard allocator that logs what goes through it, for the benchmarks that
// report the bytes an implementation allocates per entry or per operation (as opposed to
// op_clock.hpp's count of every global allocation).
//

#ifndef TIMEWHEEL_BENCH_SUPPORT_COUNTING_ALLOCATOR_HPP
#define TIMEWHEEL_BENCH_SUPPORT_COUNTING_ALLOCATOR_HPP

#include <cstddef>
#include <memory>

namespace timewheel_bench {

/// What went through every counting_allocator (the benchmarks run on one thread).
struct allocator_log {
    std::size_t calls = 0;      // allocate() calls
    std::size_t live_bytes = 0; // allocated and not yet deallocated
    std::size_t last_bytes = 0; // the size of the last allocation
};

inline allocator_log& counted_allocations() noexcept {
    static allocator_log log;
    return log;
}

template <typename T>
struct counting_allocator {
    using value_type = T;

    counting_allocator() noexcept = default;
    template <typename U>
    counting_allocator(const counting_allocator<U>&) noexcept {}

    T* allocate(std::size_t n) {
        allocator_log& log = counted_allocations();
        ++log.calls;
        log.last_bytes = n * sizeof(T);
        log.live_bytes += n * sizeof(T);
        return std::allocator<T>().allocate(n);
    }

    void deallocate(T* p, std::size_t n) noexcept {
        counted_allocations().live_bytes -= n * sizeof(T);
        std::allocator<T>().deallocate(p, n);
    }

    template <typename U>
    bool operator==(const counting_allocator<U>&) const noexcept {
        return true;
    }
};

} // namespace timewheel_bench

#endif // TIMEWHEEL_BENCH_SUPPORT_COUNTING_ALLOCATOR_HPP
