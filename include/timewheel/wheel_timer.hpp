//
// timewheel/wheel_timer.hpp
//
// The wheel timer for the default executor: timewheel's boost::asio::steady_timer.
//

#ifndef TIMEWHEEL_WHEEL_TIMER_HPP
#define TIMEWHEEL_WHEEL_TIMER_HPP

#include <timewheel/basic_wheel_timer.hpp>

namespace timewheel {

/// A basic_wheel_timer on boost::asio::any_io_executor, as boost::asio::steady_timer is a
/// basic_waitable_timer on it.
using wheel_timer = basic_wheel_timer<>;

} // namespace timewheel

#endif // TIMEWHEEL_WHEEL_TIMER_HPP
