//
// timewheel/redis/detail/exec_op.hpp
//
// The operation behind connection::async_exec, built as Asio builds its socket operations:
// allocated with the handler's associated allocator, holding work on the I/O executor and on
// the handler's executor, its memory released before the handler is dispatched to its
// associated executor. Cancellation installs exec_cancellation in the handler's slot; the
// slot is cleared on every completion, and a cancelled operation completes through post, so
// that the slot is never cleared from inside its own handler.
//

#ifndef TIMEWHEEL_REDIS_DETAIL_EXEC_OP_HPP
#define TIMEWHEEL_REDIS_DETAIL_EXEC_OP_HPP

#include <timewheel/redis/detail/op_base.hpp>

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/detail/bind_handler.hpp>
#include <boost/asio/detail/fenced_block.hpp>
#include <boost/asio/detail/handler_alloc_helpers.hpp>
#include <boost/asio/detail/handler_work.hpp>
#include <boost/asio/post.hpp>

#include <memory>
#include <utility>

namespace timewheel::redis::detail {

namespace net = boost::asio;

// Defined in src/redis/connection.cpp.
void cancel_exec(connection_impl& impl, op_base& op, net::cancellation_type type);

class exec_cancellation {
public:
    explicit exec_cancellation(op_base* op) noexcept
        : op_(op) {}

    void operator()(net::cancellation_type type) {
        if (op_->owner_) {
            cancel_exec(*op_->owner_, *op_, type);
        }
    }

private:
    op_base* op_;
};

template <typename Handler, typename IoExecutor>
class exec_op : public op_base {
public:
    BOOST_ASIO_DEFINE_HANDLER_PTR(exec_op);

    exec_op(Handler& handler, const IoExecutor& io_ex)
        : op_base(&exec_op::do_complete)
        , handler_(std::move(handler))
        , work_(handler_, io_ex)
        , io_ex_(io_ex) {}

    static void do_complete(op_base* base, boost::system::error_code ec, std::size_t n, bool post) {
        exec_op* op = static_cast<exec_op*>(base);
        if (post) {
            // Complete from a fresh handler: never inside async_exec or a slot's handler.
            net::post(op->io_ex_, [op, ec, n] { do_complete(op, ec, n, false); });
            return;
        }
        auto slot = net::get_associated_cancellation_slot(op->handler_);
        if (slot.is_connected()) {
            slot.clear();
        }
        ptr p = {std::addressof(op->handler_), op, op};
        net::detail::handler_work<Handler, IoExecutor> work(std::move(op->work_));
        net::detail::binder2<Handler, boost::system::error_code, std::size_t> handler(op->handler_,
                                                                                      ec, n);
        p.h = std::addressof(handler.handler_);
        p.reset(); // releases the operation's memory, and its hold on the connection
        net::detail::fenced_block block(net::detail::fenced_block::half);
        work.complete(handler, handler.handler_);
    }

    Handler& handler() noexcept { return handler_; }

private:
    Handler handler_;
    net::detail::handler_work<Handler, IoExecutor> work_;
    IoExecutor io_ex_;
};

} // namespace timewheel::redis::detail

#endif // TIMEWHEEL_REDIS_DETAIL_EXEC_OP_HPP
