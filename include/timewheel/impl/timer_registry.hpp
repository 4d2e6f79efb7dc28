//
// timewheel/impl/timer_registry.hpp
//
// Inline definitions of timer_registry.
//

#ifndef TIMEWHEEL_IMPL_TIMER_REGISTRY_HPP
#define TIMEWHEEL_IMPL_TIMER_REGISTRY_HPP

#include <timewheel/detail/deadline.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace timewheel {

template <typename Function>
timer_registry::callback_type timer_registry::make_callback(Function&& callback) {
    using function_type = std::decay_t<Function>;
    static_assert(std::is_invocable_v<function_type&, timer_id> ||
                      std::is_invocable_v<function_type&>,
                  "timer_registry::add_timer: the callback must be invocable as f(timer_id) or "
                  "f()");
    if constexpr (std::is_constructible_v<bool, const function_type&>) {
        if (!static_cast<bool>(callback)) {
            throw std::invalid_argument(
                "timewheel::timer_registry::add_timer: callback must not be empty");
        }
    }
    if constexpr (std::is_invocable_v<function_type&, timer_id>) {
        return callback_type(std::forward<Function>(callback));
    } else {
        return [f = function_type(std::forward<Function>(callback))](timer_id) mutable { f(); };
    }
}

template <typename Function>
timer_registry::timer_id timer_registry::add_timer(time_point when, duration interval,
                                                   Function&& callback) {
    if (interval < duration::zero()) {
        throw std::invalid_argument(
            "timewheel::timer_registry::add_timer: interval must not be negative (zero: once), "
            "got " +
            std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(interval).count()) +
            "ns");
    }
    slot s{make_callback(std::forward<Function>(callback)), interval, when};
    const timer_id id = next_id_;
    wheel_.set_timer_at(id, std::move(s), when);
    ++next_id_; // only once the timer exists: a failed add consumes no id
    return id;
}

template <typename Function>
timer_registry::timer_id timer_registry::add_timer(duration delay, duration interval,
                                                   Function&& callback) {
    return add_timer(detail::after<clock_type>(delay), interval, std::forward<Function>(callback));
}

inline bool timer_registry::cancel(timer_id id) {
    if (id != 0 && id == firing_) {
        return std::exchange(firing_repeats_, false);
    }
    return wheel_.remove_timer(id);
}

inline std::size_t timer_registry::cancel_all() noexcept {
    const std::size_t pending = size();
    firing_repeats_ = false;
    wheel_.drain([](const timer_id&, slot&) {});
    return pending;
}

inline bool timer_registry::contains(timer_id id) const {
    return (id != 0 && id == firing_) ? firing_repeats_ : wheel_.contains(id);
}

inline void timer_registry::fire(timer_id id, slot& s) {
    firing_ = id;
    firing_repeats_ = s.interval > duration::zero();
    struct reset {
        timer_registry* self;
        ~reset() {
            self->firing_ = 0;
            self->firing_repeats_ = false;
        }
    } guard{this};
    const time_point started = clock_type::now();
    s.callback(id);
    if (firing_repeats_) {
        const time_point next = detail::next_run_time(missed_, s.scheduled, started, s.interval);
        s.scheduled = next;
        wheel_.set_timer_at(id, std::move(s), next);
    }
}

} // namespace timewheel

#endif // TIMEWHEEL_IMPL_TIMER_REGISTRY_HPP
