//
// timewheel/idle_reaper.hpp
//
// An idle deadline for a connection: closed after a period without traffic, for a cost per
// read close to zero.
//
// A server with many thousands of connections wants each one closed once it has been
// silent for some period. The usual way is a steady_timer per connection, re-armed on every
// read: each re-arm cancels the pending wait (a heap removal and an aborted handler to run),
// allocates a new wait operation and pushes it on the heap, O(log n) with a lock and a few
// cache misses each time. An idle_reaper is embedded in the connection object instead: a
// wheel entry on the io_context's wheel_service, armed once with start(), and the time of
// the last activity, which touch() records on every read or write. touch() is one clock
// read, a store into the connection object and a lazy move of the reaper's own wheel entry
// (a compare and a store into the entry, which is also in the connection object): it takes
// no lock, allocates nothing and runs no handler. The laziness is paid for once per period:
// when the entry's old slot comes due, the wheel re-files a touched entry for its new
// deadline on its way through the slot (O(1), no handler), and runs the action of one that
// was not touched, on the io_context's thread, from inside the wheel's expiry loop. By default the
// action closes the stream, which completes the connection's pending reads and writes with
// boost::asio::error::operation_aborted, so the connection winds down by its usual error
// path.
//
// Trade-offs:
// - Precision is traded for cost. The reaper accepts some lateness (its slack, an eighth of
//   the timeout unless told otherwise), so that its entry is filed at the coarsest wheel
//   level that honours it and fires in place. A connection is never reaped before its
//   timeout has passed since the last touch(), and at most slack + one tick (plus the time
//   the io_context takes to get to it) after that.
// - touch() reads std::chrono::steady_clock, exactly: that read is most of its cost (20-50
//   ns). A coarse clock (CLOCK_MONOTONIC_COARSE, ~8 ns) was tried and rejected: it lagged
//   the exact clock by up to 11 ms against a resolution of 4 ms, which would reap early.
//   Callers that already hold a reading may pass it to touch(time_point).
// - The action runs inside the wheel's expiry loop, not through the io_context's queue: it
//   must be short and must not block. Closing a socket is both.
// - A wheel belongs to one thread: the reaper must be used from the thread that runs its
//   io_context (the io_context-per-thread pattern, or an io_context run by one thread).
// - The reaper links itself into the wheel, so it can be neither copied nor moved. Embed it
//   in an object that does not move (a connection held by shared_ptr, a coroutine frame).
//

#ifndef TIMEWHEEL_IDLE_REAPER_HPP
#define TIMEWHEEL_IDLE_REAPER_HPP

#include <timewheel/detail/service_entry.hpp>
#include <timewheel/wheel_service.hpp>

#include <boost/asio/execution.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <memory>
#include <type_traits>
#include <utility>

namespace timewheel {

/// Whether close_lowest_layer() can close a @c Stream: it has <tt>close(error_code&)</tt> or
/// <tt>close()</tt>, or a <tt>next_layer()</tt> that close_lowest_layer() can close.
template <typename Stream>
constexpr bool is_closable_stream() noexcept;

/// Closes @c stream, or the layer under it that can be closed, ignoring errors.
/**
 * Tries, in order: <tt>stream.close(ec)</tt> (boost::asio::basic_socket and its kin; the
 * error is ignored), <tt>stream.close()</tt> (boost::beast::basic_stream, whose close()
 * cancels its own timer too), then close_lowest_layer(stream.next_layer()) (SSL streams,
 * Beast's websocket and ssl_stream, other layered streams). Closing an SSL stream this way
 * is abrupt: no close_notify is sent, which is what an idle timeout wants.
 *
 * Pending asynchronous operations on the stream complete with
 * boost::asio::error::operation_aborted, as if by boost::asio::post: never from inside
 * this function.
 *
 * @throws Whatever a <tt>close()</tt> without an error code throws.
 */
template <typename Stream>
void close_lowest_layer(Stream& stream);

/// The default action of an idle_reaper: closes a stream with close_lowest_layer().
/**
 * Holds a pointer to the stream and a pointer to the function that closes it (16 bytes),
 * so that idle_reaper<> names one type whatever the stream. The stream must outlive the
 * action; an idle_reaper embedded in the same object as its stream does.
 */
class close_stream {
public:
    /// An action that closes @c stream.
    template <typename Stream, std::enable_if_t<is_closable_stream<Stream>()>* = nullptr>
    explicit close_stream(Stream& stream) noexcept
        : stream_(std::addressof(stream))
        , close_(&close_stream::close_as<Stream>) {}

    /// Closes the stream. Closing it again is harmless.
    void operator()() const { close_(stream_); }

private:
    template <typename Stream>
    static void close_as(void* stream) {
        close_lowest_layer(*static_cast<Stream*>(stream));
    }

    void* stream_;
    void (*close_)(void*);
};

/// An idle deadline embedded in a connection object: refreshed on every read or write, and
/// an action (by default, closing the connection's stream) once it passes.
/**
 * @tparam Action A callable <tt>void()</tt>, invoked once per expiry. By default,
 * close_stream.
 *
 * The reaper is created unarmed; start() arms it for timeout() from now. Each touch() moves
 * the deadline to timeout() from now. If the deadline passes, the reaper disarms, sets
 * reaped(), and invokes the action on the thread that runs the io_context, from inside the
 * wheel's expiry loop (never from inside start(), touch() or any other member function).
 * The action may call start() (to give the connection another period, for example after a
 * last warning), touch(), cancel(), or destroy the object that holds the reaper as its last
 * act. If it throws, the exception propagates out of the io_context's run(); the other
 * reapers due in that tick stay due and fire on the next run().
 *
 * @par Cost
 * start(), touch() and cancel() are O(1) and never allocate, post or run a handler.
 * touch() is a clock read and a lazy move of the reaper's wheel entry: a compare and a
 * store into the reaper, nothing else in the wheel. When the entry's old slot comes due
 * after activity, the wheel re-files it for the rest of the period without calling the
 * reaper: at most one O(1) re-file per period per connection, however many touches. Expiry
 * allocates nothing. Size: 96 bytes on LP64 with the default action, all of it inside the
 * connection object.
 *
 * @par Precision
 * The action never runs before timeout() has passed since the last touch() (or start()),
 * measured with std::chrono::steady_clock. It runs at most slack() plus one tick of the
 * wheel (1 ms by default; see wheel_service_options) later, plus the time the io_context
 * takes to get to it.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe from the thread that runs their io_context (all the reapers
 * and timers of an io_context share its wheel).@n
 * @e Shared @e objects: Unsafe. A stream bound to a strand of an io_context run by several
 * threads does not qualify: use one io_context per thread.
 *
 * @par Lifetime
 * Destroying an armed reaper disarms it. Destroy it before its io_context, as any I/O
 * object. When the io_context shuts down, armed reapers are disarmed without running their
 * actions.
 *
 * @par Example: a plain tcp::socket
 * @code
 * class session : public std::enable_shared_from_this<session> {
 * public:
 *     explicit session(tcp::socket socket)
 *         : socket_(std::move(socket)), idle_(socket_, std::chrono::seconds(30)) {}
 *
 *     void start() { idle_.start(); read(); }
 *
 * private:
 *     void read() {
 *         socket_.async_read_some(boost::asio::buffer(data_),
 *             [self = shared_from_this()](boost::system::error_code ec, std::size_t n) {
 *                 if (ec) {
 *                     // operation_aborted after idle_.reaped(); eof when the peer left.
 *                     self->idle_.cancel();
 *                     return;
 *                 }
 *                 self->idle_.touch(); // O(1): a clock read and a lazy move
 *                 self->write(n);
 *             });
 *     }
 *     void write(std::size_t n); // async_write, then idle_.touch() and read()
 *
 *     tcp::socket socket_;
 *     timewheel::idle_reaper<> idle_; // declared after socket_: closes it after 30 s idle
 *     std::array<char, 4096> data_;
 * };
 * @endcode
 *
 * @par Example: a coroutine
 * @code
 * boost::asio::awaitable<void> session(tcp::socket socket) {
 *     using boost::asio::as_tuple, boost::asio::use_awaitable;
 *     timewheel::idle_reaper<> idle(socket, std::chrono::seconds(30));
 *     idle.start();
 *     std::array<char, 4096> data;
 *     for (;;) {
 *         auto [ec, n] = co_await socket.async_read_some(boost::asio::buffer(data),
 *                                                        as_tuple(use_awaitable));
 *         if (ec) {
 *             co_return; // reaped: operation_aborted; peer gone: eof. ~idle_reaper cancels.
 *         }
 *         idle.touch();
 *         std::tie(ec, n) = co_await boost::asio::async_write(
 *             socket, boost::asio::buffer(data, n), as_tuple(use_awaitable));
 *         if (ec) {
 *             co_return;
 *         }
 *         idle.touch(); // a slow reader is not idle while it drains our writes
 *     }
 * }
 * @endcode
 *
 * @par Example: Beast tcp_stream, SSL streams
 * A boost::beast::tcp_stream (or any basic_stream) is closed with its own close(). Use the
 * reaper for the idle period between requests instead of tcp_stream::expires_after(),
 * which re-arms a steady_timer per operation; keep Beast's timeouts for the ones that
 * need an exact deadline, if any. An SSL stream over a socket or a tcp_stream is closed
 * through next_layer(), abruptly:
 * @code
 * boost::beast::tcp_stream stream(std::move(socket));
 * timewheel::idle_reaper<> idle(stream, std::chrono::seconds(60));
 * // http::async_read(stream, buffer, request, ...); on each request: idle.touch();
 *
 * boost::asio::ssl::stream<boost::beast::tcp_stream> tls(std::move(socket), ssl_context);
 * timewheel::idle_reaper<> tls_idle(tls, std::chrono::seconds(60)); // closes the socket
 * @endcode
 *
 * @par Example: another action
 * @code
 * timewheel::idle_reaper idle(io, std::chrono::minutes(5),
 *                             [this] { send_goodbye_then_close(); });
 * @endcode
 */
template <typename Action = close_stream>
class idle_reaper : private detail::service_entry {
public:
    /// The clock the timeout is measured with.
    using clock_type = wheel_service::clock_type;

    /// The duration type of the clock.
    using duration = clock_type::duration;

    /// The time point type of the clock.
    using time_point = clock_type::time_point;

    /// The type of the action.
    using action_type = Action;

    /// An unarmed reaper that closes @c stream after @c timeout without a touch(), on the
    /// wheel of the stream's io_context. Its slack is default_slack(timeout).
    /**
     * Available when @c Action is close_stream (idle_reaper<>).
     *
     * @param stream A stream that close_lowest_layer() can close and whose
     * <tt>get_executor()</tt> belongs to an io_context. It must outlive the reaper's
     * action; declare it before the reaper in the connection object.
     * @param timeout The idle period.
     * @throws std::invalid_argument if @c timeout is not positive.
     */
    template <typename Stream, typename A = Action,
              std::enable_if_t<std::is_same_v<A, close_stream> && is_closable_stream<Stream>()>* =
                  nullptr>
    idle_reaper(Stream& stream, duration timeout)
        : idle_reaper(stream, timeout, default_slack(timeout)) {}

    /// An unarmed reaper that closes @c stream after @c timeout without a touch(), at most
    /// @c slack late.
    /**
     * @throws std::invalid_argument if @c timeout is not positive or @c slack is negative.
     */
    template <typename Stream, typename A = Action,
              std::enable_if_t<std::is_same_v<A, close_stream> && is_closable_stream<Stream>()>* =
                  nullptr>
    idle_reaper(Stream& stream, duration timeout, duration slack)
        : idle_reaper(service_of(stream.get_executor()), timeout, slack, close_stream(stream)) {}

    /// An unarmed reaper that invokes @c action after @c timeout without a touch(), on the
    /// wheel of @c context (an io_context). Its slack is default_slack(timeout).
    /**
     * @throws std::invalid_argument if @c timeout is not positive.
     */
    template <typename ExecutionContext,
              std::enable_if_t<std::is_convertible_v<ExecutionContext&,
                                                     boost::asio::execution_context&>>* = nullptr>
    idle_reaper(ExecutionContext& context, duration timeout, Action action)
        : idle_reaper(context, timeout, std::move(action), default_slack(timeout)) {}

    /// An unarmed reaper that invokes @c action after @c timeout without a touch(), at most
    /// @c slack late, on the wheel of @c context (an io_context).
    /**
     * @throws std::invalid_argument if @c timeout is not positive or @c slack is negative.
     */
    template <typename ExecutionContext,
              std::enable_if_t<std::is_convertible_v<ExecutionContext&,
                                                     boost::asio::execution_context&>>* = nullptr>
    idle_reaper(ExecutionContext& context, duration timeout, Action action, duration slack)
        : idle_reaper(boost::asio::use_service<wheel_service>(context), timeout, slack,
                      std::move(action)) {}

    /// An unarmed reaper that invokes @c action after @c timeout without a touch(), on the
    /// wheel of @c ex's io_context. Its slack is default_slack(timeout).
    /**
     * @throws std::invalid_argument if @c timeout is not positive.
     */
    template <typename Executor,
              std::enable_if_t<boost::asio::execution::is_executor<Executor>::value>* = nullptr>
    idle_reaper(const Executor& ex, duration timeout, Action action)
        : idle_reaper(service_of(ex), timeout, default_slack(timeout), std::move(action)) {}

    /// An unarmed reaper that invokes @c action after @c timeout without a touch(), at most
    /// @c slack late, on the wheel of @c ex's io_context.
    /**
     * @throws std::invalid_argument if @c timeout is not positive or @c slack is negative.
     */
    template <typename Executor,
              std::enable_if_t<boost::asio::execution::is_executor<Executor>::value>* = nullptr>
    idle_reaper(const Executor& ex, duration timeout, Action action, duration slack)
        : idle_reaper(service_of(ex), timeout, slack, std::move(action)) {}

    /// Disarms the reaper. The action is not invoked.
    ~idle_reaper();

    idle_reaper(const idle_reaper&) = delete;
    idle_reaper& operator=(const idle_reaper&) = delete;

    /// The slack used when none is given: an eighth of @c timeout. A connection idle for
    /// 30 s is closed within 30-33.75 s; its entry fires in place, without cascading.
    static constexpr duration default_slack(duration timeout) noexcept {
        return timeout > duration::zero() ? timeout / 8 : duration::zero();
    }

    /// Arms the reaper for timeout() from now, with slack(), and clears reaped(). Re-arms an
    /// armed reaper. O(1), no allocation.
    void start();

    /// Moves the deadline to timeout() from now: call it on each read or write.
    /**
     * One clock read, and a lazy move of the reaper's wheel entry (a compare and a store
     * into the reaper); no allocation, no handler.
     *
     * @returns false if the reaper is not armed (not started, cancelled, or already reaped),
     * in which case the touch has no effect until the next start(). Ignoring the result
     * saves a load.
     */
    bool touch() noexcept {
        last_touch_ = clock_type::now();
        return push_back();
    }

    /// Moves the deadline to timeout() after @c now, a reading of clock_type::now() that the
    /// caller already holds. See touch(). A time earlier than that of the previous touch
    /// moves the deadline earlier, but never before the time the entry is armed for.
    bool touch(time_point now) noexcept {
        last_touch_ = now;
        return push_back();
    }

    /// Disarms the reaper without invoking the action. O(1).
    /**
     * @returns false if it was not armed. Cancelling twice is safe.
     */
    bool cancel() noexcept { return service_->cancel(*this); }

    /// Whether the reaper is armed: started, and neither cancelled nor reaped since.
    bool armed() const noexcept { return wheel_entry::armed(); }

    /// Whether the deadline passed since the last start(): the action has been invoked (or
    /// is being invoked).
    bool reaped() const noexcept { return reaped_; }

    /// The idle period.
    duration timeout() const noexcept { return timeout_; }

    /// The lateness accepted.
    duration slack() const noexcept { return slack_; }

    /// Changes the idle period, and the slack to default_slack(timeout). If the reaper is
    /// armed, the new period counts from now, as if touch() had been called. O(1).
    /**
     * @throws std::invalid_argument if @c timeout is not positive; the reaper is unchanged.
     */
    void set_timeout(duration timeout) { set_timeout(timeout, default_slack(timeout)); }

    /// Changes the idle period and the slack. If the reaper is armed, the new period counts
    /// from now, as if touch() had been called. O(1).
    /**
     * A server may give a connection a short timeout until its first request and a longer
     * one between requests, for example.
     *
     * @throws std::invalid_argument if @c timeout is not positive or @c slack is negative;
     * the reaper is unchanged.
     */
    void set_timeout(duration timeout, duration slack);

    /// The current deadline: timeout() after the last touch() (or start()); meaningful while
    /// armed().
    time_point expiry() const noexcept { return due(); }

    /// The service whose wheel the reaper is armed in.
    wheel_service& service() const noexcept { return *service_; }

    /// The action.
    Action& action() noexcept { return action_; }

    /// The action.
    const Action& action() const noexcept { return action_; }

private:
    idle_reaper(wheel_service& service, duration timeout, duration slack, Action&& action);

    template <typename Executor>
    static wheel_service& service_of(const Executor& ex) {
        return boost::asio::use_service<wheel_service>(
            boost::asio::query(ex, boost::asio::execution::context));
    }

    static void on_event(wheel_service& service, detail::service_entry& entry,
                         detail::entry_event event);

    bool push_back() noexcept;

    time_point due() const noexcept;

    wheel_service* service_;
    duration timeout_;
    duration slack_;
    time_point last_touch_{};
    Action action_;
    bool reaped_ = false;
};

namespace detail {

template <typename T>
using if_context_t =
    std::enable_if_t<std::is_convertible_v<T&, boost::asio::execution_context&>, int>;

template <typename T>
using if_executor_t = std::enable_if_t<boost::asio::execution::is_executor<T>::value, int>;

template <typename T>
using if_closable_t = std::enable_if_t<is_closable_stream<T>(), int>;

} // namespace detail

/// Deduces the action's type: <tt>idle_reaper reaper(io, timeout, [&] { ... })</tt>.
template <typename ExecutionContext, typename Action, detail::if_context_t<ExecutionContext> = 0>
idle_reaper(ExecutionContext&, std::chrono::steady_clock::duration, Action) -> idle_reaper<Action>;

/// Deduces the action's type, with a slack.
template <typename ExecutionContext, typename Action, detail::if_context_t<ExecutionContext> = 0>
idle_reaper(ExecutionContext&, std::chrono::steady_clock::duration, Action,
            std::chrono::steady_clock::duration) -> idle_reaper<Action>;

/// Deduces the action's type from an executor.
template <typename Executor, typename Action, detail::if_executor_t<Executor> = 0>
idle_reaper(const Executor&, std::chrono::steady_clock::duration, Action) -> idle_reaper<Action>;

/// Deduces the action's type from an executor, with a slack.
template <typename Executor, typename Action, detail::if_executor_t<Executor> = 0>
idle_reaper(const Executor&, std::chrono::steady_clock::duration, Action,
            std::chrono::steady_clock::duration) -> idle_reaper<Action>;

/// A reaper of a stream closes it: <tt>idle_reaper reaper(socket, timeout)</tt>.
template <typename Stream, detail::if_closable_t<Stream> = 0>
idle_reaper(Stream&, std::chrono::steady_clock::duration) -> idle_reaper<close_stream>;

/// A reaper of a stream closes it, with a slack.
template <typename Stream, detail::if_closable_t<Stream> = 0>
idle_reaper(Stream&, std::chrono::steady_clock::duration, std::chrono::steady_clock::duration)
    -> idle_reaper<close_stream>;

} // namespace timewheel

#include <timewheel/impl/idle_reaper.hpp>

#endif // TIMEWHEEL_IDLE_REAPER_HPP
