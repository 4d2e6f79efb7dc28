//
// timewheel/impl/wheel_service.hpp
//
// Inline definitions of wheel_service: the per-timer hot paths and async_wait.
//

#ifndef TIMEWHEEL_IMPL_WHEEL_SERVICE_HPP
#define TIMEWHEEL_IMPL_WHEEL_SERVICE_HPP

#include <boost/asio/associated_cancellation_slot.hpp>

namespace timewheel {

inline tick_type wheel_service::to_tick(time_point t) const noexcept {
    if (t <= origin_) { // also keeps t - origin_ from overflowing for time_point::min()
        return 0;
    }
    const std::int64_t since =
        std::chrono::duration_cast<std::chrono::nanoseconds>(t - origin_).count();
    return static_cast<tick_type>(since / tick_ns_ + (since % tick_ns_ != 0));
}

inline bool wheel_service::plain_arm(tick_type tick) const noexcept {
    // Rounding up to a tick would make an expiry that has just passed wait for the next
    // tick, and an expiry earlier than the driver's wait needs the driver moved: both are
    // rare, and arm_settling() handles them.
    return tick > wheel_->now() + 1 && tick >= update_below_;
}

inline void wheel_service::arm(detail::service_entry& entry, time_point expiry, duration slack) {
    detail::thread_check::scope check(thread_check_);
    if (slack < duration::zero()) {
        throw_negative_slack();
    }
    const tick_type tick = to_tick(expiry);
    if (!plain_arm(tick)) {
        arm_settling(entry, expiry, tick, slack);
        return;
    }
    arm_at(entry, tick, slack);
}

inline void wheel_service::arm_at(detail::service_entry& entry, tick_type tick, duration slack) {
    if (!entry.armed()) {
        ++armed_;
    }
    wheel_->arm(entry, tick, slack == duration::zero() ? 0 : slack_ticks(slack));
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

inline wheel_service::duration
wheel_service::filed_slack(const detail::service_entry& entry) const noexcept {
    return std::chrono::duration_cast<duration>(
        std::chrono::nanoseconds(static_cast<std::int64_t>(entry.slack()) * tick_ns_));
}

inline bool wheel_service::filed_within(const detail::service_entry& entry, time_point earliest,
                                        time_point latest) const noexcept {
    const tick_type deadline = entry.deadline();
    return deadline >= to_tick(earliest) && deadline <= to_tick(latest);
}

inline void wheel_service::post_immediate(detail::async_op_base& op) noexcept {
    scheduler_.post_immediate_completion(&op, false);
}

inline void wheel_service::work_started() noexcept {
    scheduler_.work_started();
}

inline void wheel_service::post_deferred(detail::async_op_base& op) noexcept {
    scheduler_.post_deferred_completion(&op);
}

// The timer's hot paths are inline: at 1M cold timers an arm or a cancel waits on cache
// misses, and the fewer instructions and stores each takes (a call saves and restores
// registers), the more of those misses overlap with the next operation's.

inline void wheel_service::arm_for_wait(implementation_type& impl) {
    // No work is counted per wait: the driver's reactor wait counts for the whole wheel.
    if (!impl.armed()) {
        arm(impl, impl.expiry, impl.slack());
    }
}

inline std::size_t wheel_service::cancel(implementation_type& impl) noexcept {
    return impl.has_waits() ? abort_waits(impl, static_cast<std::size_t>(-1)) : 0;
}

inline std::size_t wheel_service::cancel_one(implementation_type& impl) noexcept {
    return impl.has_waits() ? abort_waits(impl, 1) : 0;
}

inline std::size_t wheel_service::expires_at(implementation_type& impl,
                                             time_point expiry) noexcept {
    const std::size_t cancelled = cancel(impl);
    impl.expiry = expiry;
    return cancelled;
}

template <typename Handler, typename IoExecutor>
inline void wheel_service::async_wait(implementation_type& impl, Handler& handler,
                                      const IoExecutor& io_ex) {
    if constexpr (detail::fits_inline<Handler>) {
        // The usual wait, whole: a timer with no wait, no slack and a native executor, a
        // handler with no cancellation slot, an expiry after the next tick that needs no new
        // driver wait. Its one call (the batch filing, in wheel::arm) comes last, so that
        // the caller keeps nothing in registers across a call: at a million cold timers each
        // instruction of an arm counts (see wheel::file()).
        if (impl.plain_and_idle() && detail::completes_natively(handler, io_ex, impl) &&
            !boost::asio::get_associated_cancellation_slot(handler).is_connected()) {
            detail::thread_check::scope check(thread_check_);
            const tick_type tick = to_tick(impl.expiry);
            if (plain_arm(tick)) {
                ::new (static_cast<void*>(impl.handler_.bytes_)) Handler(std::move(handler));
                impl.handler_.fn_ = &detail::inline_wait_act<Handler>;
                ++armed_;
                wheel_->arm(impl, tick, 0);
                return;
            }
        }
    }
    // By value: a handler of one pointer then travels in a register, and the inline path
    // above keeps it out of memory.
    async_wait_general<Handler>(impl, std::move(handler), io_ex);
}

template <typename Handler, typename IoExecutor>
void wheel_service::async_wait_general(implementation_type& impl, Handler handler,
                                       const IoExecutor& io_ex) {
    if constexpr (detail::fits_inline<Handler>) {
        // The first wait of the timer, in the timer. Only when no wait is pending, so that
        // the inline wait is always the oldest (waits complete in FIFO order).
        if (!impl.has_waits() && detail::completes_natively(handler, io_ex, impl)) {
            auto slot = boost::asio::get_associated_cancellation_slot(handler);
            impl.install_cancellation(slot, &wheel_service::cancel_inline_wait, this,
                                      accepted_cancellation);
            try {
                arm_for_wait(impl);
            } catch (...) {
                impl.detach_cancellation(); // its slot handler stays behind, inert
                throw;
            }
            ::new (static_cast<void*>(impl.handler_.bytes_)) Handler(std::move(handler));
            impl.handler_.fn_ = &detail::inline_wait_act<Handler>;
            return;
        }
    }
    async_wait_queued(impl, handler, io_ex);
}

template <typename Handler, typename IoExecutor>
void wheel_service::async_wait_queued(implementation_type& impl, Handler& handler,
                                      const IoExecutor& io_ex) {
    auto slot = boost::asio::get_associated_cancellation_slot(handler);
    detail::wait_op_base* op = detail::make_async_op<detail::wait_op_base>(handler, io_ex);
    try {
        op->install_cancellation(slot, &wheel_service::cancel_wait, this, accepted_cancellation);
        add_wait(impl, op);
    } catch (...) {
        op->destroy_unqueued(); // its slot handler, if any, stays behind, inert
        throw;
    }
}

} // namespace timewheel

#endif // TIMEWHEEL_IMPL_WHEEL_SERVICE_HPP
