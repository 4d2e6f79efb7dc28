//
// timewheeld/api/server.hpp
//
// The HTTP/JSON API of timewheeld on Boost.Beast: one io_context per thread, each with its
// own store (a Redis connection, or a view of the one SQLite database) completing on it; one
// acceptor, whose connections are dealt to the threads in turn.
//
//   POST   /v1/tasks                 submit (201 created, 200 exists or replaced, 409 not
//                                    replaced: on_conflict keep|replace|debounce), the task
//   POST   /v1/tasks:batch           up to 1000 submits at once, an answer per item
//   GET    /v1/tasks?state=&...      the tasks of one state, a page at a time (filters: due or
//                                    end time, id prefix, callback host)
//   GET    /v1/tasks/{id}            state, attempts, times, last error, execution log
//   PATCH  /v1/tasks/{id}            reschedule: {"due_at"} or {"delay_ms"}
//   DELETE /v1/tasks/{id}            cancel: 200, 404, 409 (too late)
//   POST   /v1/tasks/{id}/result     the result of a callback that answered 202
//   GET    /v1/dead?cursor=&limit=   dead letters, a page at a time
//   POST   /v1/dead/{id}/retry       a dead letter delayed again
//   DELETE /v1/dead/{id}             a dead letter forgotten
//   POST   /v1/schedules             create a recurring schedule (201, 200 same spec, 409)
//   GET    /v1/schedules?cursor=&limit=            schedules, a page at a time
//   GET/PATCH/DELETE /v1/schedules/{id}           read, change, delete one
//   POST   /v1/schedules/{id}/pause|resume|trigger
//   GET    /v1/schedules/{id}/next?count=&after=  its next occurrences, UTC and local
//   POST   /v1/schedules:preview     the next occurrences of an unsaved rule
//   GET    /v1/stats                 counts by state, this node's callback figures
//   GET    /healthz  /readyz  /metrics
//
// Every error is JSON, {"error": {"code", "field", "message"}}; a 400 names the field and
// nothing is stored. Limits: the body (413), the request target (414), the header fields
// (431). With a token, /v1/* and /metrics need "Authorization: Bearer <token>", compared in
// constant time (401 otherwise); /healthz and /readyz stay open to probes. Tokens of a
// --tokens-file have a scope: read (GET), write or admin (403 insufficient_scope beyond it).
//
// Shutdown (stop(), or SIGTERM/SIGINT in the binary): the acceptor closes, connections
// waiting for a request close, requests being read or answered finish (their answer says
// "Connection: close"), then the stores close and run() returns; whatever still runs after
// settings::shutdown_timeout is abandoned.
//
#ifndef TIMEWHEELD_API_SERVER_HPP
#define TIMEWHEELD_API_SERVER_HPP

#include <timewheeld/service/log.hpp>
#include <timewheeld/service/metrics.hpp>
#include <timewheeld/service/node_stats.hpp>
#include <timewheeld/service/result_sink.hpp>
#include <timewheeld/service/settings.hpp>

#include <timewheel/dq/store.hpp>

#include <boost/asio/io_context.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>

namespace timewheeld::api {

namespace detail {
class server_impl;
}

/// One of the server's threads, as the code that runs next to the API sees it.
struct shard_view {
    boost::asio::io_context& io; ///< run by this thread alone
    timewheel::dq::store& store; ///< this thread's store, open until the shard finishes
    std::size_t index;           ///< 0 to settings::threads - 1
};

/// What runs next to the API on each thread (timewheeld's callback workers).
/**
 * `start` is called on each thread once run() begins. `stop` is called on each thread when
 * the shutdown begins; that thread's store is closed, and run() returns, only after `stop`
 * has called its `done` (from any thread), or when settings::shutdown_timeout runs out.
 */
struct shard_hooks {
    std::function<void(const shard_view&)> start;
    std::function<void(const shard_view&, std::function<void()> done)> stop;
};

/// The API server.
/**
 * @par Thread Safety
 * stop() and port() may be called from any thread; the rest from the thread that made it.
 */
class server {
public:
    /// Opens the stores (one per thread, see store_source) and binds the listening socket.
    /** @throws std::invalid_argument for a bad store URL; boost::system::system_error when
     *  the address cannot be bound. */
    server(const service::settings& s, service::metrics_registry& metrics, service::logger& log);
    ~server();

    server(const server&) = delete;
    server& operator=(const server&) = delete;

    /// The bound port (the real one with settings::port 0).
    std::uint16_t port() const noexcept;

    /// Where POST /v1/tasks/{id}/result delivers (none by default: 404). Set before run().
    void set_result_sink(service::result_sink* sink) noexcept;

    /// This node's callback figures, which GET /v1/stats shows (the worker side records
    /// them; none set: all zero). Must outlive the server. Set before run().
    void set_node_stats(const service::node_stats* stats) noexcept;

    /// What runs next to the API on each thread (see shard_hooks). Set before run().
    void set_shard_hooks(shard_hooks hooks);

    /// Serves until stop() (or SIGTERM/SIGINT, when `handle_signals`), on the calling thread
    /// and settings::threads - 1 more. Returns once every connection has finished.
    void run(bool handle_signals = true);

    /// Starts the graceful shutdown.
    void stop();

private:
    std::unique_ptr<detail::server_impl> impl_;
};

} // namespace timewheeld::api

#endif // TIMEWHEELD_API_SERVER_HPP
