//
// timewheel.hpp
//
// Everything timewheel offers, in one include.
//

#ifndef TIMEWHEEL_HPP
#define TIMEWHEEL_HPP

#include <timewheel/basic_wheel_timer.hpp>
#include <timewheel/callback_timer.hpp>
#include <timewheel/idle_reaper.hpp>
#include <timewheel/keyed_timers.hpp>
#include <timewheel/repeating_task.hpp>
#include <timewheel/timer_registry.hpp>
#include <timewheel/ttl_cache.hpp>
#include <timewheel/wheel.hpp>
#include <timewheel/wheel_service.hpp>
#include <timewheel/wheel_timer.hpp>

#endif // TIMEWHEEL_HPP
