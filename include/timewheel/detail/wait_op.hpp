//
// timewheel/detail/wait_op.hpp
//
// What a wheel_timer keeps in the io_context's wheel: its entry, its expiry and its pending
// waits.
//
// The first wait of a timer lives inside the timer (inline_wait) when its handler is small
// (inline_handler_size bytes, nothrow movable) and completes natively (neither the I/O
// executor nor the handler's associated executor needs outstanding work tracked, so Asio's
// handler_work would call the handler directly): no allocation, and arm and cancel touch one
// object. A wait that joins a pending one, or whose handler does not qualify, is an
// operation allocated with the handler's associated allocator (async_op on wait_op_base), as
// before.
//
// The handler leaves the timer when its wait completes: it is relocated into a carrier, a
// wait_op_base recycled by the service (inline_wait_carriers), which the scheduler runs as
// the wait's one handler. So the timer may be destroyed, moved or re-armed as soon as its
// wait has completed, and its storage is free before the handler runs (a handler that
// waits again on its timer gets the inline storage back). A carrier is allocated only when
// none is free: the pool grows to the most waits ever in flight (completed, handler not yet
// run) at once, and stays there.
//

#ifndef TIMEWHEEL_DETAIL_WAIT_OP_HPP
#define TIMEWHEEL_DETAIL_WAIT_OP_HPP

#include <timewheel/detail/async_op.hpp>
#include <timewheel/detail/service_entry.hpp>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/bind_allocator.hpp>
#include <boost/asio/bind_cancellation_slot.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/detail/handler_invoke_helpers.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <utility>

namespace timewheel {
namespace detail {

struct timer_impl;

class wait_op_base : public async_op_base {
public:
    using value_type = void; // completion signature void(error_code)

    timer_impl* timer_ = nullptr; // the timer whose queue holds this op, while it is pending
    std::chrono::steady_clock::time_point expiry_{}; // orders the waits that fire together

protected:
    explicit wait_op_base(func_type complete) noexcept
        : async_op_base(complete) {}
};

/// The handler bytes a timer holds inline: a lambda capturing two pointers, the handler of
/// a coroutine (use_awaitable), a bound member function.
inline constexpr std::size_t inline_handler_size = 2 * sizeof(void*);

// Whether moving a T cannot throw: inline handlers are moved on paths that cannot report
// failure (completion, moving the timer). Asio's binders declare no noexcept, but move
// nothing that can throw when what they bind cannot.
template <typename T>
struct nothrow_movable : std::is_nothrow_move_constructible<T> {};

template <typename Part>
inline constexpr bool nothrow_part =
    std::is_nothrow_move_constructible_v<Part>&& std::is_nothrow_copy_constructible_v<Part>;

template <typename T, typename Slot>
struct nothrow_movable<net::cancellation_slot_binder<T, Slot>>
    : std::bool_constant<nothrow_movable<T>::value && nothrow_part<Slot>> {};

template <typename T, typename Allocator>
struct nothrow_movable<net::allocator_binder<T, Allocator>>
    : std::bool_constant<nothrow_movable<T>::value && nothrow_part<Allocator>> {};

template <typename T, typename Executor>
struct nothrow_movable<net::executor_binder<T, Executor>>
    : std::bool_constant<nothrow_movable<T>::value && nothrow_part<Executor>> {};

/// Whether a handler type can be kept inline (its executors are checked at run time).
template <typename Handler>
inline constexpr bool
    fits_inline = sizeof(Handler) <= inline_handler_size &&
                  alignof(Handler) <= alignof(void*) && nothrow_movable<Handler>::value;

class inline_wait_carrier;

enum class inline_action { relocate, invoke };

// The one function per handler type: moves the handler to `to` (relocate), or runs it from
// a carrier (invoke: moved out, carrier released, then the upcall unless `owner` is null,
// when the context is shutting down).
using inline_wait_function = void (*)(inline_action action, void* from, void* to, void* owner,
                                      inline_wait_carrier* carrier);

/// Storage for one handler, in a timer or in a carrier.
struct inline_handler_storage {
    inline_wait_function fn_ = nullptr; // set while a handler is stored
    alignas(void*) unsigned char bytes_[inline_handler_size];

    /// Moves the stored handler to @c to, which must be empty.
    void relocate_to(inline_handler_storage& to) noexcept {
        fn_(inline_action::relocate, bytes_, to.bytes_, nullptr, nullptr);
        to.fn_ = fn_;
        fn_ = nullptr;
    }
};

/// The cancellation link of the wait a timer holds inline (its handler is in timer_hot).
class inline_wait : public cancellable<inline_wait> {};

class inline_wait_carriers;

/// A completed inline wait on its way to the handler: what the scheduler runs.
class inline_wait_carrier final : public wait_op_base {
public:
    explicit inline_wait_carrier(inline_wait_carriers& pool) noexcept
        : wait_op_base(&inline_wait_carrier::do_complete)
        , pool_(pool) {}

    inline_handler_storage handler_;
    inline_wait_carrier* next_free_ = nullptr;

    /// Returns the carrier to its pool (its handler already moved out).
    void release() noexcept;

private:
    static void do_complete(void* owner, net::detail::scheduler_operation* base,
                            const boost::system::error_code& /*ec*/, std::size_t /*bytes*/) {
        auto* carrier = static_cast<inline_wait_carrier*>(base);
        carrier->handler_.fn_(inline_action::invoke, carrier->handler_.bytes_, nullptr, owner,
                              carrier);
    }

    inline_wait_carriers& pool_;
};

/// The service's free carriers. Single-threaded, as the service.
class inline_wait_carriers {
public:
    inline_wait_carriers() noexcept = default;
    inline_wait_carriers(const inline_wait_carriers&) = delete;
    inline_wait_carriers& operator=(const inline_wait_carriers&) = delete;

    ~inline_wait_carriers() {
        while (inline_wait_carrier* c = free_) {
            free_ = c->next_free_;
            delete c;
        }
    }

    /// A free carrier. Allocates one when none is free: called on completion paths that
    /// cannot report failure, so running out of memory there terminates the program.
    inline_wait_carrier* take() noexcept {
        inline_wait_carrier* c = free_;
        if (c == nullptr) {
            return new inline_wait_carrier(*this); // std::terminate on bad_alloc (noexcept)
        }
        free_ = c->next_free_;
        return c;
    }

    void give(inline_wait_carrier* c) noexcept {
        c->next_free_ = free_;
        free_ = c;
    }

private:
    inline_wait_carrier* free_ = nullptr;
};

inline void inline_wait_carrier::release() noexcept {
    pool_.give(this);
}

// inline_wait_function for Handler. The upcall is handler_work's for a handler that owns no
// work (the only ones kept inline): a direct call through asio_handler_invoke.
template <typename Handler>
void inline_wait_act(inline_action action, void* from, void* to, void* owner,
                     inline_wait_carrier* carrier) {
    Handler* handler = std::launder(static_cast<Handler*>(from));
    switch (action) {
    case inline_action::relocate:
        ::new (to) Handler(std::move(*handler));
        handler->~Handler();
        return;
    case inline_action::invoke: {
        // Move the handler out and release the carrier before the upcall, as Asio's
        // operations free their memory first.
        net::detail::binder1<Handler, boost::system::error_code> bound(*handler, carrier->ec_);
        handler->~Handler();
        carrier->handler_.fn_ = nullptr;
        carrier->release();
        if (owner != nullptr) { // null when the context is shutting down: destroy only
            net::detail::fenced_block block(net::detail::fenced_block::half);
            boost_asio_handler_invoke_helpers::invoke(bound, bound.handler_);
        }
        return;
    }
    }
}

void on_timer_event(wheel_service& service, service_entry& entry, entry_event event);

// The fields that arm and cancel read and write besides the wheel entry, after it: with
// the service pointer in front, the timer's first 96 bytes. The slack and the inline wait's
// cancellation link come after them, the executor last. (Putting these fields before the
// entry, so that arm touched 80 bytes, measured slower at 1M timers on a loaded machine:
// the entry is best in the line that the first read of the timer brings in.)
class timer_hot {
public:
    inline_handler_storage handler_; // the inline wait's handler, while pending
    std::chrono::steady_clock::time_point expiry{};

    /// Whether the inline wait is pending.
    bool pending() const noexcept { return handler_.fn_ != nullptr; }

protected:
    // The allocated waits, after the inline one: a circular list through the operations'
    // `next_` (the tail's next is the oldest), so that one pointer keeps it FIFO. Its low
    // bits hold io() and whether the timer has slack (timer_impl), in the hot part, so that
    // the timer stays 160 bytes.
    std::uintptr_t tail_bits_ = 0;
};

struct timer_impl : service_entry, timer_hot, inline_wait {
    timer_impl() noexcept
        : service_entry(&on_timer_event) {}

    /// What the timer's first wait found of its I/O executor: whether Asio's handler_work
    /// would own work on it. The executor never changes under a timer (it moves with the
    /// timer's state), so it is examined once, not on every arm: it lies in the last cache
    /// line of a wheel_timer, which arm and cancel otherwise never touch.
    enum class io_executor : std::uintptr_t { unknown = 0, native = 1, tracked = 2 };

    io_executor io() const noexcept { return static_cast<io_executor>(tail_bits_ & io_mask); }

    void set_io(io_executor io) noexcept {
        tail_bits_ = (tail_bits_ & ~io_mask) | static_cast<std::uintptr_t>(io);
    }

    /// The slack, kept out of the hot part: arm reads it only when it is not zero.
    std::chrono::steady_clock::duration slack() const noexcept {
        return (tail_bits_ & slack_bit) != 0 ? slack_ : std::chrono::steady_clock::duration{};
    }

    void set_slack(std::chrono::steady_clock::duration slack) noexcept {
        slack_ = slack;
        tail_bits_ = slack != std::chrono::steady_clock::duration::zero() ? tail_bits_ | slack_bit
                                                                          : tail_bits_ & ~slack_bit;
    }

    /// The newest allocated wait (null: none).
    wait_op_base* queued_tail() const noexcept {
        return reinterpret_cast<wait_op_base*>(tail_bits_ & ~low_mask);
    }

    bool has_waits() const noexcept { return pending() || (tail_bits_ & ~low_mask) != 0; }

    /// Whether the timer has no wait and no slack, is not armed, and its I/O executor was
    /// found native: what wheel_service::async_wait() completes without a call.
    bool plain_and_idle() const noexcept {
        return !pending() && tail_bits_ == static_cast<std::uintptr_t>(io_executor::native) &&
               !armed();
    }

    wait_op_base* queued_front() const noexcept {
        wait_op_base* tail = queued_tail();
        return tail != nullptr ? next_of(tail) : nullptr;
    }

    void push_queued(wait_op_base* op) noexcept {
        wait_op_base* tail = queued_tail();
        if (tail == nullptr) {
            set_next(op, op);
        } else {
            set_next(op, next_of(tail));
            set_next(tail, op);
        }
        set_queued_tail(op);
    }

    /// Removes @c op (queued here) from the list.
    void unlink_queued(wait_op_base* op) noexcept {
        wait_op_base* tail = queued_tail();
        wait_op_base* prev = tail;
        while (next_of(prev) != op) {
            prev = next_of(prev);
        }
        if (prev == op) { // the only one
            set_queued_tail(nullptr);
        } else {
            set_next(prev, next_of(op));
            if (tail == op) {
                set_queued_tail(prev);
            }
        }
        set_next(op, nullptr);
    }

    /// Takes over @c other's allocated waits, its slack and what it found of its executor
    /// (which moves with the executor); @c other is left with none of them.
    void take_queued(timer_impl& other) noexcept {
        tail_bits_ = std::exchange(other.tail_bits_, 0);
        slack_ = std::exchange(other.slack_, std::chrono::steady_clock::duration{});
        if (wait_op_base* tail = queued_tail()) {
            wait_op_base* op = tail;
            do {
                op->timer_ = this;
                op = next_of(op);
            } while (op != tail);
        }
    }

    /// Pending waits, inline and allocated.
    std::size_t waits() const noexcept {
        std::size_t n = pending() ? 1 : 0;
        if (wait_op_base* tail = queued_tail()) {
            for (wait_op_base* op = next_of(tail);; op = next_of(op)) {
                ++n;
                if (op == tail) {
                    break;
                }
            }
        }
        return n;
    }

    static wait_op_base* next_of(wait_op_base* op) noexcept {
        return net::detail::op_queue_access::next(op);
    }
    static void set_next(wait_op_base* op, wait_op_base* next) noexcept {
        net::detail::op_queue_access::next(op, next);
    }

private:
    static constexpr std::uintptr_t io_mask = 3;
    static constexpr std::uintptr_t slack_bit = 4;
    static constexpr std::uintptr_t low_mask = io_mask | slack_bit;
    static_assert(alignof(wait_op_base) > low_mask, "the low bits of an operation's address");

    void set_queued_tail(wait_op_base* op) noexcept {
        tail_bits_ = reinterpret_cast<std::uintptr_t>(op) | (tail_bits_ & low_mask);
    }

    std::chrono::steady_clock::duration slack_{}; // valid while slack_bit is set
};

/// Examines the timer's I/O executor at its first wait: whether Asio's handler_work would
/// own work on it. Out of line: every later wait reads the answer from timer_impl::io().
template <typename Handler, typename IoExecutor>
TIMEWHEEL_NOINLINE void examine_io_executor(const IoExecutor& io_ex, timer_impl& impl) noexcept {
    typename net::detail::handler_work<Handler, IoExecutor>::base1_type base1(0, 0, io_ex);
    impl.set_io(base1.owns_work() ? timer_impl::io_executor::tracked
                                  : timer_impl::io_executor::native);
}

/// Whether Asio's handler_work for this handler and the timer's I/O executor would own no
/// work, and so call the handler directly on completion: the condition for keeping it
/// inline. The executor's part is examined at the timer's first wait only (timer_impl::io()).
template <typename Handler, typename IoExecutor>
TIMEWHEEL_ALWAYS_INLINE inline bool completes_natively(Handler& handler, const IoExecutor& io_ex,
                                                       timer_impl& impl) noexcept {
    using work = net::detail::handler_work<Handler, IoExecutor>;
    if (impl.io() == timer_impl::io_executor::unknown) {
        examine_io_executor<Handler>(io_ex, impl);
    }
    if (impl.io() != timer_impl::io_executor::native) {
        return false;
    }
    if constexpr (requires {
                      typename net::associated_executor<
                          Handler, IoExecutor>::asio_associated_executor_is_unspecialised;
                  }) {
        // The handler has no executor of its own: handler_work would compare the I/O
        // executor with itself. Skipping that keeps arm off the executor's cache line.
        return true;
    } else if constexpr (requires { typename work::base2_type; }) {
        typename work::base2_type base2(false, net::get_associated_executor(handler, io_ex), io_ex);
        return !base2.owns_work();
    } else {
        return true;
    }
}

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_WAIT_OP_HPP
