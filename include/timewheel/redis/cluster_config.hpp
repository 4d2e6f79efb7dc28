//
// timewheel/redis/cluster_config.hpp
//
// The settings of a redis::cluster (seeds, the connection settings of every master, limits of
// redirections and retries), its statistics, and its own errors (cross-slot commands,
// redirection loops, no slot map).
//

#ifndef TIMEWHEEL_REDIS_CLUSTER_CONFIG_HPP
#define TIMEWHEEL_REDIS_CLUSTER_CONFIG_HPP

#include <timewheel/redis/config.hpp>

#include <boost/system/error_code.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace timewheel::redis {

/// The settings of a redis::cluster.
struct cluster_config {
    /// The settings of every connection to a master: credentials, timeouts, health check,
    /// reconnection. Its host and port are the first seed (unix_socket is not used).
    config node;

    /// More seeds, as (host, port), asked for the slot map when the nodes already
    /// known cannot answer.
    std::vector<std::pair<std::string, std::uint16_t>> seeds;

    /// How many times one command may be redirected (MOVED or ASK) before the request fails
    /// with cluster_error::too_many_redirections.
    std::size_t max_redirections = 16;

    /// How many times one command answered TRYAGAIN or CLUSTERDOWN is sent again; after
    /// that the server's error reply stays in the response.
    std::size_t max_retries = 8;

    /// The first delay before a retry; it doubles with each retry of the same request, up to
    /// retry_max_delay.
    std::chrono::milliseconds retry_min_delay{20};

    /// The cap of the retry delay.
    std::chrono::milliseconds retry_max_delay{1000};

    /// The shortest time between two background refreshes of the whole slot map after MOVED.
    std::chrono::milliseconds refresh_interval{500};

    /// The most nodes known at once besides the seeds, each with its connection: the masters
    /// of the slot map and the nodes MOVED and ASK named since. A MOVED or ASK to a node
    /// beyond it fails its request with cluster_error::too_many_nodes, and a slot map naming
    /// more masters is refused, so that a node answering with ever-new addresses cannot
    /// grow the client. A node that serves no slot after a refresh is forgotten (its
    /// connection closed once its requests are done; the seeds are always kept). The
    /// default is the most masters a slot map can name, one a slot; the total (seeds
    /// included) is capped at 65535.
    std::size_t max_nodes = 16384;
};

/// What a redis::cluster has done, for monitoring and tests.
struct cluster_stats {
    std::uint64_t moved = 0;     ///< MOVED redirections followed
    std::uint64_t ask = 0;       ///< ASK redirections followed
    std::uint64_t retries = 0;   ///< commands sent again after TRYAGAIN or CLUSTERDOWN
    std::uint64_t refreshes = 0; ///< slot maps learnt (CLUSTER SLOTS answered)
    std::uint64_t split = 0;     ///< requests whose commands went to more than one master
    std::uint64_t forgotten = 0; ///< nodes forgotten after a refresh (they served no slot)
};

/// The errors of a redis::cluster, in redis::cluster_category().
enum class cluster_error {
    /// The keys of a command hash to different slots; nothing was sent. Use a hash tag
    /// (`{tag}rest`) so that the keys share a slot.
    cross_slot = 1,

    /// A command was redirected more than cluster_config::max_redirections times.
    too_many_redirections,

    /// No known node (the masters of the last map, then the seeds) answered CLUSTER SLOTS
    /// with a usable map.
    no_slot_map,

    /// A MOVED or ASK named a new node, or a slot map more masters, than
    /// cluster_config::max_nodes allows.
    too_many_nodes,
};

/// The category of cluster_error values; its name is "timewheel.redis.cluster".
boost::system::error_category const& cluster_category() noexcept;

/// Makes an error_code from a cluster_error (found by argument-dependent lookup).
inline boost::system::error_code make_error_code(cluster_error e) noexcept {
    return {static_cast<int>(e), cluster_category()};
}

} // namespace timewheel::redis

/// @cond
template <>
struct boost::system::is_error_code_enum<timewheel::redis::cluster_error> : std::true_type {};
/// @endcond

#endif // TIMEWHEEL_REDIS_CLUSTER_CONFIG_HPP
