//
// timewheel/redis/detail/handler_memory.hpp
//
// Memory for the connection's own operations: its socket read, its write, its deferred flush.
// Each of them has at most one operation pending at a time, so one block each, inside the
// connection, serves every operation without a heap allocation. Asio's recycling allocator
// would serve them from a per-thread cache of two blocks, which the callers' operations
// (several in flight when pipelining) share and keep full, so that the connection's own
// operations missed it and went to the heap: about one allocation per write.
//
// This is Asio's "custom allocation" example, as a server would write it: the handler is
// bound to a handler_allocator with bind_allocator, and Asio allocates the operation through
// it. A request larger than the block, or one that finds the block taken, goes to operator new.
//
#ifndef TIMEWHEEL_REDIS_DETAIL_HANDLER_MEMORY_HPP
#define TIMEWHEEL_REDIS_DETAIL_HANDLER_MEMORY_HPP

#include <cstddef>
#include <new>

namespace timewheel::redis::detail {

class handler_memory {
public:
    handler_memory() noexcept = default;
    handler_memory(const handler_memory&) = delete;
    handler_memory& operator=(const handler_memory&) = delete;

    void* allocate(std::size_t size, std::size_t align) {
        if (!in_use_ && size <= sizeof(storage_) && align <= alignof(std::max_align_t)) {
            in_use_ = true;
            return storage_;
        }
        return ::operator new(size, std::align_val_t(align));
    }

    void deallocate(void* p, std::size_t align) noexcept {
        if (p == storage_) {
            in_use_ = false;
        } else {
            ::operator delete(p, std::align_val_t(align));
        }
    }

private:
    // Large enough for a socket operation of Asio 1.81 with the connection's handler (a
    // write_op inside a send operation: 224 bytes with g++ 12).
    alignas(std::max_align_t) unsigned char storage_[384];
    bool in_use_ = false;
};

// The allocator a handler is bound to (boost::asio::bind_allocator) to use a handler_memory.
// The memory must outlive the operation: the connection's handlers hold the connection.
template <typename T>
class handler_allocator {
public:
    using value_type = T;

    explicit handler_allocator(handler_memory& memory) noexcept
        : memory_(&memory) {}

    template <typename U>
    handler_allocator(const handler_allocator<U>& other) noexcept
        : memory_(other.memory_) {}

    T* allocate(std::size_t n) {
        return static_cast<T*>(memory_->allocate(sizeof(T) * n, alignof(T)));
    }

    void deallocate(T* p, std::size_t) noexcept { memory_->deallocate(p, alignof(T)); }

    template <typename U>
    bool operator==(const handler_allocator<U>& other) const noexcept {
        return memory_ == other.memory_;
    }

private:
    template <typename>
    friend class handler_allocator;

    handler_memory* memory_;
};

} // namespace timewheel::redis::detail

#endif // TIMEWHEEL_REDIS_DETAIL_HANDLER_MEMORY_HPP
