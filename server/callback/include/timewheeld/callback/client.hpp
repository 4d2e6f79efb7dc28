//
// timewheeld/callback/client.hpp
//
// The HTTP client that makes a task's callback when it comes due. One client serves every
// callback of an io_context (or strand): it keeps a pool of keep-alive connections per origin
// (scheme, host and port), caps the calls in flight to each origin, can spread calls to an
// origin over time (a rate limit) and backs off an origin that answered 429. Every call
// has a deadline; every address is checked against the SSRF policy after resolution and
// before a connection is made; redirects are never followed.
//
//     timewheeld::callback::client c(io.get_executor(), options);
//     c.async_call({spec, "task-42", 1}, [](error_code ec, call_result r) {
//         // r.verdict: success, accepted (202: the result comes later), retry or fail
//     });
//
// The verdict, from the answer or its absence:
//
//   2xx except 202 -> success          202 -> accepted
//   408, 429, 5xx  -> retry            3xx -> fail (error::redirect_refused)
//   other 4xx, 101 -> fail             no answer (refused, reset, timeout, DNS) -> retry
//   a broken answer (a header past 16 KiB, a chunk extension or trailers past the 64 KiB
//     read buffer, a malformed chunk, more than 8 interim 1xx answers) -> retry
//   (interim 1xx answers, 100 Continue included, are skipped; a body past
//   max_response_body is not read, and the verdict follows the status)
//   a URL, host or address the policy refuses, an untrusted certificate -> fail
//   a header name that is not a token or a value with a control character -> fail
//     (error::bad_header; parse_callback refuses them already)
//
// Retry-After (seconds or an HTTP-date) is parsed into call_result::retry_after whenever
// the answer carries one.
//

#ifndef TIMEWHEELD_CALLBACK_CLIENT_HPP
#define TIMEWHEELD_CALLBACK_CLIENT_HPP

#include <timewheeld/callback/address_policy.hpp>
#include <timewheeld/callback/error.hpp>
#include <timewheeld/callback/payload.hpp>

#include <boost/asio/any_completion_handler.hpp>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace timewheeld::callback {

struct client_options {
    /// Time to establish the TCP connection (per call; a reused connection skips it).
    std::chrono::milliseconds connect_timeout{std::chrono::seconds(3)};
    /// The whole call: waiting for a slot, resolving, connecting, TLS, sending and reading
    /// the answer. A callback_spec's own timeout replaces it. Keep it below the lease.
    std::chrono::milliseconds total_timeout{std::chrono::seconds(10)};
    /// Calls in flight to one origin; more wait in order of arrival (within their deadline).
    std::size_t max_connections_per_host = 8;
    /// An idle keep-alive connection older than this is closed rather than reused.
    std::chrono::milliseconds idle_timeout{std::chrono::seconds(30)};
    /// Calls a second to one origin, 0 for no limit. A call whose turn would come after
    /// its deadline ends at once with verdict retry and error::rate_limited.
    double rate_limit_per_host = 0;
    /// After a 429, calls to that origin end at once (verdict retry,
    /// error::host_backing_off, nothing sent) until its Retry-After, or this long when it
    /// gave none. Zero turns the back-off off.
    std::chrono::milliseconds backoff_after_429{std::chrono::seconds(1)};
    /// SSRF: which addresses and hosts may be called. Refuses loopback, private and
    /// link-local addresses by default.
    address_policy policy;
    /// With secrets, every call carries Timewheel-Signature (see signature.hpp): one v2
    /// entry per secret (give the new one and the old one while a secret is rotated).
    std::vector<std::string> signing_secrets;
    /// Secrets of one destination host (lower-case, as url::host; exact): a call to such a
    /// host is signed with these instead of signing_secrets.
    std::map<std::string, std::vector<std::string>, std::less<>> host_signing_secrets;
    /// Also send the v1 entries (the body alone signed; see signature.hpp), for receivers
    /// that have not moved to v2 yet. Off by default.
    bool signature_v1 = false;
    /// https: verify the peer's certificate and name (default on). With a CA file, trust
    /// its certificates (PEM) instead of the system's.
    bool verify_certificates = true;
    std::string ca_file;
    std::size_t max_url_length = 2048;
    /// Bytes of the answer's body read; a longer body closes the connection (the verdict
    /// still follows the status).
    std::size_t max_response_body = 64 * 1024;
    std::string user_agent = "timewheeld";
    /// Keep each call's deadline on the io_context's timing wheel (timewheel::callback_timer:
    /// nothing allocated, posted or handed to the kernel per call) rather than a
    /// steady_timer of its own. Only for an io_context that one thread runs (the wheel has no
    /// lock), as each of timewheeld's threads does; a deadline is then rounded up to the
    /// wheel's tick (1 ms), never early.
    bool deadline_on_wheel = false;
};

/// What to call: the task's callback, its id (sent as Idempotency-Key) and the attempt
/// number (sent as Timewheel-Attempt, from 1).
struct call_request {
    callback_spec spec;
    std::string task_id;
    std::uint32_t attempt = 1;
};

enum class verdict {
    success,  ///< 2xx (not 202)
    accepted, ///< 202: the receiver reports the result later (POST /v1/tasks/{id}/result)
    retry,    ///< try again later, after retry_after when there is one
    fail,     ///< permanent: retrying cannot help
};

const char* to_string(verdict v) noexcept;

/// How far a call went towards its receiver.
enum class reach : std::uint8_t {
    /// Ended in the client's own flow control (a 429 back-off, the rate limit, the wait for
    /// a connection slot, the client closed or the call cancelled before it went on): no
    /// name was resolved, no connection made, nothing left this host.
    held,
    /// Resolved, connecting or shaking hands: no byte of the request written.
    connecting,
    /// The request's bytes were written, or started to be.
    sent,
};

struct call_result {
    callback::verdict verdict = callback::verdict::fail;
    unsigned status = 0; ///< the HTTP status, 0 when no answer came
    std::optional<std::chrono::seconds> retry_after;
    std::string error; ///< one line for the log; empty on success
    std::chrono::nanoseconds latency{0};
    /// How far the call went: `held` means the receiver was never contacted (with verdict
    /// retry: a deferral, not an attempt).
    callback::reach reach = callback::reach::held;
};

/// Counters, for the metrics and the tests.
struct client_stats {
    std::uint64_t connects = 0; ///< TCP connections attempted
    std::uint64_t reuses = 0;   ///< calls that went over a pooled connection
    std::uint64_t calls = 0;    ///< calls started
    std::uint64_t refused = 0;  ///< calls refused by the SSRF policy
};

class client {
public:
    using executor_type = boost::asio::any_io_executor;

    /// @throws std::system_error when the CA file cannot be loaded.
    client(executor_type ex, client_options options);
    /// close(): calls in flight complete with error::client_closed.
    ~client();
    client(const client&) = delete;
    client& operator=(const client&) = delete;

    executor_type get_executor() const noexcept { return ex_; }
    const client_options& options() const noexcept;
    client_stats stats() const noexcept;

    /// Makes the call `req` describes.
    ///
    /// @par Completion signature
    /// `void(boost::system::error_code ec, call_result r)`. `ec` is empty when an answer
    /// other than 3xx came (its status decides r.verdict); otherwise it says why there is
    /// none (error::address_refused, error::timeout, connection_refused, ...) and r.verdict
    /// is retry or fail as described at the top of this file. r.error is the log line.
    ///
    /// @par Per-Operation Cancellation
    /// Terminal, partial and total: the call stops where it is (closing its connection if
    /// a request may be half sent) and completes with operation_aborted, verdict retry.
    ///
    /// @par Threads
    /// Call from the client's executor (run the io_context on one thread, or use a
    /// strand); the handler runs on its own associated executor.
    template <class CompletionToken>
    auto async_call(call_request req, CompletionToken&& token) {
        return boost::asio::async_initiate<CompletionToken,
                                           void(boost::system::error_code, call_result)>(
            [this](auto handler, call_request r) {
                start(std::move(r),
                      boost::asio::any_completion_handler<void(boost::system::error_code,
                                                               call_result)>(std::move(handler)));
            },
            token, std::move(req));
    }

    /// The call async_call makes, run inside the calling coroutine: no coroutine, handler
    /// or completion of its own, which is what the dispatcher pays per task otherwise. The
    /// same results; close() and the deadline end it as they end async_call, but it has no
    /// per-operation cancellation. From a coroutine on the client's executor.
    boost::asio::awaitable<std::pair<boost::system::error_code, call_result>>
    call(call_request req);

    /// Ends every call in flight (error::client_closed) and closes the pooled
    /// connections. Calls started later complete with error::client_closed.
    void close();

    struct state; // detail

private:
    void start(
        call_request req,
        boost::asio::any_completion_handler<void(boost::system::error_code, call_result)> handler);

    executor_type ex_;
    std::shared_ptr<state> state_;
};

} // namespace timewheeld::callback

#endif
