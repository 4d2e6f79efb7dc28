//
// timewheel/impl/repeating_task.hpp
//
// Inline definitions of the repeating tasks: the run loop, the missed-tick policies, the
// handle.
//

#ifndef TIMEWHEEL_IMPL_REPEATING_TASK_HPP
#define TIMEWHEEL_IMPL_REPEATING_TASK_HPP

#include <timewheel/detail/deadline.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

namespace timewheel {
namespace detail {

struct repeating_task_access {
    static repeating_task make(repeating_state* state) noexcept { return repeating_task(state); }
};

inline wheel_service::time_point next_run_time(missed_tick_policy policy,
                                               wheel_service::time_point scheduled,
                                               wheel_service::time_point started,
                                               wheel_service::duration interval) noexcept {
    const wheel_service::time_point following =
        saturating_add<wheel_service::clock_type>(scheduled, interval);
    if (started < following) {
        return following; // on time: nothing was missed
    }
    switch (policy) {
    case missed_tick_policy::burst:
        return following;
    case missed_tick_policy::delay:
        return saturating_add<wheel_service::clock_type>(started, interval);
    case missed_tick_policy::skip:
        break;
    }
    // The first due time of the schedule after `started`. Here interval <= started - scheduled,
    // so neither the division nor the product can overflow.
    const auto periods = (started - scheduled) / interval + 1;
    return scheduled + periods * interval;
}

inline std::atomic<std::uint64_t> spread_counter{0};

inline wheel_service::duration spread_offset(wheel_service::duration interval) noexcept {
    const std::uint64_t k = spread_counter.fetch_add(1, std::memory_order_relaxed);
    // frac(k * golden ratio) in 64-bit fixed point: consecutive k fill [0, 1) evenly.
    const std::uint64_t fixed = k * 0x9E3779B97F4A7C15ULL;
    const double fraction = static_cast<double>(fixed >> 11) * 0x1.0p-53;
    const auto offset = wheel_service::duration(static_cast<wheel_service::duration::rep>(
        fraction * static_cast<double>(interval.count())));
    return std::clamp(offset, wheel_service::duration::zero(),
                      interval - wheel_service::duration(1));
}

inline void repeating_state::on_event(wheel_service& service, service_entry& entry,
                                      entry_event event) {
    auto& self = static_cast<repeating_state&>(entry);
    const auto finish = [&self] {
        self.running_ = false;
        self.done_ = true;
        if (!self.owned_) {
            self.destroy_(&self);
        }
    };
    if (event == entry_event::shutdown) {
        finish(); // the service is going: never call it, nor the callable, again
        return;
    }
    const repeat_run run{self.runs_, self.scheduled_, clock_type::now()};
    ++self.runs_;
    if (self.remaining_ != repeat_forever) {
        --self.remaining_;
    }
    self.running_ = true;
    try {
        self.invoke_(self, run);
    } catch (...) {
        finish();
        throw;
    }
    self.running_ = false;
    if (self.done_ || self.remaining_ == 0) { // cancelled while running, or the last run
        finish();
        return;
    }
    self.scheduled_ = next_run_time(self.policy_, run.scheduled, run.started, self.interval_);
    try {
        service.arm(self, self.scheduled_, self.slack_);
    } catch (...) {
        service.cancel(self);
        finish();
        throw;
    }
}

inline void validate_repeat(repeating_task::duration interval, const repeat_options& options) {
    if (interval <= repeating_task::duration::zero()) {
        throw std::invalid_argument(
            "timewheel::repeating_task: interval must be positive, got " +
            std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(interval).count()) +
            "ns");
    }
    if (options.count == 0) {
        throw std::invalid_argument("timewheel::repeating_task: count must be at least 1 "
                                    "(repeat_forever for no limit)");
    }
    if (options.slack < repeating_task::duration::zero()) {
        throw std::invalid_argument("timewheel::repeating_task: slack must not be negative");
    }
}

} // namespace detail

inline bool repeating_task::cancel() noexcept {
    if (state_ == nullptr) {
        return false;
    }
    const bool was_active = state_->active();
    if (!state_->done_) {
        state_->done_ = true;
        if (!state_->running_) {
            state_->service_->cancel(*state_); // not running and not done: armed
        }
    }
    return was_active;
}

inline void repeating_task::detach() noexcept {
    if (state_ == nullptr) {
        return;
    }
    state_->owned_ = false;
    if (state_->done_ && !state_->running_) {
        state_->destroy_(state_);
    }
    state_ = nullptr;
}

inline void repeating_task::reset() noexcept {
    if (state_ == nullptr) {
        return;
    }
    cancel();
    state_->owned_ = false;
    if (!state_->running_) {
        state_->destroy_(state_);
    } // else: destroyed from inside its own run; the run loop frees it when the call returns
    state_ = nullptr;
}

template <typename Where, typename Function>
repeating_task repeat_at(Where&& where, repeating_task::time_point first,
                         repeating_task::duration interval, Function&& f,
                         const repeat_options& options) {
    static_assert(detail::context_or_executor<Where>,
                  "repeat_at: the first argument must be an io_context or an executor of one");
    using function_type = std::decay_t<Function>;
    static_assert(std::is_invocable_v<function_type&, const repeat_run&> ||
                      std::is_invocable_v<function_type&>,
                  "repeat_at: the callable must be invocable as f() or f(const repeat_run&)");
    detail::validate_repeat(interval, options);
    wheel_service& service = boost::asio::use_service<wheel_service>(detail::context_of(where));
    if (options.spread) {
        first = detail::saturating_add<repeating_task::clock_type>(first,
                                                                   detail::spread_offset(interval));
    }
    auto state = std::make_unique<detail::repeating_state_impl<function_type>>(
        service, first, interval, options, std::forward<Function>(f));
    try {
        service.arm(*state, first, options.slack);
    } catch (...) {
        service.cancel(*state);
        throw;
    }
    return detail::repeating_task_access::make(state.release());
}

template <typename Where, typename Function>
repeating_task repeat_after(Where&& where, repeating_task::duration first_delay,
                            repeating_task::duration interval, Function&& f,
                            const repeat_options& options) {
    return timewheel::repeat_at(std::forward<Where>(where),
                                detail::after<repeating_task::clock_type>(first_delay), interval,
                                std::forward<Function>(f), options);
}

template <typename Where, typename Function>
repeating_task repeat_every(Where&& where, repeating_task::duration interval, Function&& f,
                            const repeat_options& options) {
    return timewheel::repeat_at(std::forward<Where>(where),
                                detail::after<repeating_task::clock_type>(interval), interval,
                                std::forward<Function>(f), options);
}

} // namespace timewheel

#endif // TIMEWHEEL_IMPL_REPEATING_TASK_HPP
