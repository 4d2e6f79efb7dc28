//
// timewheel/redis/detail/connection_impl.hpp
//
// The state of one Redis connection, shared by connection (or subscriber) and by the
// handlers of its socket and timers, which hold it alive. One write in flight at a time:
// requests issued meanwhile wait in `pending_` and go out together in the next write, copied
// into one reused buffer. Written requests wait in a ring, in order, for their replies;
// hiredis's reader parses what the socket gives into the response of the request at the head
// of the ring (or drops it, for a request cancelled after it was written). Everything runs
// on the connection's executor; nothing here is thread-safe. Each connection attempt first
// finds its server: the Sentinels asked in turn (each through a short-lived connection of
// its own, bounded by connect_timeout and a small max_reply_bytes), then a host name resolved.
//

#ifndef TIMEWHEEL_REDIS_DETAIL_CONNECTION_IMPL_HPP
#define TIMEWHEEL_REDIS_DETAIL_CONNECTION_IMPL_HPP

#include <timewheel/redis/config.hpp>
#include <timewheel/redis/detail/handler_memory.hpp>
#include <timewheel/redis/detail/op_base.hpp>
#include <timewheel/redis/detail/reply_reader.hpp>
#include <timewheel/wheel_timer.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/cancellation_type.hpp>
#include <boost/asio/generic/stream_protocol.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/intrusive/list.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace timewheel::redis {

class connection;

/// Counters of a connection's life, for tests, metrics and benchmarks.
struct connection_stats {
    std::uint64_t connects = 0;         ///< successful connections (handshake included)
    std::uint64_t connect_failures = 0; ///< failed attempts (connect, timeout, handshake)
    std::uint64_t disconnects = 0;      ///< established connections lost
    std::uint64_t writes = 0;           ///< socket writes (each carries one or more requests)
    std::uint64_t requests_written = 0; ///< requests written (a NOSCRIPT resend counts again)
    std::uint64_t noscript_retries = 0; ///< EVALSHA commands resent as EVAL
    std::uint64_t function_loads = 0;   ///< FUNCTION LOAD commands sent ahead of FCALLs
    std::uint64_t function_retries = 0; ///< FCALLs resent after "Function not found"
    std::uint64_t health_pings = 0;     ///< PINGs sent by the health check
    std::uint64_t resolves = 0;         ///< host names resolved (one per attempt to a name)
    std::uint64_t sentinel_queries = 0; ///< Sentinels asked for the master's address
    /// Connections closed under a written request that timed out.
    std::uint64_t timeout_disconnects = 0;
};

namespace detail {

/// SENTINEL get-master-addr-by-name's answer: [host, port], the host 1..255 bytes and the
/// port a decimal in 1..65535; nothing when the reply is anything else (nil: the master is
/// unknown). Defined in connection.cpp.
std::optional<host_port> parse_master_address(const reply& r);

/// The order in which the Sentinels of a list are asked: the one that gave the last address
/// first, one that failed after the others. Shared by every connection of the process
/// given the same list (for_list), from any thread: a dead Sentinel, once found, is asked
/// last by them all, so it costs one connect timeout and not one a connection.
class sentinel_order {
public:
    explicit sentinel_order(std::vector<host_port> sentinels)
        : order_(std::move(sentinels)) {}

    /// The order shared by the connections given @p sentinels (the same hosts and ports, in
    /// the same order); made on the first call for that list, kept while a connection holds it.
    static std::shared_ptr<sentinel_order> for_list(const std::vector<host_port>& sentinels);

    /// The order now, for an attempt to walk.
    std::vector<host_port> snapshot() const;

    /// @p s answered with an address: it goes first.
    void answered(const host_port& s);

    /// @p s did not answer with an address: it goes after the others.
    void failed(const host_port& s);

private:
    std::vector<host_port>::iterator find(const host_port& s); // under mutex_

    mutable std::mutex mutex_;
    std::vector<host_port> order_;
};

class connection_impl : public std::enable_shared_from_this<connection_impl> {
public:
    using executor_type = boost::asio::any_io_executor;

    /// What a subscriber needs from the connection: replies that answer no request, and a
    /// call each time the connection (re-)opens, to subscribe again.
    struct push_handler {
        virtual void on_push(const response& r) = 0;
        virtual void on_ready() = 0;

    protected:
        ~push_handler() = default;
    };

    connection_impl(const executor_type& ex, config cfg);
    ~connection_impl();
    connection_impl(const connection_impl&) = delete;
    connection_impl& operator=(const connection_impl&) = delete;

    const executor_type& get_executor() const noexcept { return ex_; }
    const config& get_config() const noexcept { return cfg_; }
    const connection_stats& stats() const noexcept { return stats_; }
    bool is_connected() const noexcept { return state_ == conn_state::ready; }
    bool is_closed() const noexcept { return state_ == conn_state::closed; }
    boost::system::error_code last_error() const noexcept { return last_error_; }

    /// Queues a request (called on the executor, from async_exec's initiation).
    void start(op_base& op);

    /// Queues a request of the connection itself (no deadline, completes through its fn).
    void start_internal(op_base& op);

    /// Cancels a request: removed if not yet written, dropped when its replies come if it was.
    void cancel(op_base& op, boost::asio::cancellation_type type);

    /// Closes the socket and fails every request with error::closed; no reconnection.
    void close();

    /// Opens the connection now rather than at the first request.
    void run();

    /// Replies that answer no request go to `h` (subscriber mode); null: dropped.
    void set_push_handler(push_handler* h) noexcept { push_handler_ = h; }

    /// Where to connect, asked before every connection attempt instead of the configured
    /// host and port (a shard subscriber asks its Cluster for the master of its channel's
    /// slot). The answer may come later; an error fails the attempt (then the backoff).
    using locate_done = std::function<void(boost::system::error_code, host_port)>;
    using locator = std::function<void(locate_done)>;
    void set_locator(locator l) { locator_ = std::move(l); }

    /// Drops an established connection as if it were lost (`why` becomes last_error()) and
    /// reconnects after the backoff, asking the locator again; nothing otherwise.
    void drop(boost::system::error_code why);

private:
    enum class conn_state : std::uint8_t { idle, connecting, handshaking, ready, backoff, closed };

    struct record {
        op_base* op;           // null when the request was cancelled or timed out
        std::size_t remaining; // replies still to come
    };

    void connect();
    void connect_to(const std::string& host, std::uint16_t port, std::uint64_t gen);
    void ask_sentinel(std::uint64_t gen);
    void on_sentinel_answer(boost::system::error_code ec, std::uint64_t gen);
    void on_located(boost::system::error_code ec, const host_port& where, std::uint64_t gen);
    void on_connected(boost::system::error_code ec, std::uint64_t gen);
    void start_read();
    void on_read(boost::system::error_code ec, std::size_t n, std::uint64_t gen);
    void start_write();
    void on_written(boost::system::error_code ec, std::uint64_t gen);
    void fail(boost::system::error_code why, bool established);
    void schedule_reconnect();
    void on_reply();
    void finish_op(op_base& op);
    void complete_handshake();
    void arm_timeout(std::chrono::steady_clock::time_point deadline);
    void on_timeout(boost::system::error_code ec);
    void arm_health();
    void on_health(boost::system::error_code ec, std::uint64_t gen);
    void fail_everything(boost::system::error_code why, bool post);
    void reset_reader();
    response* sink_for_next_reply();
    static response* next_sink(void* self); // reply_reader's sink_fn

    // The awaiting ring: records of written requests, oldest first.
    record& ring_at(std::size_t i) noexcept { return ring_[(ring_head_ + i) & (ring_.size() - 1)]; }
    void ring_push(op_base* op, std::size_t replies);
    void ring_pop() noexcept;
    // Writes FUNCTION LOAD of each library that `op` calls and this connection has not loaded.
    void load_libraries(const op_base& op);
    // An FCALL of `op` was answered "Function not found": the library is gone since its load,
    // unless that load was written after `op` (then the resend finds it).
    void forget_library(const redis::library* lib, std::uint64_t seq);

    executor_type ex_;
    config cfg_;
    boost::asio::generic::stream_protocol::endpoint endpoint_;
    bool tcp_ = true;
    boost::asio::generic::stream_protocol::socket socket_;
    boost::asio::steady_timer connect_timer_;
    boost::asio::ip::tcp::resolver resolver_;
    wheel_timer timeout_timer_;
    wheel_timer health_timer_;
    reply_reader reader_;
    std::unique_ptr<char[]> read_buffer_;
    std::string write_buffer_;
    handler_memory read_memory_;  // the socket read's operation
    handler_memory write_memory_; // the socket write's operation
    handler_memory flush_memory_; // the deferred flush's
    boost::intrusive::list<op_base> pending_;
    std::vector<record> ring_;
    std::size_t ring_head_ = 0;
    std::size_t ring_size_ = 0;
    std::uint64_t ring_head_seq_ = 0;
    // The libraries loaded on this connection, each with the ring position of its FUNCTION
    // LOAD; emptied at every connect.
    std::vector<std::pair<const redis::library*, std::uint64_t>> libraries_;
    std::uint64_t gen_ = 0; // bumped when the socket is closed: stale handlers return
    conn_state state_ = conn_state::idle;
    bool writing_ = false;
    bool corked_ = false;       // replies are being completed: their handlers' requests wait
    bool flush_posted_ = false; // a write of the requests issued meanwhile is on its way
    bool timeout_armed_ = false;
    bool health_armed_ = false;
    bool ping_outstanding_ = false;
    std::chrono::steady_clock::time_point timeout_expiry_{};
    std::chrono::steady_clock::time_point last_activity_{};
    unsigned backoff_attempt_ = 0;
    std::minstd_rand jitter_;
    boost::system::error_code last_error_;
    connection_stats stats_;
    push_handler* push_handler_ = nullptr;
    locator locator_;
    // The Sentinel being asked, its request and answer, and the next one to ask. The order of
    // preference (the last to answer first, the failed last) is shared by the connections
    // given the same Sentinels; each attempt walks a copy of it taken at its start, which
    // the answers then reorder.
    std::unique_ptr<connection> sentinel_conn_;
    request sentinel_req_;
    response sentinel_resp_;
    std::shared_ptr<sentinel_order> sentinel_order_;
    std::vector<host_port> sentinel_round_;
    std::size_t sentinel_next_ = 0;
    std::size_t role_reply_ = 0; // the ROLE reply's index in the handshake (Sentinel mode)
    response push_response_;     // a reply that answers no request, while it is parsed

    // The connection's own requests.
    struct internal_op : op_base {
        explicit internal_op(complete_fn fn) noexcept
            : op_base(fn) {}
        connection_impl* self = nullptr;
        request req;
        response resp;
    };
    internal_op handshake_op_;
    internal_op ping_op_;
};

} // namespace detail
} // namespace timewheel::redis

#endif // TIMEWHEEL_REDIS_DETAIL_CONNECTION_IMPL_HPP
