//
// timewheel/wheel_service.hpp
//
// One timing wheel per io_context, driven by one steady_timer.
//
// The service owns a `wheel` (the core) and converts steady_clock time to its ticks. It
// keeps a single reactor timer (what a steady_timer is built on, from Asio's own timer
// queue) armed for the earliest occupied slot of the wheel, and re-arms it only when that
// moves earlier; an empty wheel leaves the io_context with no wakeups and no outstanding
// work. When the timer fires, the service advances the wheel to the current tick, firing at
// most `budget` entries before yielding to other handlers with a post, so that millions of
// expiries cannot starve I/O. An entry armed for a time that has already passed (a zero or
// negative delay) skips the reactor: the same posted continuation runs it on the next turn.
// The driver's operations are recycled: no allocation per wakeup.
//
// Work on the io_context is counted once for the whole wheel, as Asio's own timer service
// counts it per reactor wait: the driver's reactor wait (or its queued continuation) keeps
// run() from returning while any entry is armed, so arming and cancelling a wait touch no
// shared counter. A completed wait is counted when it is queued; the first of a run, or of a
// batch, runs inside the operation that delivers it. Waits aborted outside run() are queued
// on the service and completed by one posted operation per batch (what Asio pays per post,
// a mutex and an atomic, is then paid once per batch instead of once per cancel); inside
// run() they go to the thread's private queue, which costs no atomic.
//
// Trade-offs: deadlines are rounded up to a tick, so that nothing fires early; to keep a
// zero delay from waiting for the next tick, arm() reads the clock when the deadline falls
// in the tick after the wheel's time (or the wheel is idle), and only then. A deadline moved
// later leaves the driver alone: it wakes at the old time once, and re-files the entry.
//
// Users rarely name the service: `wheel_timer` (a steady_timer twin), `callback_timer` and
// the features find it with `use_service<wheel_service>(context)`. Name it to choose the
// tick and the budget before the first timer is armed, or to read its counters.
//

#ifndef TIMEWHEEL_WHEEL_SERVICE_HPP
#define TIMEWHEEL_WHEEL_SERVICE_HPP

#include <timewheel/detail/async_op.hpp>
#include <timewheel/detail/completed_waits.hpp>
#include <timewheel/detail/deadline.hpp>
#include <timewheel/detail/service_entry.hpp>
#include <timewheel/detail/thread_check.hpp>
#include <timewheel/detail/wait_op.hpp>
#include <timewheel/wheel.hpp>

#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/detail/chrono_time_traits.hpp>
#include <boost/asio/detail/scheduler.hpp>
#include <boost/asio/detail/timer_queue.hpp>
#include <boost/asio/detail/timer_scheduler.hpp>
#include <boost/asio/detail/wait_op.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/wait_traits.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>

namespace timewheel {

/// What a debug build calls when a wheel_service is entered from one thread while another
/// thread is inside it: a wheel, and every timer armed in it, belongs to one thread.
/**
 * @c what describes the misuse. The default handler prints it to stderr and aborts. The
 * check is active when NDEBUG is not defined, or when TIMEWHEEL_THREAD_CHECKS is defined
 * to 1 (0 turns it off); release builds pay nothing for it.
 *
 * A test harness, or a program that wants the report in its own log, replaces the handler
 * with set_thread_misuse_handler(). A handler that returns lets the call go on: the wheel
 * is then used from two threads at once, so return only to fail a test.
 */
using thread_misuse_handler = void (*)(const char* what);

/// Replaces the thread-misuse handler (nullptr restores the default, which aborts) and
/// returns the previous one. Call it at start-up, before any io_context runs: the handler
/// is process-wide and setting it is not thread-safe.
thread_misuse_handler set_thread_misuse_handler(thread_misuse_handler handler) noexcept;

/// Settings of a wheel_service.
struct wheel_service_options {
    /// Length of one tick, in [1 µs, 1 h]. Deadlines are rounded up to a tick boundary: an
    /// exact timer fires at most one tick (plus scheduling delay) after its expiry.
    std::chrono::nanoseconds tick = std::chrono::milliseconds(1);

    /// Levels of 256 slots, in [1, wheel::max_levels]. The range before deadlines are
    /// re-filed from the top level is 256^levels ticks (8 levels: the whole tick range).
    unsigned levels = 6;

    /// Most entries fired per dispatch, at least 1. Beyond it the service posts the rest.
    std::size_t budget = 1024;
};

/// The execution-context service that runs one timing wheel for an io_context.
/**
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe. The wheel of an io_context, and every timer armed in it,
 * is used by one thread at a time: the io_context-per-thread pattern, or an io_context run
 * by a single thread. Timers may be set up from another thread before that thread starts
 * running the io_context. In debug builds, entering the service from a second thread while
 * another thread is inside it reports the misuse (see set_thread_misuse_handler()).
 *
 * @par Shutdown
 * When the io_context shuts down, armed entries are disarmed without being called, and the
 * handlers of pending wheel_timer waits are destroyed without being invoked. Timers must be
 * destroyed before their io_context, like any Asio I/O object.
 *
 * @par Example
 * @code
 * boost::asio::io_context io;
 * auto& wheel = boost::asio::use_service<timewheel::wheel_service>(io);
 * wheel.configure({.tick = std::chrono::milliseconds(10), .budget = 256}); // before any timer
 * timewheel::wheel_timer timer(io, std::chrono::seconds(1));
 * timer.async_wait([](boost::system::error_code) {});
 * io.run();
 * std::printf("%llu wakeups\n", static_cast<unsigned long long>(wheel.wakeups()));
 * @endcode
 */
class wheel_service : public boost::asio::execution_context::service {
public:
    /// The key used to find the service in an execution context.
    using key_type = wheel_service;

    /// The identifier of the service.
    static boost::asio::execution_context::id id;

    /// The clock deadlines are measured with.
    using clock_type = std::chrono::steady_clock;
    using duration = clock_type::duration;
    using time_point = clock_type::time_point;

    /// Per-timer state of a basic_wheel_timer.
    using implementation_type = detail::timer_impl;

    /// Creates the service for @c context (a boost::asio::io_context).
    explicit wheel_service(boost::asio::execution_context& context);

    ~wheel_service() override;

    /// Replaces the settings. Only possible while no timer is armed: it rebuilds the wheel.
    /**
     * Call it before the first timer is armed, from the thread that will run the
     * io_context (or before that thread starts). The settings are unchanged if it throws.
     *
     * @throws std::invalid_argument naming the setting that is out of range.
     * @throws std::logic_error if an entry is armed, or if called from inside an expiry
     * callback (the wheel is running).
     */
    void configure(const wheel_service_options& options);

    /// The current settings.
    const wheel_service_options& options() const noexcept { return options_; }

    /// The first tick at or after @c t (so that a deadline never fires early); 0 for any
    /// time before the wheel's origin.
    tick_type to_tick(time_point t) const noexcept;

    /// The time at which tick @c tick begins, or time_point::max() if that is not
    /// representable.
    time_point to_time(tick_type tick) const noexcept;

    /// The tick that has begun at clock_type::now().
    tick_type current_tick() const noexcept;

    /// Number of entries armed: pending wheel_timer expiries, callback timers, features.
    std::size_t size() const noexcept { return armed_; }

    /// How many times the service has run the wheel: reactor wakeups, and continuations
    /// (after a budget ran out, or for entries armed already due). An empty wheel, or one
    /// whose entries are far away, does not wake up.
    std::uint64_t wakeups() const noexcept { return wakeups_; }

    /// The wheel itself, for inspection (for example next_expiry()).
    const wheel& get_wheel() const noexcept { return *wheel_; }

    /// @name Entries
    /// Used by callback_timer and the features, each on its own kind of entry.
    /// @{

    /// Arms (or re-arms) @c entry for @c expiry, accepting up to @c slack of lateness. O(1).
    /**
     * An expiry that has already passed is due now: the entry fires on a later turn of the
     * io_context, never inside this call.
     *
     * @throws std::invalid_argument if @c slack is negative; nothing changes.
     */
    TIMEWHEEL_ALWAYS_INLINE void arm(detail::service_entry& entry, time_point expiry,
                                     duration slack = {});

    /// Moves the expiry of an armed entry: lazily if later. O(1). False if not armed.
    bool reschedule(detail::service_entry& entry, time_point expiry);

    /// Disarms @c entry. False if it was not armed.
    bool cancel(detail::service_entry& entry) noexcept;

    /// The time at which an armed entry comes due, as filed (rounded up to a tick).
    time_point filed_expiry(const detail::service_entry& entry) const noexcept {
        return to_time(entry.deadline());
    }

    /// The lateness accepted by an armed entry, as filed (a whole number of ticks).
    duration filed_slack(const detail::service_entry& entry) const noexcept;

    /// Whether an armed entry's filed deadline lies in the ticks of [@c earliest, @c latest].
    bool filed_within(const detail::service_entry& entry, time_point earliest,
                      time_point latest) const noexcept;

    /// @}

    /// @name Asynchronous operations of features
    /// Operations made with detail::make_async_op() complete through these, as if posted to
    /// the io_context: never inside the initiating function.
    /// @{

    /// Queues @c op for completion; it counts as outstanding work until it has run.
    void post_immediate(detail::async_op_base& op) noexcept;

    /// Records an operation that will be completed later with post_deferred(): the
    /// io_context does not run out of work while it is pending.
    void work_started() noexcept;

    /// Queues @c op, counted by an earlier work_started(), for completion.
    void post_deferred(detail::async_op_base& op) noexcept;

    /// @}

    /// @name The service interface of basic_wheel_timer
    /// @{
    void construct(implementation_type&) noexcept {}
    void destroy(implementation_type& impl) noexcept;
    void move_construct(implementation_type& impl, implementation_type& other) noexcept;
    void move_assign(implementation_type& impl, wheel_service& other_service,
                     implementation_type& other) noexcept;
    std::size_t cancel(implementation_type& impl) noexcept;
    std::size_t cancel_one(implementation_type& impl) noexcept;
    time_point expiry(const implementation_type& impl) const noexcept { return impl.expiry; }
    std::size_t expires_at(implementation_type& impl, time_point expiry) noexcept;
    std::size_t reschedule_at(implementation_type& impl, time_point expiry);
    void set_slack(implementation_type& impl, duration slack);
    duration slack(const implementation_type& impl) const noexcept { return impl.slack(); }

    void wait(implementation_type& impl, boost::system::error_code& ec);

    template <typename Handler, typename IoExecutor>
    TIMEWHEEL_ALWAYS_INLINE void async_wait(implementation_type& impl, Handler& handler,
                                            const IoExecutor& io_ex);
    /// @}

private:
    friend void detail::on_timer_event(wheel_service&, detail::service_entry&, detail::entry_event);

    enum class driver_state : std::uint8_t {
        idle,    // no reactor wait: the wheel is empty
        waiting, // a reactor wait is pending for driver_tick_
        running, // inside run_due(); it re-arms at its end
        posted,  // the continuation is queued (entries are due); it re-arms at its end
    };
    // A reactor wait that completes with success may be stale (a newer one was started
    // after it was dequeued): it runs the wheel only in the idle and waiting states, which
    // is harmless; while running or posted it is ignored, so that the continuation is never
    // queued twice.

    void shutdown() override;

    // The cancellation types a wait accepts (each completes only that wait).
    static constexpr boost::asio::cancellation_type_t accepted_cancellation =
        boost::asio::cancellation_type::terminal | boost::asio::cancellation_type::partial |
        boost::asio::cancellation_type::total;

    // Every wait async_wait() does not complete itself: an inline wait with a slack, a
    // cancellation slot, an expiry due now or earlier than the driver's; or a queued one.
    template <typename Handler, typename IoExecutor>
    TIMEWHEEL_NOINLINE void async_wait_general(implementation_type& impl, Handler handler,
                                               const IoExecutor& io_ex);
    // A wait whose handler is not kept in the timer: an operation allocated with the
    // handler's allocator.
    template <typename Handler, typename IoExecutor>
    void async_wait_queued(implementation_type& impl, Handler& handler, const IoExecutor& io_ex);
    void add_wait(implementation_type& impl, detail::wait_op_base* op);
    TIMEWHEEL_ALWAYS_INLINE void arm_for_wait(implementation_type& impl);
    std::size_t abort_waits(implementation_type& impl, std::size_t max) noexcept;
    detail::wait_op_base* take_inline(implementation_type& impl,
                                      const boost::system::error_code& ec) noexcept;
    void post_cancelled(implementation_type& impl, detail::wait_op_base* op) noexcept;
    void post_aborted(detail::op_queue<detail::wait_op_base>& done) noexcept;
    void post_aborted(detail::wait_op_base* op) noexcept;
    void disarm_if_idle(implementation_type& impl) noexcept;
    static void cancel_wait(void* service, detail::async_op_base& op);
    static void cancel_inline_wait(void* service, detail::inline_wait& wait);
    std::size_t complete_waits(implementation_type& impl, std::size_t max,
                               const boost::system::error_code& ec) noexcept;
    void on_timer_event(implementation_type& impl, detail::entry_event event) noexcept;

    using time_traits =
        boost::asio::detail::chrono_time_traits<clock_type, boost::asio::wait_traits<clock_type>>;

    // A wait on the reactor's timer queue; kept on a free list once it completes.
    class driver_op : public boost::asio::detail::wait_op {
    public:
        explicit driver_op(wheel_service* service) noexcept;
        driver_op* next_free_ = nullptr;

    private:
        static void do_complete(void* owner, boost::asio::detail::scheduler_operation* base,
                                const boost::system::error_code&, std::size_t);
        wheel_service* service_;
    };

    // The continuation posted when a budget runs out; at most one is in flight.
    class continuation_op : public boost::asio::detail::scheduler_operation {
    public:
        explicit continuation_op(wheel_service* service) noexcept;

    private:
        static void do_complete(void* owner, boost::asio::detail::scheduler_operation* base,
                                const boost::system::error_code&, std::size_t);
        wheel_service* service_;
    };

    // Completes the waits aborted outside run(), posted once for all of them: the first
    // inline, the others queued behind it (see post_aborted()).
    class aborted_op : public boost::asio::detail::scheduler_operation {
    public:
        explicit aborted_op(wheel_service* service) noexcept;

    private:
        static void do_complete(void* owner, boost::asio::detail::scheduler_operation* base,
                                const boost::system::error_code&, std::size_t);
        wheel_service* service_;
    };

    [[noreturn]] static void throw_negative_slack();
    // The tick an expiry that has just passed is due at (its floor), or none when it has
    // not passed. Returned rather than written through a reference, so that arm() keeps
    // the tick in a register.
    std::optional<tick_type> settle_tick(time_point expiry);
    tick_type floor_tick(time_point t) const noexcept;
    void update_driver(bool due_now = false);
    void set_driver_state(driver_state state) noexcept;
    // Whether an arm at `tick` needs neither the clock nor the driver (see update_below_).
    bool plain_arm(tick_type tick) const noexcept;
    // Counts the entry if it was not armed, and arms it at `tick` (the part of an arm after
    // the tick is settled, shared by arm() and arm_settling()).
    void arm_at(detail::service_entry& entry, tick_type tick, duration slack);
    TIMEWHEEL_NOINLINE void arm_settling(detail::service_entry& entry, time_point expiry,
                                         tick_type tick, duration slack);
    void post_continuation() noexcept;
    void start_driver(tick_type tick);
    void stop_driver(bool work_held = false) noexcept;
    void on_driver(void* owner);
    void wake(void* owner);
    void run_due();
    void finish_run(bool unwinding);
    bool inside_run() const noexcept;
    tick_type slack_ticks(duration slack) const noexcept;

    boost::asio::detail::scheduler& scheduler_;
    boost::asio::detail::timer_scheduler& reactor_;
    boost::asio::detail::timer_queue<time_traits> timer_queue_;
    boost::asio::detail::timer_queue<time_traits>::per_timer_data timer_data_;
    driver_op* free_driver_ops_ = nullptr;
    driver_op* pending_driver_ = nullptr;   // the op in timer_data_, while waiting
    detail::completed_waits completed_;     // the wait-queue half (detail/completed_waits.hpp)
    detail::inline_wait_carriers carriers_; // what completed inline waits travel in
    continuation_op continuation_;
    aborted_op aborted_op_;
    detail::op_queue<detail::wait_op_base> aborted_; // waits aborted_op_ will complete
    bool aborted_posted_ = false;                    // aborted_op_ is queued
    wheel_service_options options_;
    std::int64_t tick_ns_;
    time_point origin_;
    std::optional<wheel> wheel_;
    driver_state driver_state_ = driver_state::idle;
    tick_type driver_tick_ = 0;
    // An arm of a tick below this one may need update_driver(): every tick while the driver
    // is idle, those before driver_tick_ while it waits, none while it runs or is posted
    // (the run re-arms at its end). Kept by set_driver_state(), so that arm() asks one
    // question of the driver instead of three.
    tick_type update_below_ = std::numeric_limits<tick_type>::max();
    std::size_t armed_ = 0;
    std::uint64_t wakeups_ = 0;
    bool shut_down_ = false;
    detail::thread_check thread_check_;
};

} // namespace timewheel

#include <timewheel/impl/wheel_service.hpp>

#endif // TIMEWHEEL_WHEEL_SERVICE_HPP
