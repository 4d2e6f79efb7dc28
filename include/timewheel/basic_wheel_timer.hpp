//
// timewheel/basic_wheel_timer.hpp
//
// A steady_timer whose arm, re-arm and cancel cost O(1), filed in the io_context's wheel.
//

#ifndef TIMEWHEEL_BASIC_WHEEL_TIMER_HPP
#define TIMEWHEEL_BASIC_WHEEL_TIMER_HPP

#include <timewheel/wheel_service.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace timewheel {

/// A timer with the interface of boost::asio::basic_waitable_timer, kept in a timing wheel.
/**
 * Use it where you would use boost::asio::steady_timer. Arming, re-arming and cancelling
 * are O(1) instead of O(log n) heap operations; one steady_timer per io_context drives all
 * of them (see wheel_service). The timer holds its first pending wait inside itself when
 * the handler is small (see async_wait()), so the usual one-wait timer allocates nothing
 * and a pending timer costs sizeof(basic_wheel_timer) bytes, 160 on any_io_executor.
 *
 * Two additions serve idle timeouts, where the deadline is pushed back on every read:
 *
 * @li reschedule_after() moves the expiry of the pending waits without completing them: no
 * handler runs, nothing is allocated, and a later deadline costs one store (the entry is
 * re-filed once, when its old slot comes due).
 * @li slack() lets the timer fire up to the given duration late, so that it is filed at the
 * coarsest wheel level that honours the slack and fires there without being re-filed.
 *
 * @par Precision
 * A wait never completes before its expiry, measured with std::chrono::steady_clock. It
 * completes within one tick of the wheel (1 ms by default; see wheel_service_options) plus
 * the slack, plus the time the io_context takes to get to it.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe, provided that they are used from the thread that runs their
 * io_context (all the timers of an io_context share its wheel).@n
 * @e Shared @e objects: Unsafe.
 *
 * @par Example
 * @code
 * timewheel::wheel_timer timer(io, std::chrono::seconds(5));
 * timer.async_wait([](boost::system::error_code ec) {
 *     if (!ec) { std::puts("five seconds later"); }
 * });
 * @endcode
 */
template <typename Executor = boost::asio::any_io_executor>
class basic_wheel_timer {
    using service_type = wheel_service;

public:
    /// The type of the executor associated with the object.
    using executor_type = Executor;

    /// Rebinds the timer type to another executor.
    template <typename Executor1>
    struct rebind_executor {
        /// The timer type when rebound to the specified executor.
        using other = basic_wheel_timer<Executor1>;
    };

    /// The clock type.
    using clock_type = wheel_service::clock_type;

    /// The duration type of the clock.
    using duration = clock_type::duration;

    /// The time point type of the clock.
    using time_point = clock_type::time_point;

    /// Constructs a timer without setting an expiry time.
    /**
     * @param ex The I/O executor that the timer will use, by default, to dispatch handlers
     * for any asynchronous operations performed on the timer. Its execution context must be
     * a boost::asio::io_context.
     */
    explicit basic_wheel_timer(const executor_type& ex)
        : impl_(0, ex) {}

    /// Constructs a timer without setting an expiry time.
    /**
     * @param context An io_context whose executor the timer will use, by default, to
     * dispatch handlers for any asynchronous operations performed on the timer.
     */
    template <typename ExecutionContext>
    explicit basic_wheel_timer(
        ExecutionContext& context,
        std::enable_if_t<
            std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>>* = nullptr)
        : impl_(0, 0, context) {}

    /// Constructs a timer that expires at @c expiry_time.
    basic_wheel_timer(const executor_type& ex, const time_point& expiry_time)
        : impl_(0, ex) {
        expires_at(expiry_time);
    }

    /// Constructs a timer that expires at @c expiry_time.
    template <typename ExecutionContext>
    basic_wheel_timer(
        ExecutionContext& context, const time_point& expiry_time,
        std::enable_if_t<
            std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>>* = nullptr)
        : impl_(0, 0, context) {
        expires_at(expiry_time);
    }

    /// Constructs a timer that expires @c expiry_time from now.
    basic_wheel_timer(const executor_type& ex, const duration& expiry_time)
        : impl_(0, ex) {
        expires_after(expiry_time);
    }

    /// Constructs a timer that expires @c expiry_time from now.
    template <typename ExecutionContext>
    basic_wheel_timer(
        ExecutionContext& context, const duration& expiry_time,
        std::enable_if_t<
            std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>>* = nullptr)
        : impl_(0, 0, context) {
        expires_after(expiry_time);
    }

    /// Move-constructs a timer: its expiry, slack and pending waits move with it (a wait
    /// held inside @c other, with its cancellation slot, too), and the waits complete as
    /// they would have on @c other. @c other is left as if newly constructed: no waits,
    /// expiry() is time_point(), no slack.
    basic_wheel_timer(basic_wheel_timer&& other) noexcept = default;

    /// Move-assigns a timer: the waits pending on this timer complete with
    /// boost::asio::error::operation_aborted, then it takes over @c other's state.
    basic_wheel_timer& operator=(basic_wheel_timer&& other) = default;

    /// Move-constructs a timer from one with another executor type.
    template <typename Executor1>
    basic_wheel_timer(basic_wheel_timer<Executor1>&& other,
                      std::enable_if_t<std::is_convertible_v<Executor1, Executor>>* = nullptr)
        : impl_(std::move(other.impl_)) {}

    /// Move-assigns a timer from one with another executor type.
    template <typename Executor1>
    std::enable_if_t<std::is_convertible_v<Executor1, Executor>, basic_wheel_timer&>
    operator=(basic_wheel_timer<Executor1>&& other) {
        basic_wheel_timer tmp(std::move(other));
        impl_ = std::move(tmp.impl_);
        return *this;
    }

    /// Destroys the timer. Pending waits complete with boost::asio::error::operation_aborted.
    ~basic_wheel_timer() = default;

    /// Gets the executor associated with the object.
    const executor_type& get_executor() noexcept { return impl_.get_executor(); }

    /// Cancels all asynchronous operations waiting on the timer.
    /**
     * Their handlers are invoked with boost::asio::error::operation_aborted, never from
     * inside this function. Cancelling a timer with no pending wait, or twice, does nothing.
     *
     * @returns The number of asynchronous operations that were cancelled.
     */
    std::size_t cancel() { return impl_.get_service().cancel(impl_.get_implementation()); }

    /// Cancels the oldest asynchronous operation waiting on the timer.
    /**
     * @returns The number of asynchronous operations that were cancelled (0 or 1).
     */
    std::size_t cancel_one() { return impl_.get_service().cancel_one(impl_.get_implementation()); }

    /// Gets the timer's expiry time as an absolute time.
    time_point expiry() const { return impl_.get_service().expiry(impl_.get_implementation()); }

    /// Sets the timer's expiry time as an absolute time.
    /**
     * Any pending asynchronous waits are cancelled: their handlers are invoked with
     * boost::asio::error::operation_aborted. To move the expiry without cancelling, see
     * reschedule_at().
     *
     * @returns The number of asynchronous operations that were cancelled.
     */
    std::size_t expires_at(const time_point& expiry_time) {
        return impl_.get_service().expires_at(impl_.get_implementation(), expiry_time);
    }

    /// Sets the timer's expiry time relative to now.
    /**
     * Any pending asynchronous waits are cancelled: their handlers are invoked with
     * boost::asio::error::operation_aborted. A zero or negative duration means "due now":
     * the next wait completes on a later turn of the io_context. async_wait() queues it as
     * a post would, ahead of the handlers posted after it (steady_timer runs those first;
     * see the guide's "Differences from steady_timer"). The sum saturates:
     * duration::max() means never.
     *
     * To push back an idle timeout on every read, prefer reschedule_after(): it keeps the
     * pending wait, runs no handler and costs O(1) without relinking.
     *
     * @returns The number of asynchronous operations that were cancelled.
     */
    std::size_t expires_after(const duration& expiry_time) {
        return expires_at(detail::after<clock_type>(expiry_time));
    }

    /// Moves the expiry time of the pending waits, without completing them.
    /**
     * The idle-timeout fast path. The pending waits stay pending and now complete at
     * @c expiry_time. A later time costs one store; an earlier one relinks the entry. No
     * handler runs and nothing is allocated. With no pending wait it only sets the expiry.
     *
     * @returns The number of pending waits that were rescheduled.
     */
    std::size_t reschedule_at(const time_point& expiry_time) {
        return impl_.get_service().reschedule_at(impl_.get_implementation(), expiry_time);
    }

    /// Moves the expiry time of the pending waits to @c expiry_time from now, without
    /// completing them. See reschedule_at().
    std::size_t reschedule_after(const duration& expiry_time) {
        return reschedule_at(detail::after<clock_type>(expiry_time));
    }

    /// The lateness the timer accepts (zero: exact, within one tick).
    duration slack() const { return impl_.get_service().slack(impl_.get_implementation()); }

    /// Sets the lateness the timer accepts, from the next time the timer is armed.
    /**
     * The timer is armed by the first async_wait() after construction, after expires_at()
     * or expires_after(), or after its waits completed; a wait that joins waits already
     * pending shares their slack.
     *
     * With slack, a wait completes at some time in [expiry, expiry + slack + one tick]. The
     * wheel rounds the deadline up to the coarsest slot granularity (a power of 64 ticks)
     * that does not exceed the slack, so that the entry fires in place without cascading
     * between levels: cheaper expiry, fewer wakeups. Idle timeouts and cache expiry rarely
     * need better than a few percent of their period.
     *
     * @throws std::invalid_argument if @c slack is negative.
     */
    void slack(const duration& slack) {
        impl_.get_service().set_slack(impl_.get_implementation(), slack);
    }

    /// Performs a blocking wait on the timer.
    /**
     * Blocks the calling thread until expiry() has passed, as steady_timer::wait() does:
     * the thread sleeps on steady_clock; neither the wheel nor the io_context is involved,
     * and pending asynchronous waits are unaffected (nor does cancel() end this wait).
     * Never call it from the thread that runs the timer's io_context: nothing else would
     * run there meanwhile. In a program built on the wheel, prefer async_wait().
     *
     * @throws boost::system::system_error Thrown on failure (it does not fail on Linux).
     */
    void wait() {
        boost::system::error_code ec;
        impl_.get_service().wait(impl_.get_implementation(), ec);
        detail::throw_error(ec, "wait");
    }

    /// Performs a blocking wait on the timer; see wait().
    /**
     * @param ec Set to indicate what error occurred, if any.
     */
    void wait(boost::system::error_code& ec) {
        impl_.get_service().wait(impl_.get_implementation(), ec);
    }

    /// Starts an asynchronous wait on the timer.
    /**
     * The wait completes when the timer expires, when it is cancelled, or when its
     * cancellation slot is emitted. The handler is never invoked from inside this function;
     * it is invoked as if by boost::asio::post on its associated executor, with the
     * operation's memory released before the call.
     *
     * @par Memory
     * When no other wait is pending, and the handler is at most 16 bytes, moves without
     * throwing and completes natively (its associated executor is the timer's, or the
     * io_context's own), the wait is kept inside the timer and nothing is allocated: the
     * handler's associated allocator is not used. Otherwise the operation is allocated
     * with the handler's associated allocator, as boost::asio::steady_timer does. On
     * completion the handler moves to a carrier that the io_context recycles, so that the
     * timer may be destroyed or moved before the handler runs, and its inline storage is
     * free for the handler to wait again. A carrier is allocated only when none is free;
     * running out of memory then terminates the program.
     *
     * @param token The completion token that will be used to produce a completion handler,
     * which will be called when the timer expires. Potential completion tokens include
     * boost::asio::use_future, boost::asio::use_awaitable, boost::asio::deferred, or a
     * function object with the correct completion signature.
     *
     * @par Completion Signature
     * @code void(boost::system::error_code) @endcode
     * The error code is success when the timer expired, and
     * boost::asio::error::operation_aborted when the wait was cancelled.
     *
     * @par Per-Operation Cancellation
     * This asynchronous operation supports cancellation for the following
     * boost::asio::cancellation_type values:
     * @li @c cancellation_type::terminal
     * @li @c cancellation_type::partial
     * @li @c cancellation_type::total
     * Each completes only this wait, with boost::asio::error::operation_aborted.
     */
    template <typename WaitToken = boost::asio::default_completion_token_t<executor_type>>
    TIMEWHEEL_ALWAYS_INLINE auto
    async_wait(WaitToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        if constexpr (initiates_directly<WaitToken>()) {
            // What async_initiate would do for this handler, without the call around it.
            initiate_async_wait(this)(static_cast<WaitToken&&>(token));
        } else {
            return boost::asio::async_initiate<WaitToken, void(boost::system::error_code)>(
                initiate_async_wait(this), token);
        }
    }

    basic_wheel_timer(const basic_wheel_timer&) = delete;
    basic_wheel_timer& operator=(const basic_wheel_timer&) = delete;

private:
    template <typename>
    friend class basic_wheel_timer;

    class initiate_async_wait;

    // Whether async_initiate, given a WaitToken, only calls the initiation with it: the
    // token is a completion handler whose async_result is Asio's own for handlers (its
    // initiate() is completion_handler_async_result's, not one a specialisation declares).
    // async_wait() then makes that call itself: at a million cold timers each call boundary
    // on the arm path (saved registers, a return) lengthens the arm and so shortens how many
    // arms' cache misses the processor overlaps, and compilers keep Asio's initiate() out
    // of line once the arm is inlined into it.
    template <typename WaitToken>
    static constexpr bool initiates_directly() {
        using token_type = std::decay_t<WaitToken>;
        using signature = void(boost::system::error_code);
        if constexpr (!std::is_class_v<token_type> ||
                      !std::is_invocable_v<token_type&, boost::system::error_code>) {
            return false;
        } else {
            using handler_result =
                boost::asio::detail::completion_handler_async_result<token_type, signature>;
            using result = boost::asio::async_result<token_type, signature>;
            if constexpr (!std::is_base_of_v<handler_result, result>) {
                return false;
            } else {
                return &result::template initiate<initiate_async_wait, WaitToken> ==
                       &handler_result::template initiate<initiate_async_wait, WaitToken>;
            }
        }
    }

    class initiate_async_wait {
    public:
        using executor_type = Executor;

        explicit initiate_async_wait(basic_wheel_timer* self)
            : self_(self) {}

        const executor_type& get_executor() const noexcept { return self_->get_executor(); }

        template <typename WaitHandler>
        TIMEWHEEL_ALWAYS_INLINE void operator()(WaitHandler&& handler) const {
            // If you get an error on the following line it means that your handler does not
            // meet the documented type requirements for a WaitHandler.
            BOOST_ASIO_WAIT_HANDLER_CHECK(WaitHandler, handler) type_check;

            detail::non_const_lvalue<WaitHandler> handler2(handler);
            self_->impl_.get_service().async_wait(self_->impl_.get_implementation(), handler2.value,
                                                  self_->impl_.get_executor());
        }

    private:
        basic_wheel_timer* self_;
    };

    detail::io_object_impl<wheel_service, Executor> impl_;
};

} // namespace timewheel

#endif // TIMEWHEEL_BASIC_WHEEL_TIMER_HPP
