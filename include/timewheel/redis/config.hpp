//
// timewheel/redis/config.hpp
//
// Where a redis::connection connects and how it behaves: address (TCP or unix socket, or the
// master Sentinel names), credentials, database, client name, timeouts, health check and
// reconnection backoff. Where is asked again on every connect (a host name is resolved, the
// Sentinels asked), so that a failover, by DNS or by Sentinel, is followed on reconnection.
//

#ifndef TIMEWHEEL_REDIS_CONFIG_HPP
#define TIMEWHEEL_REDIS_CONFIG_HPP

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace timewheel::redis {

/// A TCP address: a host name or an IP address literal, and a port.
struct host_port {
    std::string host;
    std::uint16_t port = 0;
};

/// The settings of a redis::connection (and of a redis::subscriber).
/**
 * Defaults connect to 127.0.0.1:6379, database 0, without credentials, reconnecting with
 * a backoff from 50 ms up to 2 s, a health-check PING after 5 s of silence, and no request
 * timeout.
 */
struct config {
    /// The server's host: an IP address literal ("127.0.0.1", "::1") or a name, resolved
    /// again on every connection attempt (within connect_timeout), so that a name moved to
    /// another address (a managed Redis failing over by DNS) is followed on reconnection.
    std::string host = "127.0.0.1";

    /// The server's TCP port.
    std::uint16_t port = 6379;

    /// When not empty, connect to this unix-domain socket instead of host and port.
    std::string unix_socket;

    /// When not empty, host and port are ignored: before each connection attempt these
    /// Sentinels are asked in turn `SENTINEL get-master-addr-by-name master_name`, and the
    /// connection goes to the first answer. A Sentinel that does not answer within
    /// connect_timeout, or answers anything but an address, is skipped. The order is the
    /// listed one at first, then learned (as redis-py and Jedis do): the Sentinel that gave
    /// the last address is asked first next time, and one that failed goes after the others,
    /// so that a dead Sentinel costs each reconnection nothing once it is known. The learned
    /// order is shared by every connection of the process given the same list (the same
    /// hosts and ports in the same order), from any thread. After the
    /// handshake the server must say it is a master (ROLE), or the attempt fails (an old master
    /// back as a replica is not used) and the Sentinels are asked again after the backoff.
    std::vector<host_port> sentinels;

    /// The name of the master the Sentinels monitor (required with sentinels).
    std::string master_name;

    /// ACL user name for AUTH to the Sentinels (empty: AUTH with sentinel_password alone).
    std::string sentinel_username;

    /// Password for AUTH to the Sentinels; when empty (and sentinel_username empty) none.
    std::string sentinel_password;

    /// ACL user name for AUTH; empty means AUTH with the password alone (requirepass).
    std::string username;

    /// Password for AUTH; when empty (and username empty) no AUTH is sent.
    std::string password;

    /// The database selected with SELECT after connecting (not sent when 0).
    int database = 0;

    /// The name given with CLIENT SETNAME after connecting (not sent when empty).
    std::string client_name;

    /// How long connecting (TCP or unix connect plus the AUTH/SELECT/SETNAME handshake) may
    /// take before the attempt fails with error::connect_timeout.
    std::chrono::milliseconds connect_timeout{5000};

    /// How long a request may wait for its replies, counted from async_exec, before it
    /// completes with error::request_timeout. Zero means no timeout. A request that was
    /// already written when it timed out closes the connection (the other requests written
    /// fail with error::connection_lost, those not written go out on the next connection):
    /// a server that skipped its reply must not shift the later replies onto the wrong
    /// requests. Set it well above the slowest command.
    std::chrono::milliseconds request_timeout{0};

    /// When nothing has been received for this long, a PING is sent; when nothing arrives in
    /// the same time again the connection is declared dead, closed and re-opened. Zero turns
    /// the health check off.
    std::chrono::milliseconds health_check_interval{5000};

    /// Re-open the connection when it is lost. When false, a lost connection fails every
    /// request, queued and future, with error::closed.
    bool reconnect = true;

    /// The first reconnection delay; each failed attempt doubles it up to
    /// reconnect_max_delay. Each delay is drawn uniformly from [d/2, d] (jitter).
    std::chrono::milliseconds reconnect_min_delay{50};

    /// The cap of the reconnection delay.
    std::chrono::milliseconds reconnect_max_delay{2000};

    /// The size of each read from the socket. The buffer is allocated once.
    std::size_t read_buffer_size = 64 * 1024;

    /// The largest reply the connection takes: its strings, 32 bytes per element, and a
    /// bulk string or array still arriving. A server that sends more is broken or hostile:
    /// the connection fails (last_error() error::protocol_error; the requests written fail
    /// as when the connection is lost, and it reconnects) instead of holding whatever it
    /// sends. Redis's own proto-max-bulk-len is 512 MB.
    std::size_t max_reply_bytes = 512 * 1024 * 1024;
};

} // namespace timewheel::redis

#endif // TIMEWHEEL_REDIS_CONFIG_HPP
