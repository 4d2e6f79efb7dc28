//
// timewheel/timer_registry.hpp
//
// Timers named by ids: add_timer(when, interval, callback) returns an id, cancel(id) stops
// it, size() counts them. The API of tao's heap timer (leesper/tao), on an io_context's wheel.
//
// What it is for: code that keeps timers as numbers (in a connection table, in a message)
// rather than as objects, and one-shot and repeating timers behind the same call.
//
// Design and trade-offs:
//
// * A keyed_timers<timer_id, ...> underneath: each timer is one slot of its hash table,
//   found by id. Adding, cancelling and firing are O(1); a repeating timer is set again when
//   its callback returns, with no allocation (the callback is held in a std::function, which
//   allocates once, when the timer is added, if the callable does not fit in its small
//   buffer).
// * Ids come from a 64-bit counter and are never reused, so a stale id cancels nothing.
// * tao re-arms a repeating timer at expiration + interval and jumps to now once it is ten
//   seconds behind; here the missed_tick_policy chosen at construction decides (skip by
//   default: keep the phase, drop the runs missed while the thread was blocked).
//

#ifndef TIMEWHEEL_TIMER_REGISTRY_HPP
#define TIMEWHEEL_TIMER_REGISTRY_HPP

#include <timewheel/keyed_timers.hpp>
#include <timewheel/repeating_task.hpp>

#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <type_traits>

namespace timewheel {

/// One-shot and repeating timers on an io_context's wheel, named by ids.
/**
 * @li add_timer(when, interval, callback): calls @c callback at @c when, then every
 * @c interval if it is positive (zero: once). Returns the timer's id.
 * @li cancel(id): stops the timer; false if no such timer is pending.
 * @li size(): the number of timers pending.
 *
 * @par Execution
 * The callback is called on the thread that runs the io_context, from inside the wheel's
 * expiry loop, never from inside add_timer(). It is invoked as <tt>callback(id)</tt> if it
 * accepts a timer_id, else as <tt>callback()</tt>. It may add and cancel timers, its own
 * included: a repeating timer that cancels itself does not run again. While the callback of
 * a one-shot timer runs, that timer is no longer pending. If a callback throws, the
 * exception propagates out of the io_context's run() and that timer ends.
 *
 * @par Precision
 * As keyed_timers: never early, within one tick of the wheel plus the io_context's latency.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe from the thread that runs their io_context.@n
 * @e Shared @e objects: Unsafe.
 *
 * @par Lifetime
 * Neither copyable nor movable. Destroy it before its io_context; destroying it cancels every
 * timer without calling it. It must not be destroyed from inside one of its callbacks.
 *
 * @par Example
 * @code
 * timewheel::timer_registry timers(io);
 * auto ping = timers.add_timer(std::chrono::seconds(0), std::chrono::seconds(10),
 *                              [&] { conn.send_ping(); });
 * auto once = timers.add_timer(std::chrono::steady_clock::now() + std::chrono::minutes(1),
 *                              {}, [&] { conn.close(); });
 * timers.cancel(ping);
 * @endcode
 */
class timer_registry {
public:
    /// The id of a timer; never 0, never reused.
    using timer_id = std::uint64_t;

    /// The clock deadlines are measured with.
    using clock_type = wheel_service::clock_type;

    /// The duration type of the clock.
    using duration = clock_type::duration;

    /// The time point type of the clock.
    using time_point = clock_type::time_point;

    /// How callbacks are stored.
    using callback_type = std::function<void(timer_id)>;

    /// Constructs an empty registry on the wheel of @c context (an io_context).
    /**
     * @param context The io_context whose wheel files the timers.
     * @param missed What a repeating timer does about runs missed while the thread was
     * blocked.
     */
    template <typename ExecutionContext>
    requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    explicit timer_registry(ExecutionContext& context,
                            missed_tick_policy missed = missed_tick_policy::skip)
        : missed_(missed)
        , wheel_(context, [this](const timer_id& id, slot& s) { fire(id, s); }) {}

    /// Constructs an empty registry on the wheel of @c ex's io_context.
    template <typename Executor>
    requires boost::asio::execution::is_executor<Executor>::value explicit timer_registry(
        const Executor& ex, missed_tick_policy missed = missed_tick_policy::skip)
        : timer_registry(boost::asio::query(ex, boost::asio::execution::context), missed) {}

    timer_registry(const timer_registry&) = delete;
    timer_registry& operator=(const timer_registry&) = delete;

    /// Cancels every timer without calling it.
    ~timer_registry() = default;

    /// Adds a timer that calls @c callback at @c when, then every @c interval.
    /**
     * @param when The first due time; a time in the past means due now.
     * @param interval Zero: the timer runs once. Positive: it repeats every @c interval
     * until cancelled.
     * @param callback Invocable as <tt>callback(timer_id)</tt> or <tt>callback()</tt>.
     * @returns The id of the new timer.
     * @throws std::invalid_argument naming "interval" if @c interval is negative, or
     * "callback" if @c callback is empty (a null function pointer or an empty
     * std::function); nothing is added.
     *
     * @par Complexity
     * O(1) on average; allocates only when the number of timers reaches a new peak (and
     * for the callback if std::function cannot hold it in place).
     */
    template <typename Function>
    timer_id add_timer(time_point when, duration interval, Function&& callback);

    /// Adds a timer that calls @c callback after @c delay, then every @c interval; see the
    /// overload taking a time point.
    template <typename Function>
    timer_id add_timer(duration delay, duration interval, Function&& callback);

    /// Stops timer @c id: it is not called again. O(1) on average.
    /**
     * @returns Whether the timer was pending (an unknown, fired one-shot or cancelled id
     * gives false). From inside a repeating timer's own callback: true, and it does not run
     * again.
     */
    bool cancel(timer_id id);

    /// Cancels every timer without calling it; returns how many were pending.
    std::size_t cancel_all() noexcept;

    /// Whether timer @c id is pending.
    bool contains(timer_id id) const;

    /// Number of timers pending, counting a repeating timer whose callback is running.
    std::size_t size() const noexcept {
        return wheel_.size() + (firing_ != 0 && firing_repeats_ ? 1 : 0);
    }

    /// The policy for runs missed while the thread was blocked.
    missed_tick_policy missed() const noexcept { return missed_; }

private:
    struct slot {
        callback_type callback;
        duration interval;
        time_point scheduled;
    };

    template <typename Function>
    static callback_type make_callback(Function&& callback);
    void fire(timer_id id, slot& s);

    missed_tick_policy missed_;
    timer_id next_id_ = 1;
    timer_id firing_ = 0;         // the timer whose callback is running, if any
    bool firing_repeats_ = false; // it is repeating and has not been cancelled
    keyed_timers<timer_id, slot> wheel_;
};

} // namespace timewheel

#include <timewheel/impl/timer_registry.hpp>

#endif // TIMEWHEEL_TIMER_REGISTRY_HPP
