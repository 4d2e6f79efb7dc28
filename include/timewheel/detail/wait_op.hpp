//
// timewheel/detail/wait_op.hpp
//
// What a wheel_timer keeps in the io_context's wheel: its entry, its expiry and its pending
// waits, each an async_op (detail/async_op.hpp) on this base.
//

#ifndef TIMEWHEEL_DETAIL_WAIT_OP_HPP
#define TIMEWHEEL_DETAIL_WAIT_OP_HPP

#include <timewheel/detail/async_op.hpp>
#include <timewheel/detail/service_entry.hpp>

#include <chrono>
#include <cstddef>

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

void on_timer_event(wheel_service& service, service_entry& entry, entry_event event);

struct timer_impl : service_entry {
    timer_impl() noexcept
        : service_entry(&on_timer_event) {}

    std::chrono::steady_clock::time_point expiry{};
    std::chrono::steady_clock::duration slack{};
    op_queue<wait_op_base> ops;
    std::size_t waits = 0; // ops' length, so that reschedule_at() need not walk the queue
};

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_WAIT_OP_HPP
