//
// timewheel/detail/async_op.hpp
//
// The one home of the Asio operation plumbing that timewheel's asynchronous operations
// share (wheel_timer::async_wait, ttl_cache::async_take, and any feature written on the
// service). An operation is built the way Asio builds its own:
//
// * allocated with the handler's associated allocator (Asio's recycling allocator when
//   that is the default std::allocator);
// * holding work on the I/O executor and on the handler's executor until it completes;
// * completed through the io_context's scheduler, its handler and result moved out and its
//   memory released before the upcall, which goes through the handler's associated
//   executor; destroyed without an upcall when the context shuts down;
// * cancellable through its handler's associated cancellation slot, by a handler that
//   unlinks itself from the operation whichever of the two goes first.
//
// Besides wheel_service (wheel_service.hpp and its wait-queue half,
// detail/completed_waits.hpp), this is the only header that names boost::asio::detail: the
// I/O object plumbing of basic_wheel_timer is wrapped at its end, so that the public header
// names none of it. A
// feature derives its operation state from async_op_base (with a `value_type`: void, or
// the type of the second completion argument), creates operations with make_async_op(),
// and completes them through wheel_service::post_immediate() / post_deferred().
//

#ifndef TIMEWHEEL_DETAIL_ASYNC_OP_HPP
#define TIMEWHEEL_DETAIL_ASYNC_OP_HPP

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_type_requirements.hpp> // BOOST_ASIO_WAIT_HANDLER_CHECK
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/io_object_impl.hpp>
#include <boost/asio/detail/non_const_lvalue.hpp>
#include <boost/asio/detail/op_queue.hpp>
#include <boost/asio/detail/scheduler_operation.hpp>
#include <boost/asio/detail/throw_error.hpp>
#include <boost/system/error_code.hpp>

#include <memory>
#include <optional>
#include <type_traits>
#include <utility>

namespace timewheel {
namespace detail {

namespace net = boost::asio;

class async_op_base;

template <typename Target>
class cancellable;

// Installed in an operation's cancellation slot. The operation (a Target, derived from
// cancellable<Target>) and this handler point at each other and each unlinks the other when
// it goes first: the operation completing detaches the handler (which stays in the slot,
// inert: a slot is never cleared from inside its own handler), and the handler being
// destroyed (its signal destroyed, the slot cleared or reused) detaches the operation. So
// neither is left with a dangling pointer, whatever the order. An operation that moves
// (a wheel_timer's inline wait moving with its timer) takes the link along.
template <typename Target>
class basic_op_cancellation {
public:
    /// What to do with an operation whose cancellation was requested; it is already
    /// detached from this handler when called.
    using cancel_function = void (*)(void* owner, Target& op);

    basic_op_cancellation(cancel_function cancel, void* owner, Target* op,
                          net::cancellation_type_t accepted) noexcept
        : cancel_(cancel)
        , owner_(owner)
        , op_(op)
        , accepted_(accepted) {}

    ~basic_op_cancellation() {
        if (op_ != nullptr) {
            static_cast<cancellable<Target>*>(op_)->cancellation_ = nullptr;
        }
    }

    basic_op_cancellation(const basic_op_cancellation&) = delete;
    basic_op_cancellation& operator=(const basic_op_cancellation&) = delete;

    void operator()(net::cancellation_type_t type) {
        if (op_ != nullptr && (type & accepted_) != net::cancellation_type::none) {
            Target* op = std::exchange(op_, nullptr); // go inert; never clear the slot
            static_cast<cancellable<Target>*>(op)->cancellation_ = nullptr;
            cancel_(owner_, *op);
        }
    }

private:
    friend class cancellable<Target>;

    cancel_function cancel_;
    void* owner_;
    Target* op_;
    net::cancellation_type_t accepted_;
};

// The operation's half of the link: a base of Target.
template <typename Target>
class cancellable {
public:
    /// Installs a cancellation handler in @c slot if it is connected; an emitted signal
    /// whose type intersects @c accepted calls @c cancel(owner, op).
    template <typename Slot>
    void install_cancellation(Slot& slot,
                              typename basic_op_cancellation<Target>::cancel_function cancel,
                              void* owner, net::cancellation_type_t accepted) {
        if (slot.is_connected()) {
            cancellation_ = &slot.template emplace<basic_op_cancellation<Target>>(
                cancel, owner, static_cast<Target*>(this), accepted);
        }
    }

    /// Unlinks the cancellation handler, if any: call it when the operation completes.
    void detach_cancellation() noexcept {
        if (cancellation_ != nullptr) {
            cancellation_->op_ = nullptr;
            cancellation_ = nullptr;
        }
    }

    /// Whether a cancellation handler is linked to the operation.
    bool has_cancellation() const noexcept { return cancellation_ != nullptr; }

    /// Takes over the link of @c other, an operation that moved here.
    void take_cancellation(cancellable& other) noexcept {
        cancellation_ = std::exchange(other.cancellation_, nullptr);
        if (cancellation_ != nullptr) {
            cancellation_->op_ = static_cast<Target*>(this);
        }
    }

private:
    friend class basic_op_cancellation<Target>;
    basic_op_cancellation<Target>* cancellation_ = nullptr;
};

using op_cancellation = basic_op_cancellation<async_op_base>;

// The type-erased part of an operation: what its owner queues and completes.
class async_op_base : public net::detail::scheduler_operation, public cancellable<async_op_base> {
public:
    /// The first completion argument.
    boost::system::error_code ec_;

    /// Destroys the operation without invoking its handler (the owner never queued it).
    void destroy_unqueued() noexcept {
        detach_cancellation();
        destroy();
    }

protected:
    explicit async_op_base(func_type complete) noexcept
        : scheduler_operation(complete) {}
};

// An intrusive FIFO of operations (no allocation): what an owner keeps its pending ones in.
template <typename Op>
using op_queue = net::detail::op_queue<Op>;

// The operation for one handler. Base derives from async_op_base and names its
// `value_type`: void for a completion signature void(error_code), or V for
// void(error_code, V), in which case Base has a `std::optional<V> value_` (a
// default-constructed V is passed when it is empty).
template <typename Base, typename Handler, typename IoExecutor>
class async_op : public Base {
public:
    BOOST_ASIO_DEFINE_HANDLER_PTR(async_op);

    async_op(Handler& handler, const IoExecutor& io_ex)
        : Base(&async_op::do_complete)
        , handler_(std::move(handler))
        , work_(handler_, io_ex) {}

    static void do_complete(void* owner, net::detail::scheduler_operation* base,
                            const boost::system::error_code& /*ec*/, std::size_t /*bytes*/) {
        async_op* op = static_cast<async_op*>(base);
        ptr p = {std::addressof(op->handler_), op, op};
        net::detail::handler_work<Handler, IoExecutor> work(std::move(op->work_));

        // Move the handler and the result out so that the memory is released before the
        // upcall.
        using value_type = typename Base::value_type;
        if constexpr (std::is_void_v<value_type>) {
            net::detail::binder1<Handler, boost::system::error_code> handler(op->handler_, op->ec_);
            p.h = std::addressof(handler.handler_);
            p.reset();
            upcall(owner, work, handler);
        } else {
            net::detail::move_binder2<Handler, boost::system::error_code, value_type> handler(
                0, std::move(op->handler_), op->ec_,
                op->value_ ? std::move(*op->value_) : value_type());
            p.h = std::addressof(handler.handler_);
            p.reset();
            upcall(owner, work, handler);
        }
    }

private:
    template <typename Bound>
    static void upcall(void* owner, net::detail::handler_work<Handler, IoExecutor>& work,
                       Bound& handler) {
        if (owner != nullptr) { // null when the context is shutting down: destroy only
            net::detail::fenced_block block(net::detail::fenced_block::half);
            work.complete(handler, handler.handler_);
        }
    }

    Handler handler_;
    net::detail::handler_work<Handler, IoExecutor> work_;
};

// Allocates and constructs the operation for @c handler (moved from) with the handler's
// associated allocator. Throws (leaving nothing allocated) only if that does.
template <typename Base, typename Handler, typename IoExecutor>
Base* make_async_op(Handler& handler, const IoExecutor& io_ex) {
    using op = async_op<Base, Handler, IoExecutor>;
    typename op::ptr p = {std::addressof(handler), op::ptr::allocate(handler), nullptr};
    p.p = new (p.v) op(handler, io_ex);
    Base* result = p.p;
    p.v = p.p = nullptr;
    return result;
}

// What an I/O object on a service (basic_wheel_timer) needs of Asio's internals, as Asio's
// own I/O objects use them: the service, executor and implementation of the object; the
// handler taken as an lvalue by an initiation; an error code thrown as system_error.
template <typename Service, typename Executor>
using io_object_impl = net::detail::io_object_impl<Service, Executor>;

template <typename T>
using non_const_lvalue = net::detail::non_const_lvalue<T>;

inline void throw_error(const boost::system::error_code& ec, const char* location) {
    net::detail::throw_error(ec, location);
}

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_ASYNC_OP_HPP
