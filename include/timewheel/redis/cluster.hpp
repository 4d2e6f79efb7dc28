//
// timewheel/redis/cluster.hpp
//
// A client for Redis Cluster: one redis::connection per master, each command routed by the
// hash slot of its keys, the slot map learnt with CLUSTER SLOTS and kept right by following
// MOVED and ASK, TRYAGAIN and CLUSTERDOWN retried with a capped backoff, and a pipeline split
// per master with its replies put back in the caller's order.
//

#ifndef TIMEWHEEL_REDIS_CLUSTER_HPP
#define TIMEWHEEL_REDIS_CLUSTER_HPP

#include <timewheel/redis/cluster_config.hpp>
#include <timewheel/redis/config.hpp>
#include <timewheel/redis/detail/cluster_impl.hpp>
#include <timewheel/redis/key_slot.hpp>
#include <timewheel/redis/request.hpp>
#include <timewheel/redis/response.hpp>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/execution_context.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace timewheel::redis {

/// A client for a Redis Cluster.
/**
 * @code
 * redis::cluster_config cfg;
 * cfg.node.port = 7000;                       // a seed: any master or replica
 * redis::cluster cluster(io.get_executor(), cfg);
 *
 * redis::request req;
 * req.push("SET", "{user:42}:name", "Ada");   // slot of "user:42"
 * req.push("INCR", "visits");                 // another slot, maybe another master
 * req.push("GET", "{user:42}:name");
 * redis::response resp;
 * cluster.async_exec(req, resp, [&](boost::system::error_code ec, std::size_t) {
 *     // resp[0], resp[1], resp[2]: the replies, in the order of the request
 * });
 * io.run();
 * @endcode
 *
 * @par Routing
 * Each command goes to the master that serves the hash slot of its keys (see key_slot()).
 * Which arguments are keys is known for the commands a queue, a cache or a script uses: GET,
 * SET, DEL, EXISTS, EXPIRE, INCR, the hash, sorted-set, list, set and stream commands, MGET,
 * MSET, SPUBLISH, EVAL, EVALSHA and FCALL (numkeys), XREAD (STREAMS) and their kin. Commands
 * without keys (PING, TIME, INFO, PUBLISH, SCRIPT LOAD...) go to any master; so do commands
 * the table does not know, which the server then redirects with MOVED if they had keys. For
 * such a command give the key yourself with async_exec_routed(): it saves the redirection.
 *
 * A command whose keys hash to different slots is refused before anything is sent, with
 * cluster_error::cross_slot: put a hash tag in the keys (`{order:7}:items`,
 * `{order:7}:total`) so that they share a slot. The commands of one request may go to
 * different masters: each master gets its share as one pipeline, all at once, and the replies
 * are put back in the order of the request. The request is then not atomic across masters
 * (it never is in a Cluster); MULTI/EXEC belongs in one request whose keys share a slot.
 *
 * @par WAIT
 * `WAIT numreplicas timeout` (and `WAITAOF`) has no key, but it only means something on the
 * connection of the writes it waits for: it counts the replicas that acknowledged that
 * connection's writes. So a WAIT goes to the master of the command just before it in the
 * request, in the same pipeline, right after that command; when that command is redirected
 * (MOVED, ASK) or retried (TRYAGAIN, CLUSTERDOWN), the WAIT is sent again after it on the node
 * it goes to, and its first answer is dropped. Put a WAIT after each write whose replication
 * you want counted: `SET {a}x`, `WAIT 1 100`, `SET {b}y`, `WAIT 1 100` waits on the master of
 * each. A WAIT first in a request goes where the request's keyless commands go.
 *
 * @par Redirections and retries
 * The slot map is learnt at the first request (CLUSTER SLOTS from a known node, trying the
 * seeds last). @c MOVED updates that slot at once, retries the command on the new master and
 * refreshes the whole map in the background, at most once per
 * cluster_config::refresh_interval. @c ASK sends @c ASKING and the command to the node named,
 * once, without changing the map. @c TRYAGAIN and @c CLUSTERDOWN are retried after a capped
 * exponential backoff, up to cluster_config::max_retries; after that the server's error
 * reply stays in the response. A command redirected more than
 * cluster_config::max_redirections times fails the request with
 * cluster_error::too_many_redirections.
 *
 * @par Connections
 * One redis::connection per master, opened at its first command, with the settings of
 * cluster_config::node (credentials, timeouts, health check, reconnection). Errors of a
 * connection (connection_lost, request_timeout...) fail the request as they fail a
 * connection's request, and refresh the slot map in the background (as MOVED does): a master
 * that died is replaced in the map by its promoted replica once the cluster has failed over.
 *
 * @par Thread Safety
 * @e Distinct @e objects: Safe.@n
 * @e Shared @e objects: Unsafe. Use the cluster from its executor only (an io_context run by
 * one thread, or a strand), as a redis::connection.
 */
class cluster {
public:
    /// The type of the executor associated with the object.
    using executor_type = boost::asio::any_io_executor;

    /// Constructs a client that will use @p ex for its I/O. Nothing is opened until the first
    /// request (or async_refresh()).
    cluster(executor_type const& ex, cluster_config cfg)
        : impl_(std::make_shared<detail::cluster_impl>(ex, std::move(cfg))) {}

    /// Constructs a client on an execution context (an io_context).
    template <typename ExecutionContext>
    requires std::is_convertible_v<ExecutionContext&, boost::asio::execution_context&>
    cluster(ExecutionContext& context, cluster_config cfg)
        : cluster(context.get_executor(), std::move(cfg)) {}

    /// Closes every connection (as close() does).
    ~cluster() {
        if (impl_)
            impl_->close();
    }

    cluster(cluster const&) = delete;
    cluster& operator=(cluster const&) = delete;

    /// The executor of the client and of its connections.
    executor_type const& get_executor() const noexcept { return impl_->get_executor(); }

    /// The settings the client was constructed with.
    cluster_config const& get_config() const noexcept { return impl_->get_config(); }

    /// Closes every connection: requests in flight fail with error::closed, as do later ones.
    void close() { impl_->close(); }

    /// What the client has done so far: redirections followed, retries, map refreshes.
    cluster_stats const& stats() const noexcept { return impl_->stats(); }

    /// The number of masters the slot map names now (0 before the map is learnt).
    std::size_t master_count() const noexcept { return impl_->master_count(); }

    /// The number of nodes known now, seeds included: at most the seeds plus
    /// cluster_config::max_nodes.
    std::size_t node_count() const noexcept { return impl_->node_count(); }

    /// Sends the commands of @p req, each to the master of its slot, and stores their
    /// replies in @p resp in the order of the request.
    /**
     * @param req The commands. It must stay alive and unchanged until the completion.
     * @param resp Where the replies go; cleared first. It must stay alive until the
     * completion.
     * @param token The completion token. The completion signature is
     * @code void(boost::system::error_code ec, std::size_t replies) @endcode
     * ec is success when every command has its reply (a reply may be a server error, as on a
     * redis::connection); cluster_error::cross_slot when a command's keys span slots (nothing
     * was sent); cluster_error::too_many_redirections; cluster_error::no_slot_map when no
     * node could tell the slot map; or the error of a connection. @c replies is
     * `resp.size()`.
     *
     * @par Per-Operation Cancellation
     * Terminal cancellation is supported: the request completes with
     * boost::asio::error::operation_aborted. Commands already written may still be executed
     * by the servers; their replies are read and dropped.
     *
     * @par Allocation
     * Each request runs as a coroutine (one frame, allocated); a request split over several
     * masters also allocates its per-master requests and responses.
     */
    template <typename ExecToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_exec(request const& req, response& resp,
                    ExecToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<ExecToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_exec(impl_), token, &req, &resp, std::optional<std::string>());
    }

    /// Sends every command of @p req to the master that serves the slot of @p key, whatever
    /// keys the command table finds (or does not find) in them.
    /**
     * For commands the table does not know (module commands, newer commands, or keys given
     * in a way the table cannot see), so that they go to the right master without a MOVED.
     * Redirections, retries and the completion are as for async_exec(); no cross-slot check
     * is made (the server makes its own).
     */
    template <typename ExecToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_exec_routed(
        std::string_view key, request const& req, response& resp,
        ExecToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<ExecToken, void(boost::system::error_code, std::size_t)>(
            initiate_async_exec(impl_), token, &req, &resp,
            std::optional<std::string>(std::string(key)));
    }

    /// Learns the slot map now (CLUSTER SLOTS), instead of at the first request.
    /**
     * @param token The completion token, with the signature
     * @code void(boost::system::error_code ec) @endcode
     * ec is cluster_error::no_slot_map when no known node answered with a map.
     *
     * @par Per-Operation Cancellation
     * Terminal cancellation is supported (operation_aborted).
     */
    template <typename RefreshToken = boost::asio::default_completion_token_t<executor_type>>
    auto
    async_refresh(RefreshToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<RefreshToken, void(boost::system::error_code)>(
            initiate_async_refresh(impl_), token);
    }

    /// Where to connect, answered to a completion: a redis::subscriber::locator.
    using locator = std::function<void(std::function<void(boost::system::error_code, host_port)>)>;

    /// A locator for a subscriber of the shard channel @p channel (redis::subscriber::
    /// set_locator): each time it is asked, the slot map is learnt again (the last
    /// connection may have been lost with a master that died; a failed refresh keeps the
    /// last map), then the master of the channel's slot is answered. It holds the client
    /// weakly: asked after the client is gone, it answers error::closed.
    locator shard_locator(std::string_view channel) const;

    /// The settings of a connection to the master that serves the slot of @p key: what a
    /// redis::subscriber needs to `SSUBSCRIBE` to a shard channel named @p key.
    /**
     * Learns the slot map first if needed. The channel's slot can move later (a reshard);
     * the server then ends the shard subscription with an SUNSUBSCRIBE message, and the
     * subscriber should ask again and subscribe on the new master.
     *
     * @param key The shard channel (or any key): its hash slot picks the master.
     * @param token The completion token, with the signature
     * @code void(boost::system::error_code ec, redis::config node) @endcode
     *
     * @par Per-Operation Cancellation
     * Terminal cancellation is supported (operation_aborted).
     */
    template <typename ConfigToken = boost::asio::default_completion_token_t<executor_type>>
    auto async_node_config(
        std::string_view key,
        ConfigToken&& token = boost::asio::default_completion_token_t<executor_type>()) {
        return boost::asio::async_initiate<ConfigToken, void(boost::system::error_code, config)>(
            initiate_async_node_config(impl_), token, key_slot(key));
    }

private:
    struct initiation_base {
        using executor_type = cluster::executor_type;
        explicit initiation_base(std::shared_ptr<detail::cluster_impl> const& impl)
            : impl_(impl) {}
        executor_type const& get_executor() const noexcept { return impl_->get_executor(); }
        std::shared_ptr<detail::cluster_impl> impl_;
    };

    struct initiate_async_exec : initiation_base {
        using initiation_base::initiation_base;
        template <typename Handler>
        void operator()(Handler&& handler, request const* req, response* resp,
                        std::optional<std::string> key) const {
            boost::asio::co_spawn(
                impl_->get_executor(), detail::cluster_impl::exec(impl_, req, resp, std::move(key)),
                detail::cluster_completion<std::decay_t<Handler>>(std::forward<Handler>(handler)));
        }
    };

    struct initiate_async_refresh : initiation_base {
        using initiation_base::initiation_base;
        template <typename Handler>
        void operator()(Handler&& handler) const {
            boost::asio::co_spawn(
                impl_->get_executor(), detail::cluster_impl::refresh_op(impl_),
                detail::cluster_completion<std::decay_t<Handler>>(std::forward<Handler>(handler)));
        }
    };

    struct initiate_async_node_config : initiation_base {
        using initiation_base::initiation_base;
        template <typename Handler>
        void operator()(Handler&& handler, std::uint16_t slot) const {
            boost::asio::co_spawn(
                impl_->get_executor(), detail::cluster_impl::node_config_op(impl_, slot),
                detail::cluster_completion<std::decay_t<Handler>>(std::forward<Handler>(handler)));
        }
    };

    std::shared_ptr<detail::cluster_impl> impl_;
};

} // namespace timewheel::redis

#endif // TIMEWHEEL_REDIS_CLUSTER_HPP
