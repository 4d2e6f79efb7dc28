//
// timewheel/impl/idle_reaper.hpp
//
// Inline definitions of idle_reaper and close_lowest_layer.
//

#ifndef TIMEWHEEL_IMPL_IDLE_REAPER_HPP
#define TIMEWHEEL_IMPL_IDLE_REAPER_HPP

#include <timewheel/detail/deadline.hpp>

#include <stdexcept>
#include <string>

namespace timewheel {
namespace detail {

template <typename Stream>
concept closable_with_error_code = requires(Stream& s, boost::system::error_code& ec) {
    s.close(ec);
};

template <typename Stream>
concept closable = requires(Stream& s) {
    s.close();
};

template <typename Stream>
concept layered = requires(Stream& s) {
    s.next_layer();
};

template <typename Stream>
using next_layer_t = std::remove_reference_t<decltype(std::declval<Stream&>().next_layer())>;

[[noreturn]] inline void throw_bad_idle_timeout(const char* what, std::chrono::nanoseconds value) {
    throw std::invalid_argument(std::string("timewheel::idle_reaper: ") + what + ", got " +
                                std::to_string(value.count()) + "ns");
}

inline void check_idle_timeout(std::chrono::nanoseconds timeout, std::chrono::nanoseconds slack) {
    if (timeout <= std::chrono::nanoseconds::zero()) {
        throw_bad_idle_timeout("timeout must be positive", timeout);
    }
    if (slack < std::chrono::nanoseconds::zero()) {
        throw_bad_idle_timeout("slack must not be negative", slack);
    }
}

} // namespace detail

template <typename Stream>
constexpr bool is_closable_stream() noexcept {
    if constexpr (detail::closable_with_error_code<Stream> || detail::closable<Stream>) {
        return true;
    } else if constexpr (detail::layered<Stream>) {
        return is_closable_stream<detail::next_layer_t<Stream>>();
    } else {
        return false;
    }
}

template <typename Stream>
void close_lowest_layer(Stream& stream) {
    static_assert(is_closable_stream<Stream>(),
                  "close_lowest_layer: the stream has neither close(error_code&), close() nor "
                  "next_layer()");
    if constexpr (detail::closable_with_error_code<Stream>) {
        boost::system::error_code ignored;
        stream.close(ignored);
    } else if constexpr (detail::closable<Stream>) {
        stream.close();
    } else {
        close_lowest_layer(stream.next_layer());
    }
}

template <typename Action>
idle_reaper<Action>::idle_reaper(wheel_service& service, duration timeout, duration slack,
                                 Action&& action)
    : service_entry(&idle_reaper::on_event)
    , service_(&service)
    , timeout_(timeout)
    , slack_(slack)
    , action_(std::move(action)) {
    static_assert(std::is_invocable_v<Action&>, "idle_reaper: the action must be callable as "
                                                "void()");
    detail::check_idle_timeout(timeout, slack);
}

template <typename Action>
idle_reaper<Action>::~idle_reaper() {
    service_->cancel(*this);
}

template <typename Action>
void idle_reaper<Action>::start() {
    last_touch_ = clock_type::now();
    reaped_ = false;
    service_->arm(*this, due(), slack_);
}

template <typename Action>
typename idle_reaper<Action>::time_point idle_reaper<Action>::due() const noexcept {
    // Saturate rather than overflow, for timeouts close to duration::max().
    return detail::saturating_add<clock_type>(last_touch_, timeout_);
}

template <typename Action>
void idle_reaper<Action>::set_timeout(duration timeout, duration slack) {
    detail::check_idle_timeout(timeout, slack);
    timeout_ = timeout;
    slack_ = slack;
    if (armed()) {
        last_touch_ = clock_type::now();
        service_->arm(*this, due(), slack_);
    }
}

template <typename Action>
bool idle_reaper<Action>::push_back() noexcept {
    if (!armed()) {
        return false;
    }
    // A later deadline moves the entry lazily (wheel::move's early return: a compare and a
    // store into the entry), and then the wheel re-files it on its way through the old slot,
    // without firing it: one walk of the slot instead of the two of firing it onto the run
    // queue and calling the reaper back, which at 1M connections are two cache misses each.
    // An earlier deadline (touch(time_point) with an earlier time) leaves the entry where it
    // is: the check at expiry below reaps at that deadline, never before the new one.
    const time_point due = this->due();
    if (service_->to_tick(due) >= wheel_entry::deadline()) {
        try {
            service_->reschedule(*this, due);
        } catch (...) {
            // Only a driver re-arm for an earlier wakeup can throw (bad_alloc), and a later
            // deadline never needs one: the entry has moved and the wakeup already pending
            // comes first, so the state is consistent either way.
        }
    }
    return true;
}

template <typename Action>
void idle_reaper<Action>::on_event(wheel_service& service, detail::service_entry& entry,
                                   detail::entry_event event) {
    if (event != detail::entry_event::expired) {
        return; // shutdown: the context is going away; user code must not run
    }
    auto& self = static_cast<idle_reaper&>(entry);
    const time_point due = self.due();
    if (due > clock_type::now()) {
        // Touched with an earlier time, or while the entry was already due: the rest of the
        // period. (A touch() with a later deadline moved the entry, which then never fires.)
        service.arm(self, due, self.slack_);
        return;
    }
    self.reaped_ = true;
    self.action_(); // may destroy self: nothing touches it afterwards
}

} // namespace timewheel

#endif // TIMEWHEEL_IMPL_IDLE_REAPER_HPP
