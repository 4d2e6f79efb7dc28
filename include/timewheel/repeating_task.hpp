//
// timewheel/repeating_task.hpp
//
// Repeating tasks: run a callable every interval, a given number of times or forever, on an
// io_context's wheel; a handle cancels it (and does on destruction unless detached).
//
// What it is for: heartbeats, metrics flushes, periodic sweeps, polls, the repeating jobs of
// lk668's timewheel and tao's timers, without a steady_timer and a re-armed handler per task.
//
// Design and trade-offs:
//
// * A task is one heap block (allocated once, when it starts) holding a wheel_service entry,
//   the schedule and the callable. Each run re-arms the same entry: O(1), no allocation.
// * The schedule is a phase: runs are due at first, first + interval, first + 2 interval...
//   When the thread was blocked past one or more due times, the missed_tick_policy decides:
//   burst runs the missed ones back to back (the count of runs is kept, the phase too),
//   delay restarts the schedule from the late run, skip keeps the phase and drops the missed
//   runs. The policy compares the schedule with the time the late run started, as Tokio's
//   MissedTickBehavior does, so a callable slower than its interval is handled the same way.
// * `spread` staggers the first runs of tasks created together: the k-th task started with
//   it (k counts every such task in the process) is offset by frac(k * 0.618...) of its
//   interval. Any n consecutive tasks so land in n nearly equal gaps of the interval (the
//   three-distance theorem), deterministically, without a random number generator.
// * The handle owns the task. A detached task owns itself: it frees itself after its last
//   run, or when the io_context shuts down, so it never leaks.
//

#ifndef TIMEWHEEL_REPEATING_TASK_HPP
#define TIMEWHEEL_REPEATING_TASK_HPP

#include <timewheel/wheel_service.hpp>

#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>

#include <atomic>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

namespace timewheel {

/// What a repeating task does about runs that came due while its thread was blocked.
enum class missed_tick_policy {
    /// Run every missed run, back to back, then go on with the original schedule. The number
    /// of runs in a given time is kept; the callable sees its scheduled times in order.
    burst,

    /// Run once, late, and restart the schedule from that run: the next run is one interval
    /// after the late one started. The phase is lost; runs are never closer than an interval.
    delay,

    /// Run once, late, and drop the other missed runs: the next run is the first due time of
    /// the original schedule after the late run started. The phase is kept.
    skip,
};

/// The count of a task that repeats until it is cancelled or its io_context shuts down.
inline constexpr std::uint64_t repeat_forever = std::numeric_limits<std::uint64_t>::max();

/// Options of a repeating task.
struct repeat_options {
    /// How many times the callable runs, at least 1; repeat_forever for no limit.
    std::uint64_t count = repeat_forever;

    /// What to do about runs missed while the thread was blocked.
    missed_tick_policy missed = missed_tick_policy::skip;

    /// Offsets the first run by a fraction of the interval so that tasks created together do
    /// not fire together (see the top of this header); the later runs keep that phase.
    bool spread = false;

    /// Lateness each run accepts, so that the wheel files it without re-filing (see
    /// wheel::arm); zero means exact (within one tick of the wheel).
    wheel_service::duration slack{};
};

/// What a callable taking an argument learns about the run it is called for.
struct repeat_run {
    /// The number of runs before this one: 0 for the first.
    std::uint64_t index;

    /// When this run was due according to the schedule.
    wheel_service::time_point scheduled;

    /// When this run started (the clock was read just before the call). It is the time the
    /// missed_tick_policy compares with the schedule.
    wheel_service::time_point started;
};

namespace detail {

// The part of a task that does not depend on the callable.
class repeating_state : public service_entry {
public:
    using clock_type = wheel_service::clock_type;
    using duration = wheel_service::duration;
    using time_point = wheel_service::time_point;
    using invoke_function = void (*)(repeating_state&, const repeat_run&);
    using destroy_function = void (*)(repeating_state*) noexcept;

    repeating_state(wheel_service& service, invoke_function invoke, destroy_function destroy,
                    time_point first, duration interval, const repeat_options& options) noexcept
        : service_entry(&repeating_state::on_event)
        , service_(&service)
        , invoke_(invoke)
        , destroy_(destroy)
        , scheduled_(first)
        , interval_(interval)
        , slack_(options.slack)
        , remaining_(options.count)
        , policy_(options.missed) {}

    repeating_state(const repeating_state&) = delete;
    repeating_state& operator=(const repeating_state&) = delete;

    // Whether another run will happen (the current one, if running, not counted).
    bool active() const noexcept { return !done_ && (!running_ || remaining_ != 0); }

    static void on_event(wheel_service& service, service_entry& entry, entry_event event);

    wheel_service* service_;
    invoke_function invoke_;
    destroy_function destroy_;
    time_point scheduled_; // due time of the next run, or of the one running
    duration interval_;
    duration slack_;
    std::uint64_t remaining_; // runs not yet started; repeat_forever: no limit
    std::uint64_t runs_ = 0;  // runs started
    missed_tick_policy policy_;
    bool owned_ = true;    // a repeating_task handle refers to it
    bool running_ = false; // inside invoke_
    bool done_ = false;    // will not be armed again
};

template <typename Function>
class repeating_state_impl final : public repeating_state {
public:
    template <typename F>
    repeating_state_impl(wheel_service& service, time_point first, duration interval,
                         const repeat_options& options, F&& f)
        : repeating_state(service, &repeating_state_impl::invoke, &repeating_state_impl::destroy,
                          first, interval, options)
        , function_(std::forward<F>(f)) {}

private:
    static void invoke(repeating_state& base, const repeat_run& run) {
        Function& f = static_cast<repeating_state_impl&>(base).function_;
        if constexpr (std::is_invocable_v<Function&, const repeat_run&>) {
            f(run);
        } else {
            f();
        }
    }

    static void destroy(repeating_state* base) noexcept {
        delete static_cast<repeating_state_impl*>(base);
    }

    Function function_;
};

// When the run after one due at `scheduled` and started at `started` is due.
wheel_service::time_point next_run_time(missed_tick_policy policy,
                                        wheel_service::time_point scheduled,
                                        wheel_service::time_point started,
                                        wheel_service::duration interval) noexcept;

// The offset of the next spread task's first run within `interval`.
wheel_service::duration spread_offset(wheel_service::duration interval) noexcept;

template <typename T>
boost::asio::execution_context&
context_of(T& context) requires std::is_convertible_v<T&, boost::asio::execution_context&> {
    return context;
}

template <typename T>
boost::asio::execution_context&
context_of(const T& ex) requires boost::asio::execution::is_executor<T>::value {
    return boost::asio::query(ex, boost::asio::execution::context);
}

template <typename T>
concept context_or_executor = requires(T& t) {
    detail::context_of(t);
};

struct repeating_task_access;

} // namespace detail

/// The handle of a repeating task: cancels it, and does when destroyed unless detached.
/**
 * Obtained from repeat_every(), repeat_after() or repeat_at(). It can be moved, not copied.
 * An empty handle (default-constructed, moved from, or detached) refers to no task.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe from the thread that runs the task's io_context.@n
 * @e Shared @e objects: Unsafe.
 *
 * @par Lifetime
 * The handle may outlive the io_context: once the io_context has shut down, the task is
 * over, and cancel() and the destructor do not touch the io_context.
 *
 * @par Example
 * @code
 * timewheel::repeating_task heartbeat = timewheel::repeat_every(
 *     io, std::chrono::seconds(1), [&] { send_heartbeat(); });
 * // ...
 * heartbeat.cancel(); // or let the handle go out of scope
 * @endcode
 */
class repeating_task {
public:
    using clock_type = wheel_service::clock_type;
    using duration = wheel_service::duration;
    using time_point = wheel_service::time_point;

    /// An empty handle.
    repeating_task() noexcept = default;

    /// Takes over @c other's task; @c other is left empty.
    repeating_task(repeating_task&& other) noexcept
        : state_(std::exchange(other.state_, nullptr)) {}

    /// Cancels this handle's task, then takes over @c other's.
    repeating_task& operator=(repeating_task&& other) noexcept {
        if (this != &other) {
            reset();
            state_ = std::exchange(other.state_, nullptr);
        }
        return *this;
    }

    repeating_task(const repeating_task&) = delete;
    repeating_task& operator=(const repeating_task&) = delete;

    /// Cancels the task (unless detached).
    ~repeating_task() { reset(); }

    /// Stops the task: it does not run again. O(1).
    /**
     * May be called from inside the task's own callable: the current run finishes, no other
     * starts. Cancelling twice is safe.
     *
     * @returns Whether the task would have run again.
     */
    bool cancel() noexcept;

    /// Lets the task run to its end on its own: it frees itself after its last run, or when
    /// the io_context shuts down. The handle becomes empty.
    void detach() noexcept;

    /// Whether the handle refers to a task (running, pending or over).
    bool valid() const noexcept { return state_ != nullptr; }

    /// Whether the task will run again: not cancelled, count not exhausted, io_context not
    /// shut down, callable never threw.
    bool active() const noexcept { return state_ != nullptr && state_->active(); }

    /// The number of runs started so far.
    std::uint64_t runs() const noexcept { return state_ != nullptr ? state_->runs_ : 0; }

    /// When the next run is due, before the missed-tick policy acts on a late run; nothing
    /// if the task will not run again, or while it is running (the next due time is decided
    /// when the run ends).
    std::optional<time_point> next_run() const noexcept {
        if (state_ == nullptr || state_->done_ || state_->running_) {
            return std::nullopt;
        }
        return state_->scheduled_;
    }

    /// The interval between runs.
    duration interval() const noexcept {
        return state_ != nullptr ? state_->interval_ : duration::zero();
    }

private:
    friend struct detail::repeating_task_access;

    explicit repeating_task(detail::repeating_state* state) noexcept
        : state_(state) {}

    void reset() noexcept;

    detail::repeating_state* state_ = nullptr;
};

/// Starts a task that calls @c f every @c interval, first at @c first.
/**
 * @param where An io_context (or another execution context with a wheel_service), or an
 * executor of one: the task runs on that io_context's thread, from inside its wheel.
 * @param first When the first run is due (plus the spread offset if options.spread). A time
 * in the past means due now: the first run happens on the next turn of the io_context,
 * never inside this call.
 * @param interval Time between the due times of two runs; must be positive.
 * @param f The callable, invoked as <tt>f(const repeat_run&)</tt> if it accepts that, else
 * as <tt>f()</tt>. It may cancel this task through its handle, start or cancel other tasks.
 * If it throws, the exception propagates out of the io_context's run() and the task ends.
 * @param options Count, missed-tick policy, spread, slack.
 * @returns The handle; discarding it cancels the task at once (call detach() to keep it).
 * @throws std::invalid_argument naming "interval" if @c interval is zero or negative, "count"
 * if options.count is zero, "slack" if options.slack is negative; nothing is scheduled.
 *
 * @par Complexity
 * One allocation (the task). Each run: O(1), no allocation.
 *
 * @par Example
 * @code
 * auto flush = timewheel::repeat_at(io, next_minute, std::chrono::minutes(1),
 *     [&](const timewheel::repeat_run& run) { metrics.flush(run.scheduled); },
 *     {.missed = timewheel::missed_tick_policy::burst});
 * @endcode
 */
template <typename Where, typename Function>
[[nodiscard]] repeating_task repeat_at(Where&& where, repeating_task::time_point first,
                                       repeating_task::duration interval, Function&& f,
                                       const repeat_options& options = {});

/// Starts a task that calls @c f every @c interval, first after @c first_delay; see
/// repeat_at(). A zero or negative delay means due now.
template <typename Where, typename Function>
[[nodiscard]] repeating_task repeat_after(Where&& where, repeating_task::duration first_delay,
                                          repeating_task::duration interval, Function&& f,
                                          const repeat_options& options = {});

/// Starts a task that calls @c f every @c interval, first one interval from now; see
/// repeat_at().
template <typename Where, typename Function>
[[nodiscard]] repeating_task repeat_every(Where&& where, repeating_task::duration interval,
                                          Function&& f, const repeat_options& options = {});

} // namespace timewheel

#include <timewheel/impl/repeating_task.hpp>

#endif // TIMEWHEEL_REPEATING_TASK_HPP
