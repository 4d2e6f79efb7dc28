//
// timewheel/impl/wheel_service.hpp
//
// Inline definitions of wheel_service: the per-timer hot paths and async_wait.
//

#ifndef TIMEWHEEL_IMPL_WHEEL_SERVICE_HPP
#define TIMEWHEEL_IMPL_WHEEL_SERVICE_HPP

#include <boost/asio/associated_cancellation_slot.hpp>
#include <boost/asio/cancellation_type.hpp>

#include <memory>
#include <new>

namespace timewheel {

inline tick_type wheel_service::to_tick(time_point t) const noexcept {
    if (t <= origin_) { // also keeps t - origin_ from overflowing for time_point::min()
        return 0;
    }
    const std::int64_t since =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_).count();
    return static_cast<tick_type>(since / tick_ns_ + (since % tick_ns_ != 0));
}

inline void wheel_service::arm(detail::service_entry& entry, time_point expiry, duration slack) {
    detail::thread_check::scope check(thread_check_);
    if (slack < duration::zero()) {
        throw_negative_slack();
    }
    tick_type tick = to_tick(expiry);
    // Rounding up to a tick would make an expiry that has just passed wait for the next
    // tick; read the clock only when that can be the case, or when the wheel is idle.
    bool due_now = false;
    if (tick <= wheel_->now() + 1 || driver_state_ == driver_state::idle) {
        due_now = settle_tick(expiry, tick);
    }
    if (!entry.armed()) {
        ++armed_;
    }
    wheel_->arm(entry, tick, slack == duration::zero() ? 0 : slack_ticks(slack));
    if (driver_state_ == driver_state::idle ||
        (driver_state_ == driver_state::waiting && tick < driver_tick_)) {
        update_driver(due_now);
    }
}

inline bool wheel_service::reschedule(detail::service_entry& entry, time_point expiry) {
    detail::thread_check::scope check(thread_check_);
    const tick_type tick = to_tick(expiry);
    if (!wheel_->move(entry, tick)) {
        return false;
    }
    if (driver_state_ == driver_state::waiting && tick < driver_tick_) {
        update_driver();
    }
    return true;
}

inline bool wheel_service::cancel(detail::service_entry& entry) noexcept {
    detail::thread_check::scope check(thread_check_);
    if (!wheel_->cancel(entry)) {
        return false;
    }
    if (--armed_ == 0 && driver_state_ == driver_state::waiting) {
        stop_driver(); // nothing left to wait for: let run() return
    }
    return true;
}

template <typename Handler, typename IoExecutor>
void wheel_service::async_wait(implementation_type& impl, Handler& handler,
                               const IoExecutor& io_ex) {
    auto slot = boost::asio::get_associated_cancellation_slot(handler);

    using op = detail::wait_op<Handler, IoExecutor>;
    typename op::ptr p = {std::addressof(handler), op::ptr::allocate(handler), nullptr};
    p.p = new (p.v) op(handler, io_ex);

    if (slot.is_connected()) {
        p.p->cancellation_ = &slot.template emplace<detail::wait_cancellation>(this, p.p);
    }
    try {
        add_wait(impl, p.p);
    } catch (...) {
        if (p.p->cancellation_ != nullptr) {
            slot.clear(); // its handler must not outlive the op freed below
        }
        throw;
    }
    p.v = p.p = nullptr;
}

namespace detail {

inline void wait_cancellation::operator()(net::cancellation_type_t type) {
    if (op_ != nullptr &&
        (type & (net::cancellation_type::terminal | net::cancellation_type::partial |
                 net::cancellation_type::total)) != net::cancellation_type::none) {
        wait_op_base* op = op_;
        op_ = nullptr; // never clear the slot from inside its own handler: go inert instead
        service_->cancel_wait(*op);
    }
}

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_IMPL_WHEEL_SERVICE_HPP
