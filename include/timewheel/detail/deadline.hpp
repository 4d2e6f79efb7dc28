//
// timewheel/detail/deadline.hpp
//
// Relative expiries computed without overflow, as Asio's chrono_time_traits::add does. The one
// home of saturating time arithmetic: every timer and feature adds delays through it.
//

#ifndef TIMEWHEEL_DETAIL_DEADLINE_HPP
#define TIMEWHEEL_DETAIL_DEADLINE_HPP

#include <chrono>

namespace timewheel {
namespace detail {

// t + d, clamped to [time_point::min(), time_point::max()]: expires_after(duration::max())
// means "never", expires_after(duration::min()) means "due now".
template <typename Clock>
constexpr typename Clock::time_point saturating_add(typename Clock::time_point t,
                                                    typename Clock::duration d) noexcept {
    using time_point = typename Clock::time_point;
    if (t >= time_point()) {
        if (time_point::max() - t < d) {
            return time_point::max();
        }
    } else if (time_point::min() - t > d) {
        return time_point::min();
    }
    return t + d;
}

// Clock::now() + d, saturated.
template <typename Clock>
typename Clock::time_point after(typename Clock::duration d) noexcept {
    return saturating_add<Clock>(Clock::now(), d);
}

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_DEADLINE_HPP
