//
// server/callback/src/call.hpp
//
// What the parts of the callback client share, private to server/callback/src/: a
// connection and the pool of one origin, a call in flight (call_op: what close(), the
// deadline or the cancellation slot abort), its outcome, and the client's shared state. The
// client is split along its seams: client.cpp runs a call (a slot in the origin's pool, one
// exchange, the answer read), connect.cpp opens a connection (resolve, the SSRF check on
// the addresses, connect, TLS), request.cpp writes a request's bytes.
//
#ifndef TIMEWHEELD_CALLBACK_SRC_CALL_HPP
#define TIMEWHEELD_CALLBACK_SRC_CALL_HPP

// GCC 12 at -O1 sees Asio's coroutine frames, allocated with aligned_alloc and released with
// the frame's own operator delete (which calls free), as a mismatch: a false positive.
// Here, for the client's files that include this header (a diagnostic pragma holds to the
// end of the file that includes it).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
#endif

#include <timewheeld/callback/client.hpp>
#include <timewheeld/callback/url.hpp>

#include <timewheel/callback_timer.hpp>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace timewheeld::callback {

namespace detail {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace ssl = net::ssl;
using tcp = net::ip::tcp;
using steady = std::chrono::steady_clock;
using boost::system::error_code;

// What a receiver's answer may cost: its header at most header_limit bytes, and the read
// buffer at most read_buffer_limit, whatever it sends (Beast's parser bounds neither a
// chunk extension nor trailers by itself: the buffer's own limit does, with
// http::error::buffer_overflow). The body is bounded by max_response_body, and the time by
// the call's deadline.
inline constexpr std::size_t header_limit = 16 * 1024;
inline constexpr std::size_t read_buffer_limit = 64 * 1024;
// A plain connection is made through a beast::tcp_stream (for its connect timeout), then
// used as the bare socket: every read and write through tcp_stream copies its executor and
// shared state and checks its timers, a cost at each call that a kept-alive connection does
// not need (the call's own deadline closes the socket).
struct connection {
    std::optional<beast::tcp_stream> plain;     // while connecting
    std::optional<net::ip::tcp::socket> socket; // plain, once connected
    std::optional<beast::ssl_stream<beast::tcp_stream>> tls;
    beast::flat_buffer buffer{read_buffer_limit};
    steady::time_point idle_since;

    beast::tcp_stream& tcp() { return tls ? beast::get_lowest_layer(*tls) : *plain; }
    void close() {
        if (socket) {
            error_code ignored;
            socket->close(ignored);
        } else {
            tcp().close();
        }
    }
};

struct host_pool;

// A call's place in the queue for a concurrency slot; it leaves the queue however its
// coroutine ends (even destroyed unfinished with its io_context).
struct waiter {
    waiter(net::steady_timer& t, host_pool& p);
    waiter(const waiter&) = delete;
    waiter& operator=(const waiter&) = delete;
    ~waiter();

    net::steady_timer* timer;
    host_pool* pool;
    bool granted = false;
};

struct host_pool {
    std::size_t active = 0;
    std::deque<waiter*> waiters;
    std::vector<std::unique_ptr<connection>> idle;
    steady::time_point next_slot{};
    steady::time_point backoff_until{};
};

inline waiter::waiter(net::steady_timer& t, host_pool& p)
    : timer(&t)
    , pool(&p) {
    p.waiters.push_back(this);
}

inline waiter::~waiter() {
    if (!granted)
        std::erase(pool->waiters, this);
}

struct call_op {
    // The deadline's callback on the wheel: the call_op owns its timer, so it is alive.
    struct expire {
        call_op* op;
        void operator()() const { op->expired(); }
    };

    // The call's deadline: on the io_context's timing wheel (client_options::
    // deadline_on_wheel), or a steady_timer.
    std::optional<timewheel::callback_timer<expire>> wheel_deadline;
    std::optional<net::steady_timer> deadline;
    steady::time_point expiry;
    std::chrono::milliseconds timeout{0};
    std::optional<error> stop; // timeout or client_closed
    bool cancelled = false;
    const char* phase = "starting";
    callback::reach reach = callback::reach::held;
    tcp::resolver* resolver = nullptr;
    connection* conn = nullptr;
    net::steady_timer* wait = nullptr;

    // The client's list of calls in flight (close() ends them): intrusive, so that a call
    // costs no node allocation to enter it.
    call_op* prev = nullptr;
    call_op* next = nullptr;

    bool stopped() const { return stop || cancelled; }
    void expired() {
        if (!stop) {
            stop = error::timeout;
            abort();
        }
    }
    void cancel_deadline() {
        if (wheel_deadline)
            wheel_deadline->cancel();
        if (deadline)
            deadline->cancel();
    }
    void abort() {
        if (resolver)
            resolver->cancel();
        if (conn)
            conn->close();
        if (wait)
            wait->cancel();
    }
};

struct outcome {
    error_code ec;
    call_result result;
};

/// A failed call's outcome when its deadline, its cancellation or close() stopped it.
outcome stopped_outcome(const call_op& op);
outcome make_outcome(error_code ec, verdict v, std::string text);

} // namespace detail

struct client::state {
    state(detail::net::any_io_executor e, client_options o)
        : ex(std::move(e))
        , opt(std::move(o))
        , tls(detail::ssl::context::tls_client) {}

    detail::net::any_io_executor ex;
    client_options opt;
    detail::ssl::context tls;
    std::unordered_map<std::string, detail::host_pool> pools;
    detail::call_op* ops = nullptr; // the calls in flight, linked through call_op::prev/next
    client_stats stats;
    bool closed = false;
    detail::steady::time_point last_sweep = detail::steady::now();

    // Drops idle connections past their time and pools with nothing in them, so that a
    // service that called many hosts once does not keep them all.
    void sweep(detail::steady::time_point now) {
        if (now - last_sweep < opt.idle_timeout)
            return;
        last_sweep = now;
        for (auto it = pools.begin(); it != pools.end();) {
            auto& p = it->second;
            std::erase_if(p.idle, [&](auto& c) {
                bool stale = now - c->idle_since > opt.idle_timeout;
                if (stale)
                    c->close();
                return stale;
            });
            if (p.active == 0 && p.waiters.empty() && p.idle.empty() && p.backoff_until <= now &&
                p.next_slot <= now)
                it = pools.erase(it);
            else
                ++it;
        }
    }
};

namespace detail {

using state_ptr = std::shared_ptr<client::state>;

/// A connection to `u`, made for `op` (connect.cpp); nothing, with `failure` set, when it
/// cannot be made or the call was stopped meanwhile.
net::awaitable<std::unique_ptr<connection>> open_connection(state_ptr st, call_op& op, const url& u,
                                                            outcome& failure);

/// A header of `spec` that would not go out as one header line: its name (request.cpp).
std::optional<std::string> bad_header(const callback_spec& spec);

/// The request's bytes (request.cpp).
std::string build_request(const client_options& opt, const url& u, const call_request& req);

} // namespace detail

} // namespace timewheeld::callback

#endif // TIMEWHEELD_CALLBACK_SRC_CALL_HPP
