//
// test/redis/support/counting_new.hpp
//
// Replaces every global allocation function with one that counts, for the allocation
// tests of the Redis client. Include it in exactly one translation unit of a test binary.
// (A copy of test/wheel_allocation.cpp's replacements until test/support/ offers one home
// for them; then this file becomes an include of that one.)
//

#ifndef TIMEWHEEL_TEST_REDIS_SUPPORT_COUNTING_NEW_HPP
#define TIMEWHEEL_TEST_REDIS_SUPPORT_COUNTING_NEW_HPP

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

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

#endif // TIMEWHEEL_TEST_REDIS_SUPPORT_COUNTING_NEW_HPP
