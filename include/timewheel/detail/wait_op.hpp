//
// timewheel/detail/wait_op.hpp
//
// The operation behind wheel_timer::async_wait, built the way Asio builds its own timer
// operations: allocated with the handler's associated allocator, holding work on the I/O
// executor and on the handler's executor, completed through the io_context's scheduler and
// dispatched to the handler's associated executor, its memory released before the upcall.
//

#ifndef TIMEWHEEL_DETAIL_WAIT_OP_HPP
#define TIMEWHEEL_DETAIL_WAIT_OP_HPP

#include <timewheel/detail/service_entry.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/detail/op_queue.hpp>
#include <boost/asio/detail/scheduler_operation.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <memory>
#include <utility>

namespace timewheel {
namespace detail {

namespace net = boost::asio;

struct timer_impl;
class wait_cancellation;

class wait_op_base : public net::detail::scheduler_operation {
public:
    boost::system::error_code ec_;
    timer_impl* timer_ = nullptr;               // the timer whose queue holds this op
    wait_cancellation* cancellation_ = nullptr; // the handler installed in its slot, if any

protected:
    explicit wait_op_base(func_type complete) noexcept
        : scheduler_operation(complete) {}
};

template <typename Handler, typename IoExecutor>
class wait_op : public wait_op_base {
public:
    BOOST_ASIO_DEFINE_HANDLER_PTR(wait_op);

    wait_op(Handler& handler, const IoExecutor& io_ex)
        : wait_op_base(&wait_op::do_complete)
        , handler_(std::move(handler))
        , work_(handler_, io_ex) {}

    static void do_complete(void* owner, net::detail::scheduler_operation* base,
                            const boost::system::error_code& /*ec*/, std::size_t /*bytes*/) {
        wait_op* op = static_cast<wait_op*>(base);
        ptr p = {std::addressof(op->handler_), op, op};
        net::detail::handler_work<Handler, IoExecutor> work(std::move(op->work_));

        // Move the handler out so that the memory is released before the upcall.
        net::detail::binder1<Handler, boost::system::error_code> handler(op->handler_, op->ec_);
        p.h = std::addressof(handler.handler_);
        p.reset();

        if (owner) { // null when the context is shutting down: destroy, don't invoke
            net::detail::fenced_block block(net::detail::fenced_block::half);
            work.complete(handler, handler.handler_);
        }
    }

private:
    Handler handler_;
    net::detail::handler_work<Handler, IoExecutor> work_;
};

// What a wheel_timer keeps in its wheel: the entry, the expiry as given, and the waits.
void on_timer_event(wheel_service& service, service_entry& entry, entry_event event);

struct timer_impl : service_entry {
    timer_impl() noexcept
        : service_entry(&on_timer_event) {}

    std::chrono::steady_clock::time_point expiry{};
    std::chrono::steady_clock::duration slack{};
    net::detail::op_queue<wait_op_base> ops;
    std::size_t waits = 0; // ops' length, so that reschedule_at() need not walk the queue
};

// Installed in a wait's cancellation slot. The op and this handler point at each other and
// each one unlinks the other when it goes first: the wait completing detaches the handler
// (which stays in the slot, inert), and the handler being destroyed (its signal destroyed,
// the slot cleared or given to another operation) detaches the op. So neither outlives the
// other's pointer, whatever the order.
class wait_cancellation {
public:
    wait_cancellation(wheel_service* service, wait_op_base* op) noexcept
        : service_(service)
        , op_(op) {}

    ~wait_cancellation() {
        if (op_ != nullptr) {
            op_->cancellation_ = nullptr;
        }
    }

    wait_cancellation(const wait_cancellation&) = delete;
    wait_cancellation& operator=(const wait_cancellation&) = delete;

    void operator()(net::cancellation_type_t type);

    void detach() noexcept { op_ = nullptr; }

private:
    wheel_service* service_;
    wait_op_base* op_;
};

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_WAIT_OP_HPP
