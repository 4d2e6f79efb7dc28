//
// test/support/counting_new.cpp
//
// The replaceable global allocation functions, counting: linked into the tests that include
// allocation_counter.hpp (see test/CMakeLists.txt), and only into those, and into the
// benchmark binaries (bench/CMakeLists.txt), whose op clock reads the calling thread's count.
//
// aligned_alloc is replaced too: Asio's recycling allocator (boost::asio::aligned_new) calls
// it directly, not operator new, so without it an operation allocated by Asio is not seen.
//

#include <test/support/allocation_counter.hpp>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

#include <stdlib.h>

namespace {

std::atomic<std::size_t> allocations{0};         // operator new
std::atomic<std::size_t> aligned_allocations{0}; // aligned_alloc
thread_local std::size_t thread_allocations = 0; // both, by this thread

void count() noexcept {
    allocations.fetch_add(1, std::memory_order_relaxed);
    ++thread_allocations;
}

// Not counted: the callers count once per request.
void* allocate_uncounted(std::size_t size, std::size_t alignment) noexcept {
    if (size == 0) {
        size = 1;
    }
    if (alignment <= alignof(std::max_align_t)) {
        return std::malloc(size);
    }
    void* p = nullptr;
    alignment = alignment < sizeof(void*) ? sizeof(void*) : alignment;
    return posix_memalign(&p, alignment, size) == 0 ? p : nullptr;
}

void* allocate(std::size_t size, std::size_t alignment) noexcept {
    count();
    return allocate_uncounted(size, alignment);
}

// As the standard's operator new: call the new_handler until it gives up.
void* allocate_or_throw(std::size_t size, std::size_t alignment) {
    count();
    for (;;) {
        if (void* p = allocate_uncounted(size, alignment)) {
            return p;
        }
        std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) {
            throw std::bad_alloc();
        }
        handler();
    }
}

constexpr std::size_t plain = alignof(std::max_align_t);

std::size_t value(std::align_val_t alignment) noexcept {
    return static_cast<std::size_t>(alignment);
}

} // namespace

std::size_t timewheel::test::allocations_so_far() noexcept {
    return allocations.load(std::memory_order_relaxed);
}

std::size_t timewheel::test::all_allocations_so_far() noexcept {
    return allocations.load(std::memory_order_relaxed) +
           aligned_allocations.load(std::memory_order_relaxed);
}

std::size_t timewheel::test::thread_allocations_so_far() noexcept {
    return thread_allocations;
}

// Asio's recycling allocator calls it directly (see the top of this file).
extern "C" void* aligned_alloc(std::size_t alignment, std::size_t size) noexcept {
    aligned_allocations.fetch_add(1, std::memory_order_relaxed);
    ++thread_allocations;
    return allocate_uncounted(size, alignment);
}

void* operator new(std::size_t size) {
    return allocate_or_throw(size, plain);
}
void* operator new[](std::size_t size) {
    return allocate_or_throw(size, plain);
}
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    return allocate(size, plain);
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    return allocate(size, plain);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
    return allocate_or_throw(size, value(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
    return allocate_or_throw(size, value(alignment));
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return allocate(size, value(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t&) noexcept {
    return allocate(size, value(alignment));
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
