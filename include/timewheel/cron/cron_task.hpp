//
// timewheel/cron/cron_task.hpp
//
// Cron tasks: run a callable at each occurrence of a cron::schedule ("0 9 * * MON-FRI" in
// Europe/Berlin, or every(...)), on an io_context's wheel, in process, with no store. A
// handle cancels it (and does on destruction unless detached). For occurrences that must
// survive a restart, or run once across several nodes, use dq's durable schedules.
//
// Design and trade-offs (those of repeating_task, whose conventions it follows):
//
// * A task is one heap block (allocated once, when it starts) holding a wheel_service entry,
//   the schedule (a shared, immutable rule) and the callable. Each run re-arms the same
//   entry: no allocation per run (the schedule's next_after allocates nothing either).
// * Occurrences are instants on the system clock (a cron schedule is about the calendar);
//   the wheel runs on the steady clock. The task arms the wheel for the delay to the next
//   occurrence, and when it wakes it reads the system clock again: if the clock says it is
//   still early (the clock was set back, or the two clocks drifted apart), it re-arms for
//   what is left. So a run never starts before its occurrence by the system clock.
// * Long waits are cut into steps of at most `recheck` (one minute), so that a system clock
//   set ahead makes a run late by at most that much, not by the whole jump.
// * Occurrences missed while the thread was blocked (or the clock jumped ahead) run once,
//   late, and the task goes on with the first occurrence after that run started: the phase
//   is kept (missed_tick_policy::skip).
// * A schedule that has no next occurrence (`0 0 30 2 *`, or past year 9999) ends the task.
//

#ifndef TIMEWHEEL_CRON_CRON_TASK_HPP
#define TIMEWHEEL_CRON_CRON_TASK_HPP

#include <timewheel/cron/schedule.hpp>
#include <timewheel/repeating_task.hpp>
#include <timewheel/wheel_service.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace timewheel::cron {

/// What a callable taking an argument learns about the run it is called for.
struct cron_run {
    /// The number of runs before this one: 0 for the first.
    std::uint64_t index;

    /// The occurrence this run is for (UTC).
    time_point scheduled;

    /// When the run started, by the system clock; never before `scheduled`.
    std::chrono::system_clock::time_point started;
};

namespace detail {

// The part of a cron task that does not depend on the callable (src/cron/cron_task.cpp).
class cron_state : public timewheel::detail::service_entry {
public:
    using invoke_function = void (*)(cron_state&, const cron_run&);
    using destroy_function = void (*)(cron_state*) noexcept;

    // How long the task sleeps at most before it reads the system clock again.
    static constexpr std::chrono::minutes recheck{1};

    cron_state(wheel_service& service, invoke_function invoke, destroy_function destroy, schedule s,
               wheel_service::duration slack) noexcept
        : service_entry(&cron_state::on_event)
        , service_(&service)
        , invoke_(invoke)
        , destroy_(destroy)
        , schedule_(std::move(s))
        , slack_(slack) {}

    cron_state(const cron_state&) = delete;
    cron_state& operator=(const cron_state&) = delete;

    bool active() const noexcept { return !done_; }

    // Finds the first occurrence after `after` and arms the wheel for it; false (and done)
    // when there is none.
    bool arm_next(time_point after);

    // Arms the wheel for scheduled_, from the system clock's `now`, at most `recheck` ahead.
    void arm_for(std::chrono::system_clock::time_point now);

    static void on_event(wheel_service& service, service_entry& entry,
                         timewheel::detail::entry_event event);

    wheel_service* service_;
    invoke_function invoke_;
    destroy_function destroy_;
    schedule schedule_;
    wheel_service::duration slack_;
    time_point scheduled_{}; // the next occurrence, or the one running
    std::uint64_t runs_ = 0;
    bool owned_ = true;
    bool running_ = false;
    bool done_ = false;
};

template <typename Function>
class cron_state_impl final : public cron_state {
public:
    template <typename F>
    cron_state_impl(wheel_service& service, schedule s, wheel_service::duration slack, F&& f)
        : cron_state(service, &cron_state_impl::invoke, &cron_state_impl::destroy, std::move(s),
                     slack)
        , function_(std::forward<F>(f)) {}

private:
    static void invoke(cron_state& base, const cron_run& run) {
        Function& f = static_cast<cron_state_impl&>(base).function_;
        if constexpr (std::is_invocable_v<Function&, const cron_run&>) {
            f(run);
        } else {
            f();
        }
    }

    static void destroy(cron_state* base) noexcept { delete static_cast<cron_state_impl*>(base); }

    Function function_;
};

struct cron_task_access;

} // namespace detail

/// The handle of a cron task: cancels it, and does when destroyed unless detached.
/**
 * Obtained from start(). It can be moved, not copied. An empty handle (default-constructed,
 * moved from, or detached) refers to no task.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe from the thread that runs the task's io_context.@n
 * @e Shared @e objects: Unsafe.
 *
 * @par Example
 * @code
 * auto report = timewheel::cron::start(
 *     io, timewheel::cron::schedule::parse("0 9 * * MON-FRI", "Europe/Berlin"),
 *     [&](const timewheel::cron::cron_run& run) { send_report(run.scheduled); });
 * @endcode
 */
class cron_task {
public:
    /// An empty handle.
    cron_task() noexcept = default;

    /// Takes over @c other's task; @c other is left empty.
    cron_task(cron_task&& other) noexcept
        : state_(std::exchange(other.state_, nullptr)) {}

    /// Cancels this handle's task, then takes over @c other's.
    cron_task& operator=(cron_task&& other) noexcept {
        if (this != &other) {
            reset();
            state_ = std::exchange(other.state_, nullptr);
        }
        return *this;
    }

    cron_task(const cron_task&) = delete;
    cron_task& operator=(const cron_task&) = delete;

    /// Cancels the task (unless detached).
    ~cron_task() { reset(); }

    /// Stops the task: it does not run again. May be called from inside its own callable.
    /// @returns Whether the task would have run again.
    bool cancel() noexcept;

    /// Lets the task run on its own: it frees itself when it ends (its schedule has no next
    /// occurrence, or the io_context shuts down). The handle becomes empty.
    void detach() noexcept;

    /// Whether the handle refers to a task (running, pending or over).
    bool valid() const noexcept { return state_ != nullptr; }

    /// Whether the task will run again.
    bool active() const noexcept { return state_ != nullptr && state_->active(); }

    /// The number of runs started so far.
    std::uint64_t runs() const noexcept { return state_ != nullptr ? state_->runs_ : 0; }

    /// The next occurrence; nothing if the task will not run again, or while it runs.
    std::optional<time_point> next_run() const noexcept {
        if (state_ == nullptr || state_->done_ || state_->running_)
            return std::nullopt;
        return state_->scheduled_;
    }

private:
    friend struct detail::cron_task_access;
    explicit cron_task(detail::cron_state* state) noexcept
        : state_(state) {}
    void reset() noexcept;
    detail::cron_state* state_ = nullptr;
};

namespace detail {
struct cron_task_access {
    static cron_task make(cron_state* state) noexcept { return cron_task(state); }
};
} // namespace detail

/// Starts a task that calls @c f at each occurrence of @c s after now.
/**
 * @param where An io_context (or another execution context with a wheel_service), or an
 * executor of one: the task runs on that io_context's thread, from inside its wheel.
 * @param s The schedule: a cron expression in a zone, or an interval (schedule::every).
 * @param f The callable, invoked as <tt>f(const cron_run&)</tt> if it accepts that, else as
 * <tt>f()</tt>. If it throws, the exception propagates out of the io_context's run() and
 * the task ends.
 * @param slack Lateness each wake-up accepts (see wheel::arm); zero means exact.
 * @returns The handle; discarding it cancels the task at once (call detach() to keep it).
 * If the schedule has no occurrence after now, the task is over at once (active() false).
 *
 * @par Complexity
 * One allocation (the task). Each run: one next_after, no allocation.
 */
template <typename Where, typename Function>
[[nodiscard]] cron_task start(Where&& where, schedule s, Function&& f,
                              wheel_service::duration slack = {}) {
    static_assert(timewheel::detail::context_or_executor<Where>,
                  "cron::start: the first argument must be an io_context or an executor of one");
    using function_type = std::decay_t<Function>;
    static_assert(std::is_invocable_v<function_type&, const cron_run&> ||
                      std::is_invocable_v<function_type&>,
                  "cron::start: the callable must be invocable as f() or f(const cron_run&)");
    if (slack < wheel_service::duration::zero())
        throw std::invalid_argument("timewheel::cron::start: slack must not be negative");
    wheel_service& service =
        boost::asio::use_service<wheel_service>(timewheel::detail::context_of(where));
    auto state = std::make_unique<detail::cron_state_impl<function_type>>(
        service, std::move(s), slack, std::forward<Function>(f));
    state->arm_next(
        std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now()));
    return detail::cron_task_access::make(state.release());
}

} // namespace timewheel::cron

#endif // TIMEWHEEL_CRON_CRON_TASK_HPP
