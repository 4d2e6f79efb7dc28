//
// timewheel/redis/subscriber.hpp
//
// A pub/sub subscriber: its own connection in subscribed mode, messages delivered through
// an asynchronous receive, and every subscription sent again after a reconnect.
//

#ifndef TIMEWHEEL_REDIS_SUBSCRIBER_HPP
#define TIMEWHEEL_REDIS_SUBSCRIBER_HPP

#include <timewheel/redis/config.hpp>
#include <timewheel/redis/detail/connection_impl.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/experimental/channel.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace timewheel::redis {

/// A message received by a subscriber.
struct message {
    enum class kind_type : std::uint8_t {
        message,  ///< from SUBSCRIBE: channel and payload
        pmessage, ///< from PSUBSCRIBE: pattern, channel and payload
        smessage, ///< from SSUBSCRIBE (sharded pub/sub, Redis 7): channel and payload
    };
    kind_type kind = kind_type::message;
    std::string pattern; ///< the matching pattern (pmessage only)
    std::string channel;
    std::string payload;
};

/// Writes the name of a message kind ("message", "pmessage", "smessage").
inline std::ostream& operator<<(std::ostream& os, message::kind_type k) {
    constexpr const char* names[] = {"message", "pmessage", "smessage"};
    return os << names[static_cast<int>(k)];
}

/// Receives pub/sub messages on a connection of its own.
/**
 * @code
 * redis::subscriber sub(io.get_executor(), cfg);
 * sub.subscribe({"news", "alerts"});
 * sub.async_receive([](boost::system::error_code ec, redis::message m) { ... });
 * @endcode
 *
 * Subscriptions are remembered: after the connection is lost and re-opened, the subscriber
 * sends SUBSCRIBE, PSUBSCRIBE and SSUBSCRIBE again for every channel and pattern it holds.
 * Messages published while it was disconnected are lost (that is pub/sub). Messages wait in
 * a buffer until received; when it holds `max_buffered` messages, new ones are dropped and
 * counted in dropped().
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe. Use it on its executor only.
 */
class subscriber {
public:
    /// The type of the executor associated with the object.
    using executor_type = boost::asio::any_io_executor;

    /// The channel messages wait in.
    using channel_type =
        boost::asio::experimental::channel<void(boost::system::error_code, message)>;

    /// Constructs a subscriber; it connects at its first subscription (or run()).
    subscriber(const executor_type& ex, config cfg = {}, std::size_t max_buffered = 65536);

    /// Closes the connection; a pending receive completes with
    /// boost::asio::experimental::channel_errc::channel_closed.
    ~subscriber();

    subscriber(const subscriber&) = delete;
    subscriber& operator=(const subscriber&) = delete;

    /// The executor of the subscriber's I/O.
    const executor_type& get_executor() noexcept { return channel_.get_executor(); }

    /// Where to connect: called with a completion before every connection attempt.
    using locator = std::function<void(std::function<void(boost::system::error_code, host_port)>)>;

    /// Connects where `l` answers instead of the configured host and port, asking before
    /// every connection attempt (set it before the first subscription or run()).
    /**
     * For shard channels on a Cluster: `l` names the master that serves the channels' slot
     * (redis::cluster::async_node_config). With a locator, the subscriber also follows the
     * slot when it moves: an `sunsubscribe` from the server for a channel it still holds (the
     * slot went to another master: a failover, a reshard), or a MOVED answer to SSUBSCRIBE (the
     * locator's map was stale), drops the connection and connects again where `l` says then,
     * after the reconnection backoff; relocations() counts them. An error answered by `l`
     * fails the attempt, which is retried after the backoff. The configured credentials,
     * timeouts and backoff apply to every address `l` names. Not with config::sentinels:
     * the Sentinels are asked then, not `l`.
     */
    void set_locator(locator l);

    /// Opens the connection now.
    void run();

    /// Subscribes to channels (SUBSCRIBE).
    void subscribe(const std::vector<std::string>& channels);
    /// Subscribes to patterns (PSUBSCRIBE).
    void psubscribe(const std::vector<std::string>& patterns);
    /// Subscribes to shard channels (SSUBSCRIBE; on a Cluster, all in one slot).
    void ssubscribe(const std::vector<std::string>& channels);
    /// Unsubscribes from channels (UNSUBSCRIBE).
    void unsubscribe(const std::vector<std::string>& channels);
    /// Unsubscribes from patterns (PUNSUBSCRIBE).
    void punsubscribe(const std::vector<std::string>& patterns);
    /// Unsubscribes from shard channels (SUNSUBSCRIBE).
    void sunsubscribe(const std::vector<std::string>& channels);

    /// Receives the next message.
    /**
     * @par Completion Signature
     * @code void(boost::system::error_code ec, redis::message m) @endcode
     * `ec` is success with a message, or
     * boost::asio::experimental::channel_errc::channel_closed after close(), or
     * channel_errc::channel_cancelled when cancelled.
     *
     * @par Per-Operation Cancellation
     * As boost::asio::experimental::channel::async_receive: terminal, partial and total;
     * a cancelled receive takes no message.
     */
    template <typename ReceiveToken = boost::asio::default_completion_token_t<executor_type>>
    auto
    async_receive(ReceiveToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return channel_.async_receive(std::forward<ReceiveToken>(token));
    }

    /// Closes the connection and the channel. Subscriptions are forgotten.
    void close();

    /// True while subscribed on an established connection.
    bool is_connected() const noexcept;

    /// Counters of the connection's life (connects, disconnects...).
    const connection_stats& stats() const noexcept;

    /// Messages dropped because the buffer was full.
    std::uint64_t dropped() const noexcept;

    /// Subscription confirmations received (subscribe, psubscribe, ssubscribe replies),
    /// counting those sent again after a reconnect.
    std::uint64_t confirmations() const noexcept;

    /// Connections dropped to follow a shard channel's slot to another master (with a
    /// locator only).
    std::uint64_t relocations() const noexcept;

private:
    struct state;
    channel_type channel_;
    std::unique_ptr<state> state_;
};

} // namespace timewheel::redis

#endif // TIMEWHEEL_REDIS_SUBSCRIBER_HPP
