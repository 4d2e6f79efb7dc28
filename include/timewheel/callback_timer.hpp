//
// timewheel/callback_timer.hpp
//
// A timer that calls a function when it expires: no completion handler, no operation to
// allocate, no trip through the io_context's queue. (The features, keyed timers, the cache
// and idle reaping, are built on wheel_service's entry API directly, as a timer of your own
// would be; see the guide.)
//

#ifndef TIMEWHEEL_CALLBACK_TIMER_HPP
#define TIMEWHEEL_CALLBACK_TIMER_HPP

#include <timewheel/wheel_service.hpp>

#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>

#include <stdexcept>
#include <type_traits>
#include <utility>

namespace timewheel {

/// An object embedding a wheel entry and a callback, armed on an io_context's wheel.
/**
 * The callback is invoked with no arguments, on the thread that runs the io_context, from
 * inside the wheel's expiry loop; it is never invoked from inside expires_at(),
 * expires_after() or reschedule_at(). It may re-arm, cancel or reschedule this timer or any
 * other. If it throws, the exception propagates out of the io_context's run(), the timers
 * not yet fired stay due, and the next run() fires them. Re-armed from its own callback
 * with a zero delay, it fires again soon, possibly in the same run of the wheel: the
 * service's budget bounds the callbacks of one run before other handlers get a turn.
 *
 * When the io_context shuts down, an armed timer is disarmed without a call. A
 * callback_timer must be destroyed before its io_context, like any Asio I/O object.
 *
 * Cost: arm, reschedule and cancel are O(1) and never allocate; expiry allocates nothing.
 * The object holds a wheel entry (40 bytes), a pointer to the service and the callback.
 * It can be neither copied nor moved: the wheel links to it.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe from the thread that runs their io_context.@n
 * @e Shared @e objects: Unsafe.
 *
 * @par Example
 * @code
 * timewheel::callback_timer idle(io, [&] { socket.close(); });
 * idle.expires_after(std::chrono::seconds(30), std::chrono::seconds(1));
 * // on every read:
 * idle.reschedule_after(std::chrono::seconds(30));
 * @endcode
 */
template <typename Callback>
class callback_timer : private detail::service_entry {
public:
    using clock_type = wheel_service::clock_type;
    using duration = clock_type::duration;
    using time_point = clock_type::time_point;

    /// Constructs an unarmed timer on the wheel of @c context (an io_context).
    /**
     * @throws std::invalid_argument if @c callback is empty (a Callback that converts to
     * bool and is false, such as an empty std::function or a null function pointer).
     */
    template <typename ExecutionContext>
    callback_timer(
        ExecutionContext& context, Callback callback,
        std::enable_if_t<
            std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>>* = nullptr)
        : service_entry(&callback_timer::on_event)
        , service_(&boost::asio::use_service<wheel_service>(context))
        , callback_(std::move(callback)) {
        if constexpr (std::is_constructible_v<bool, const Callback&> &&
                      !std::is_arithmetic_v<Callback>) {
            if (!static_cast<bool>(callback_)) { // an empty std::function, a null pointer
                throw std::invalid_argument(
                    "timewheel::callback_timer: callback must not be empty");
            }
        }
    }

    /// Constructs an unarmed timer on the wheel of @c ex's io_context.
    template <typename Executor>
    callback_timer(
        const Executor& ex, Callback callback,
        std::enable_if_t<boost::asio::execution::is_executor<Executor>::value>* = nullptr)
        : callback_timer(boost::asio::query(ex, boost::asio::execution::context),
                         std::move(callback)) {}

    /// Disarms the timer.
    ~callback_timer() { service_->cancel(*this); }

    callback_timer(const callback_timer&) = delete;
    callback_timer& operator=(const callback_timer&) = delete;

    /// Arms the timer for @c expiry, accepting @c slack of lateness (re-arms if armed). O(1).
    /**
     * An expiry that has passed means due now: the callback runs on a later turn of the
     * io_context, never inside this call.
     *
     * @throws std::invalid_argument if @c slack is negative; the timer is left as it was.
     */
    void expires_at(time_point expiry, duration slack = {}) { service_->arm(*this, expiry, slack); }

    /// Arms the timer for @c delay from now; zero or negative means due now, and the sum
    /// saturates (duration::max() means never). See expires_at().
    void expires_after(duration delay, duration slack = {}) {
        expires_at(detail::after<clock_type>(delay), slack);
    }

    /// Moves the expiry of an armed timer, O(1) and lazily when later. False if not armed.
    bool reschedule_at(time_point expiry) { return service_->reschedule(*this, expiry); }

    /// Moves the expiry of an armed timer to @c delay from now. False if not armed.
    bool reschedule_after(duration delay) {
        return reschedule_at(detail::after<clock_type>(delay));
    }

    /// Disarms the timer. False if it was not armed; cancelling twice is safe.
    bool cancel() noexcept { return service_->cancel(*this); }

    /// Whether the timer is armed.
    bool armed() const noexcept { return wheel_entry::armed(); }

    /// The service whose wheel the timer is armed in.
    wheel_service& service() const noexcept { return *service_; }

    /// The callback.
    Callback& callback() noexcept { return callback_; }

private:
    static void on_event(wheel_service&, detail::service_entry& entry, detail::entry_event event) {
        if (event == detail::entry_event::expired) {
            static_cast<callback_timer&>(entry).callback_();
        }
    }

    wheel_service* service_;
    Callback callback_;
};

} // namespace timewheel

#endif // TIMEWHEEL_CALLBACK_TIMER_HPP
