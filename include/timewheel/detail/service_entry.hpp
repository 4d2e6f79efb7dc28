//
// timewheel/detail/service_entry.hpp
//
// An entry on a wheel_service's wheel: a wheel_entry plus what to do when it comes due.
//

#ifndef TIMEWHEEL_DETAIL_SERVICE_ENTRY_HPP
#define TIMEWHEEL_DETAIL_SERVICE_ENTRY_HPP

#include <timewheel/wheel.hpp>

namespace timewheel {

class wheel_service;

namespace detail {

enum class entry_event {
    expired,  // the deadline passed: do the work
    shutdown, // the execution context is shutting down: release, do not call back
};

class service_entry : public wheel_entry {
public:
    using event_function = void (*)(wheel_service&, service_entry&, entry_event);

    explicit service_entry(event_function on_event) noexcept
        : on_event_(on_event) {}
    service_entry(service_entry&&) noexcept = default;
    service_entry& operator=(service_entry&&) noexcept = default;

    void notify(wheel_service& service, entry_event event) { on_event_(service, *this, event); }

private:
    event_function on_event_;
};

} // namespace detail
} // namespace timewheel

#endif // TIMEWHEEL_DETAIL_SERVICE_ENTRY_HPP
