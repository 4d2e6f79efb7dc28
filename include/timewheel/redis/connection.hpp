//
// timewheel/redis/connection.hpp
//
// A connection to one Redis server, on an Asio executor: pipelined requests, in-order
// replies, scripts by SHA1, timeouts, a health check, and reconnection with backoff.
//

#ifndef TIMEWHEEL_REDIS_CONNECTION_HPP
#define TIMEWHEEL_REDIS_CONNECTION_HPP

#include <timewheel/redis/config.hpp>
#include <timewheel/redis/detail/connection_impl.hpp>
#include <timewheel/redis/detail/exec_op.hpp>
#include <timewheel/redis/error.hpp>
#include <timewheel/redis/request.hpp>
#include <timewheel/redis/response.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/execution_context.hpp>

#include <cstddef>
#include <memory>
#include <type_traits>

namespace timewheel::redis {

/// A connection to a Redis server (RESP2), with pipelining.
/**
 * The connection opens itself at the first request (or at run()), sends AUTH, SELECT and
 * CLIENT SETNAME as the config says, and from then on writes every request issued while a
 * write is in flight together in the next write. Replies are matched to requests in order.
 * When the connection is lost, the requests written and not yet answered fail with
 * error::connection_lost; those not yet written stay queued and go out on the next
 * connection, which is opened after a capped exponential backoff with jitter.
 *
 * @code
 * boost::asio::io_context io;
 * redis::connection conn(io.get_executor(), redis::config{.port = 6379});
 * redis::request req;
 * req.push("SET", "greeting", "hello");
 * req.push("GET", "greeting");
 * redis::response resp;
 * conn.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t) {
 *     if (!ec) std::cout << resp[1].as_string() << '\n'; // hello
 * });
 * io.run();
 * @endcode
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe. Use the connection from one thread at a time, and from its
 * executor: an io_context run by one thread, or a strand. Handlers complete through their
 * associated executors.
 */
class connection {
public:
    /// The type of the executor associated with the object.
    using executor_type = boost::asio::any_io_executor;

    /// Constructs a connection that will use the executor `ex` for its I/O.
    /**
     * Nothing is opened until the first async_exec or run().
     * @throws std::invalid_argument when `cfg.host` is empty (and no unix socket or
     * Sentinel is given), sentinels are given without master_name or with an empty host or
     * a zero port, or a timeout or delay is negative.
     */
    connection(const executor_type& ex, config cfg = {})
        : impl_(std::make_shared<detail::connection_impl>(ex, std::move(cfg))) {}

    /// Constructs a connection on an execution context (an io_context).
    template <typename ExecutionContext>
    requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    explicit connection(ExecutionContext& context, config cfg = {})
        : connection(context.get_executor(), std::move(cfg)) {}

    /// Closes the connection (as close() does).
    ~connection() {
        if (impl_) {
            impl_->close();
        }
    }

    connection(const connection&) = delete;
    connection& operator=(const connection&) = delete;

    /// The executor of the connection's I/O.
    const executor_type& get_executor() const noexcept { return impl_->get_executor(); }

    /// The configuration as given.
    const config& get_config() const noexcept { return impl_->get_config(); }

    /// Opens the connection now instead of at the first request. Must be called on the
    /// connection's executor.
    void run() { impl_->run(); }

    /// Closes the socket and stops reconnecting. Every request outstanding completes with
    /// error::closed, and so does every request issued afterwards.
    void close() { impl_->close(); }

    /// True while a connection is established and its handshake done.
    bool is_connected() const noexcept { return impl_->is_connected(); }

    /// The last failure to connect or of an established connection (empty if none).
    boost::system::error_code last_error() const noexcept { return impl_->last_error(); }

    /// Counters of the connection's life (connects, writes, NOSCRIPT resends, function
    /// loads...).
    const connection_stats& stats() const noexcept { return impl_->stats(); }

    /// Sends a request and reads its replies into a response.
    /**
     * The request is queued and written with the other requests issued meanwhile; `resp`
     * is cleared and receives one reply per command, in order. A reply that is an error
     * reply does not fail the operation: see response::has_error() and reply::is_error().
     *
     * EVALSHA commands pushed with request::push_script that the server answers with
     * NOSCRIPT are resent as EVAL (which also loads the script), and their replies take the
     * place of the NOSCRIPT errors: the caller sees the script's result. Likewise, an FCALL
     * pushed with request::push_fcall finds its library: the connection writes FUNCTION LOAD
     * ahead of the first call of a library on each connection, and when the server answers
     * "Function not found" (the library was flushed, or the server restarted or changed),
     * loads it again and resends the call once.
     *
     * Must be called on the connection's executor. The request and the response must stay
     * alive and unchanged until the operation completes.
     *
     * @param req The commands to send (at least one).
     * @param resp The replies, one per command of `req`.
     * @param token The completion token, e.g. a callback, boost::asio::use_awaitable,
     * boost::asio::deferred, boost::asio::use_future.
     *
     * @par Completion Signature
     * @code void(boost::system::error_code ec, std::size_t replies) @endcode
     * `ec` is success when every reply arrived (replies == req.size()), or:
     * @li error::connection_lost: the request was written but the connection was lost
     *     before all its replies arrived (it may or may not have run on the server);
     * @li error::request_timeout: config::request_timeout passed first; if the request
     *     was written, the connection is closed under it (the other requests written fail
     *     with connection_lost) and re-opened, so that a server that skips a reply cannot
     *     shift the later replies onto the wrong requests;
     * @li error::closed: the connection was closed, or lost with config::reconnect off;
     * @li boost::asio::error::operation_aborted: the operation was cancelled.
     *
     * @par Per-Operation Cancellation
     * This asynchronous operation supports cancellation for the following
     * boost::asio::cancellation_type values:
     * @li @c cancellation_type::terminal
     * @li @c cancellation_type::partial
     * @li @c cancellation_type::total
     * A request cancelled before it is written is never sent (any type). A request already
     * written is answered by the server; its replies are read and discarded, and the
     * operation completes at once with operation_aborted for terminal and partial
     * cancellation (total cancellation then has no effect: the command has run or will).
     */
    template <typename ExecToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_exec(const request& req, response& resp,
                    ExecToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<ExecToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_exec(impl_.get()), token, &req, &resp);
    }

private:
    class initiate_async_exec {
    public:
        using executor_type = connection::executor_type;

        explicit initiate_async_exec(detail::connection_impl* impl) noexcept
            : impl_(impl) {}

        const executor_type& get_executor() const noexcept { return impl_->get_executor(); }

        template <typename Handler>
        void operator()(Handler&& handler, const request* req, response* resp) const {
            using handler_type = std::decay_t<Handler>;
            using op = detail::exec_op<handler_type, executor_type>;
            typename op::ptr p = {std::addressof(handler), op::ptr::allocate(handler), 0};
            p.p = new (p.v) op(handler, impl_->get_executor());
            p.p->req_ = req;
            p.p->resp_ = resp;
            auto slot = boost::asio::get_associated_cancellation_slot(p.p->handler());
            if (slot.is_connected()) {
                slot.template emplace<detail::exec_cancellation>(p.p);
            }
            op* o = p.p;
            p.v = p.p = nullptr;
            impl_->start(*o);
        }

    private:
        detail::connection_impl* impl_;
    };

    std::shared_ptr<detail::connection_impl> impl_;
};

} // namespace timewheel::redis

#endif // TIMEWHEEL_REDIS_CONNECTION_HPP
